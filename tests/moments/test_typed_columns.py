"""Tables as pandas writes them: an index column, text and categorical columns, --exclude (moments/columns.py)."""

import numpy as np
import pytest

from dpmoments.data import open_table

pd = pytest.importorskip("pandas")


def _frame(n=50):
    g = np.random.default_rng(0)
    return pd.DataFrame({"invest": g.normal(size=n), "firm": ["GM", "IBM"] * (n // 2),
                         "value": g.normal(size=n), "year": np.arange(n) + 1935.0,
                         "species": pd.Categorical(["a", "b"] * (n // 2))})


def test_a_csv_with_its_index_and_text_columns_runs_with_no_columns(tmp_path):
    df = _frame()
    df.to_csv(tmp_path / "f.csv")  # pandas writes its index as an unnamed first column
    table = open_table(tmp_path / "f.csv")
    assert table.feature_names == ["invest", "value", "year"]
    assert any("unnamed first column is a pandas index" in note for note in table.notes)
    assert any("left out text/categorical column(s) firm, species" in note for note in table.notes)
    X = np.concatenate(list(table.chunks(17)))
    np.testing.assert_allclose(X, df[["invest", "value", "year"]].to_numpy())


def test_a_parquet_with_its_index_and_a_dictionary_column(tmp_path):
    pytest.importorskip("pyarrow")
    df = _frame().set_index(pd.Index([f"p{i}" for i in range(50)], name="patient"))
    df.to_parquet(tmp_path / "f.parquet")
    table = open_table(tmp_path / "f.parquet", exclude=["year"])
    assert table.feature_names == ["invest", "value"]
    assert any("pandas index (patient)" in note for note in table.notes)
    assert any("firm, species" in note for note in table.notes)


def test_exclude_and_its_refusals(tmp_path):
    _frame().to_csv(tmp_path / "f.csv", index=False)
    assert open_table(tmp_path / "f.csv", exclude=[3], target="invest").feature_names == ["value"]
    with pytest.raises(ValueError, match="'columns' or 'exclude', not both"):
        open_table(tmp_path / "f.csv", columns=["invest"], exclude=["value"])
    with pytest.raises(ValueError, match="'exclude' names the target 'invest'"):
        open_table(tmp_path / "f.csv", target="invest", exclude=["invest"])
    with pytest.raises(ValueError, match="has no column named 'nope'"):
        open_table(tmp_path / "f.csv", exclude=["nope"])
    with pytest.raises(ValueError, match="No numeric feature columns are left"):
        open_table(tmp_path / "f.csv", exclude=["invest", "value", "year"])


def test_a_named_text_column_is_still_refused_naming_line_and_column(tmp_path):
    _frame().to_csv(tmp_path / "f.csv", index=False)
    table = open_table(tmp_path / "f.csv", columns=["invest", "firm"])
    with pytest.raises(ValueError, match="the value in column 'firm' at line 2 is not a number"):
        list(table.chunks(10))


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_declared_categories_are_one_hot_encoded(tmp_path, fmt):
    df = _frame(n=6)
    df.loc[5, "firm"] = "Ford"  # not a declared level: all its indicators are 0
    path = tmp_path / f"f.{fmt}"
    df.to_csv(path, index=False) if fmt == "csv" else df.to_parquet(path, index=False)
    table = open_table(path, categories={"firm": ["GM", "IBM"], "species": ["b", "a"]})
    assert table.feature_names == ["invest", "firm=GM", "firm=IBM", "value", "year", "species=b", "species=a"]
    X = np.concatenate(list(table.chunks(4)))
    np.testing.assert_array_equal(X[:, 1:3], [[1, 0], [0, 1], [1, 0], [0, 1], [1, 0], [0, 0]])
    np.testing.assert_array_equal(X[:, 5:7], [[0, 1], [1, 0]] * 3)
    np.testing.assert_allclose(X[:, [0, 3, 4]], df[["invest", "value", "year"]].to_numpy())


def test_one_hot_sensitivity_a_row_changes_at_most_two_indicators(tmp_path):
    """Replacing any one row by any other changes at most two indicator entries, each by 1."""
    levels = ["a", "b", "c"]
    values = ["a", "b", "c", "zzz"]  # the last one is no declared level
    rows = {}
    for v in values:
        path = tmp_path / f"{v}.csv"
        pd.DataFrame({"x": [1.0, 2.0], "g": ["a", v]}).to_csv(path, index=False)
        rows[v] = np.concatenate(list(open_table(path, categories={"g": levels}).chunks(10)))
    for u in values:
        for v in values:
            diff = np.abs(rows[u] - rows[v])
            assert diff[0].sum() == 0 and diff[1].sum() <= 2 and diff.max() <= 1
            assert np.linalg.norm(rows[u][1, 1:]) <= 1  # at most one 1 per row


def test_categories_refusals(tmp_path):
    _frame().to_csv(tmp_path / "f.csv", index=False)
    with pytest.raises(ValueError, match="distinct, non-empty levels"):
        open_table(tmp_path / "f.csv", categories={"firm": ["GM", "GM"]})
    with pytest.raises(ValueError, match="has no column named 'nope'"):
        open_table(tmp_path / "f.csv", categories={"nope": ["a"]})
    with pytest.raises(ValueError, match="cannot be a categorical column"):
        open_table(tmp_path / "f.csv", target="firm", categories={"firm": ["GM"]})
    np.save(tmp_path / "x.npy", np.ones((3, 2)))
    with pytest.raises(ValueError, match="apply to CSV and Parquet files"):
        open_table(tmp_path / "x.npy", categories={0: ["a"]})


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_impute_a_public_value_with_an_indicator(tmp_path, fmt):
    df = pd.DataFrame({"a": [1.0, np.nan, 3.0, 4.0], "b": [np.nan, 2.0, 2.0, np.nan], "c": [1.0, 2.0, 3.0, 4.0]})
    path = tmp_path / f"m.{fmt}"
    df.to_csv(path, index=False) if fmt == "csv" else df.to_parquet(path, index=False)
    with pytest.raises(ValueError, match="missing or non-finite value in column 'b' at"):
        list(open_table(path).chunks(2))  # refused by default
    table = open_table(path, impute={"a": 0, "b": -1}, target="c")
    assert table.feature_names == ["a", "a:missing", "b", "b:missing"]
    X, y = (np.concatenate(parts) for parts in zip(*table.chunks(3)))
    np.testing.assert_array_equal(X, [[1, 0, -1, 1], [0, 1, 2, 0], [3, 0, 2, 0], [4, 0, -1, 1]])
    np.testing.assert_array_equal(y, [1, 2, 3, 4])
    with pytest.raises(ValueError, match="must be a finite number"):
        open_table(path, impute={"a": np.nan})
    with pytest.raises(ValueError, match="not a selected feature"):
        open_table(path, impute={"c": 0}, target="c")


def _typed_files(tmp_path, fmt):
    """A hive Parquet directory (text column, partition column, missing values), a CSV glob or a ``.npy`` file."""
    rng = np.random.default_rng(8)
    if fmt == "npy":
        A = rng.normal(size=(30, 3))
        A[[2, 17], 1] = np.nan
        np.save(tmp_path / "a.npy", A)
        return str(tmp_path / "a.npy"), {"impute": {"x1": 5}}
    for k, region in enumerate(["north", "south", "east"]):
        income = rng.normal(size=12)
        income[[k, 7]] = np.nan
        frame = {"a": rng.normal(size=12), "income": income, "firm": rng.choice(["GM", "IBM", "other"], 12)}
        if fmt == "csv":
            import pandas as pd

            pd.DataFrame(frame).to_csv(tmp_path / f"f{k}.csv", index=False)
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            (tmp_path / f"region={region}").mkdir()
            pq.write_table(pa.table(frame), tmp_path / f"region={region}" / "p.parquet", row_group_size=5)
    declared = {"categories": {"firm": ["GM", "IBM"]}, "impute": {"income": 0}}
    if fmt == "csv":
        return str(tmp_path / "*.csv"), declared
    return str(tmp_path), {**declared, "categories": {"firm": ["GM", "IBM"], "region": ["north", "south"]}}


@pytest.mark.parametrize("fmt", ["parquet", "csv", "npy"])
def test_the_dask_reader_encodes_and_imputes_each_block_as_the_local_reader(tmp_path, fmt):
    """``--scheduler``'s reader: the same columns, rows and 0:1 indicator ranges as :func:`open_table` (Parquet
    read in blocks of a few row groups, a hive partition column one-hot encoded from its directory's value)."""
    dask = pytest.importorskip("dask")
    pytest.importorskip("pyarrow")
    from dpmoments.data.dask_tables import open_dask_table

    source, declared = _typed_files(tmp_path, fmt)
    table = open_table(source, target="a" if fmt == "parquet" else None, **declared)
    with dask.config.set(scheduler="synchronous"):
        lake = open_dask_table(source, target=table.target_name, piece_bytes=200, **declared)
        X = lake.X.compute()
        y = None if lake.y is None else lake.y.compute()
    local = list(table.chunks())
    assert lake.feature_names == table.feature_names and lake.indicator_ranges == table.indicator_ranges
    if y is None:
        np.testing.assert_array_equal(X, np.vstack(local))
    else:
        np.testing.assert_array_equal(X, np.vstack([c[0] for c in local]))
        np.testing.assert_array_equal(y, np.concatenate([c[1] for c in local]))
    assert lake.n_blocks > (1 if fmt != "npy" else 0)


def test_a_csv_bool_column_is_read_as_one_and_zero_as_parquet_reads_it(tmp_path):
    """True/False (any case, spaces trimmed as a number's) is 1/0 on one machine, in chunks and through the dask reader, as the same table's
    Parquet bool column; a value that is neither (nor missing) is refused naming the line, never the value."""
    dask = pytest.importorskip("dask")
    pytest.importorskip("pyarrow")
    from dpmoments.data.dask_tables import open_dask_table

    df = pd.DataFrame({"x": np.arange(40) / 7, "flag": (np.arange(40) % 3 == 0)})
    df.to_csv(tmp_path / "f.csv", index=False)
    df.to_parquet(tmp_path / "f.parquet")
    text = (tmp_path / "f.csv").read_text().replace("True\n", "TRUE\n", 2).replace("False\n", "false\n", 3).replace(",False\n", ", False \n", 1)
    (tmp_path / "g.csv").write_text(text)
    expected = df.to_numpy(dtype=float)
    for name in ("f.csv", "g.csv", "f.parquet"):
        table = open_table(tmp_path / name)
        assert table.feature_names == ["x", "flag"], name
        np.testing.assert_array_equal(np.vstack(list(table.chunks(7))), expected)
    with dask.config.set(scheduler="synchronous"):
        np.testing.assert_array_equal(open_dask_table(str(tmp_path / "g.csv")).X.compute(), expected)
    (tmp_path / "h.csv").write_text(text.replace("false\n", "yes\n", 1))  # its first value is still TRUE
    with pytest.raises(ValueError, match=r"column 'flag' at line \d+ is not True or False"):
        list(open_table(tmp_path / "h.csv").chunks(7))
