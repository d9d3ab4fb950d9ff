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
