"""One reader, files as users have them: delimiters, headers, compression, sparse archives, and the
messages hostile files get (they name the file, line and column, never a value)."""

import bz2
import gzip
import os

import numpy as np
import pytest
from scipy import sparse

from dpmoments.data import iter_chunks
from dpmoments.data.tables import open_table

X = np.random.default_rng(3).normal(size=(53, 3)).round(6)
SECRET = "JANE-DOE-4711"


def _text(rows, sep=",", header="a,b,c"):
    body = "\n".join(sep.join(repr(float(v)) for v in r) for r in rows)
    return (header.replace(",", sep) + "\n" if header else "") + body + "\n"


def _all(path, **kw):
    return np.concatenate(list(iter_chunks(path, chunk_size=10, **kw)))


@pytest.mark.parametrize("name, writer", [
    ("d.csv", lambda p: p.write_text(_text(X))),
    ("d.tsv", lambda p: p.write_text(_text(X, "\t"))),
    ("d.csv.gz", lambda p: p.write_bytes(gzip.compress(_text(X).encode()))),
    ("d.tsv.bz2", lambda p: p.write_bytes(bz2.compress(_text(X, "\t").encode()))),
    ("d.CSV", lambda p: p.write_text(_text(X))),
    ("bom-crlf.csv", lambda p: p.write_bytes(b"\xef\xbb\xbf" + _text(X).replace("\n", "\r\n").encode())),
    ("quoted.csv", lambda p: p.write_text('"a","b","c"\n' + "\n".join(",".join(f'"{float(v)!r}"' for v in r) for r in X))),
])
def test_text_files_as_users_have_them(tmp_path, name, writer):
    path = tmp_path / name
    writer(path)
    table = open_table(path)
    assert table.names == ["a", "b", "c"] and table.n_rows is None
    np.testing.assert_array_equal(_all(path), X)


def test_delimiter_and_no_header(tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text(_text(X, ";"))
    np.testing.assert_array_equal(_all(path, delimiter=";"), X)
    bare = tmp_path / "bare.csv"
    bare.write_text(_text(X, header=None))
    table = open_table(bare, header=False, columns=["x2", 0])
    assert table.names == ["x0", "x1", "x2"] and table.feature_names == ["x2", "x0"]
    np.testing.assert_array_equal(np.concatenate(list(table.chunks(7))), X[:, [2, 0]])
    # the first record is data: it is counted
    assert sum(c.shape[0] for c in iter_chunks(bare, header=False)) == X.shape[0]


def test_a_header_of_numbers_in_equal_steps_is_a_header(tmp_path):
    """pandas names a frame made from an array 0, 1, 2 (its index unnamed); years count too: names, not a row."""
    frame = tmp_path / "frame.csv"
    rows = [f"{i}," + ",".join(repr(float(v)) for v in r) for i, r in enumerate(X)]
    frame.write_text("\n".join([",0,1,2", *rows]) + "\n")
    table = open_table(frame)
    assert table.feature_names == ["0", "1", "2"] and any("one by one" in n for n in table.notes)
    np.testing.assert_array_equal(np.concatenate(list(table.chunks(7))), X)  # no row lost, none added
    years = tmp_path / "years.csv"
    years.write_text("country,1960,1961,1962\nAruba,1.5,2.5,3.5\n")
    table = open_table(years, target=1961)  # --target 1961: no such position, a column of that name
    assert table.feature_names == ["1960", "1962"]
    shifted = tmp_path / "shifted.csv"  # an id column before pandas' names: a number typed is the name shown
    shifted.write_text("id,0,1,2\n0.5,1.5,2.5,3.5\n")
    from dpmoments.data import TypedNumber
    assert open_table(shifted, columns=[TypedNumber("0"), TypedNumber("1")]).feature_names == ["0", "1"]
    assert open_table(shifted, columns=[0, 1]).feature_names == ["id", "0"]  # the library's int is a position
    from dpmoments.moments.ranges import _position  # --ranges 0=... names the same column as --columns 0
    assert _position(TypedNumber("0"), ["id", "0", "1"]) == 1 and _position(TypedNumber("2"), ["a", "b", "c"]) == 2
    refused = [("wine.csv", "14.23,1.71,2.43\n13.2,1.78,2.14\n"), ("two.csv", "0,1\n1.5,0.5\n"),
               ("likert.csv", "1,2,3\n2,2,4\n")]  # a header of numbers that do not count, or no evidence
    for name, text in refused:
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=name + r"': the header row has column names that are numbers.*"
                                             r"--no-header.*save the table as Parquet") as err:
            open_table(tmp_path / name)
        assert "14.23" not in str(err.value) and "1.71" not in str(err.value)  # never echoed
    assert open_table(tmp_path / "wine.csv", header=False).names == ["x0", "x1", "x2"]


def test_semicolon_file_read_as_comma_gets_a_hint_not_its_row(tmp_path):
    path = tmp_path / "eu.csv"
    path.write_text("age;weight\n41;70,5\n")
    with pytest.raises(ValueError, match=r"separated by ';'\? Give the delimiter") as err:
        open_table(path)
    assert "70,5" not in str(err.value)


@pytest.mark.parametrize("body, fragment", [
    (f"a,b\n1,2\n3,{SECRET}\n", "the value in column 'b' at line 3 is not a number"),
    (f"a,b\n1,2\n3,4,{SECRET}\n", "line 3 has 3 field(s) but the header has 2"),
    (f"a,b\n1,2\n{SECRET}\n", "line 3 has 1 field(s) but the header has 2"),
    (f'a,b\n1,2\n"3\n{SECRET}",4\n', "the value in column 'a' at line 4 is not a number"),
])
def test_bad_rows_are_located_without_their_values(tmp_path, body, fragment):
    path = tmp_path / "bad.csv"
    path.write_text(body)
    with pytest.raises(ValueError) as err:
        _all(path)
    assert fragment in str(err.value) and "bad.csv" in str(err.value)
    assert SECRET not in str(err.value) and "JANE" not in str(err.value)


def test_encoding_errors_name_the_file(tmp_path):
    head = tmp_path / "latin-head.csv"
    head.write_bytes("poids_\xe9,b\n1,2\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin-head\.csv' is not UTF-8 text"):
        open_table(head)
    cell = tmp_path / "latin-cell.csv"
    cell.write_bytes(b"a,b\n1,2\n3,\xe9t\xe9\n")
    with pytest.raises(ValueError, match=r"latin-cell\.csv' is not UTF-8 text"):
        _all(cell)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_named_pipe_is_refused_in_one_line(tmp_path):
    fifo = tmp_path / "stream.csv"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"stream\.csv' is not a regular file \(a named pipe"):
        open_table(fifo)


def test_unknown_and_misplaced_options(tmp_path):
    np.save(tmp_path / "x.npy", X)
    with pytest.raises(ValueError, match=r"a delimiter \(--delimiter; delimiter=\) applies to .csv/.tsv"):
        open_table(tmp_path / "x.npy", delimiter=";")
    with pytest.raises(ValueError, match=r"without a header \(--no-header; header=False\) applies to .csv/.tsv"):
        open_table(tmp_path / "x.npy", header=False)
    (tmp_path / "x.json.gz").write_bytes(b"")
    with pytest.raises(ValueError, match="unknown extension '.json.gz'"):
        open_table(tmp_path / "x.json.gz")
    (tmp_path / "d.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="'delimiter' must be one character"):
        open_table(tmp_path / "d.csv", delimiter=";;")


def test_npy_columns_have_names_too(tmp_path):
    np.save(tmp_path / "x.npy", X)
    table = open_table(tmp_path / "x.npy", columns=["x1"], target="x0")
    assert table.n_rows == X.shape[0] and table.feature_names == ["x1"] and table.target_name == "x0"
    Xb, y = next(table.chunks(100))
    np.testing.assert_array_equal(Xb, X[:, [1]])
    np.testing.assert_array_equal(y, X[:, 0])


@pytest.mark.parametrize("fmt, compressed", [("csr", True), ("csr", False), ("csc", True), ("coo", False)])
def test_sparse_archives_give_the_dense_rows(tmp_path, fmt, compressed):
    rng = np.random.default_rng(0)
    A = (sparse.random(301, 7, density=0.2, random_state=1, format="lil") * 3).tolil()
    A[5, :] = 0  # an empty row
    A = A.tocsr()
    path = tmp_path / f"m-{fmt}.npz"
    sparse.save_npz(path, A.asformat(fmt), compressed=compressed)
    table = open_table(path, columns=[4, 0])
    assert table.n_rows == 301 and table.names[:2] == ["x0", "x1"]
    got = np.concatenate(list(table.chunks(chunk_size=int(rng.integers(1, 50)))))
    np.testing.assert_array_equal(got, A.toarray()[:, [4, 0]])


def test_hostile_sparse_archives(tmp_path):
    np.savez(tmp_path / "dense.npz", X=X)
    with pytest.raises(ValueError, match="holds no scipy.sparse matrix"):
        open_table(tmp_path / "dense.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"junk\.npz' as a \.npz archive"):
        open_table(tmp_path / "junk.npz")
    A = sparse.csr_array(np.eye(4))
    bad = sparse.csr_array((A.data, A.indices + 10, A.indptr), shape=(4, 4), copy=False)
    bad.indices[:] = [0, 1, 9, 3]  # a column index outside the matrix
    np.savez(tmp_path / "bad.npz", data=A.data, indices=bad.indices, indptr=A.indptr, format=b"csr",
             shape=np.array([4, 4]))
    with pytest.raises(ValueError, match=r"bad\.npz': the sparse matrix is inconsistent \(a column index"):
        _all(tmp_path / "bad.npz")
    np.savez(tmp_path / "obj.npz", data=np.array([{"x": 1}], dtype=object), indices=[0], indptr=[0, 1],
             format=b"csr", shape=np.array([1, 1]))
    with pytest.raises(ValueError, match=r"obj\.npz"):
        _all(tmp_path / "obj.npz")


def test_npy_of_objects_is_never_unpickled(tmp_path):
    np.save(tmp_path / "o.npy", np.array([[{"a": 1}]], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="Python objects, which are never unpickled"):
        open_table(tmp_path / "o.npy")


def _open_bounded(path, seconds=60, memory=4 << 30):
    """open_table(path) in a child limited in time and memory: what the parent sees of a hang or a blow-up."""
    import resource
    import subprocess
    import sys

    code = ("import sys\nfrom dpmoments.data.tables import open_table\n"
            "try:\n    open_table(sys.argv[1])\nexcept ValueError as e:\n    print(e)\n")
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (memory, memory))  # noqa: E731
    try:
        return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                              timeout=seconds, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"opening {path.name} did not finish in {seconds} s")


def test_a_wide_file_opens_in_time_linear_in_its_width(tmp_path):
    # The duplicate-name check counted each column's name over the whole header: 1.6 MB .npy files of
    # 100 000 columns took hours to open.
    path = tmp_path / "wide.npy"
    np.save(path, np.ones((1, 300_000)))
    res = _open_bounded(path)
    assert res.returncode == 0 and res.stdout == "", res.stderr


def test_a_sparse_archive_claiming_a_vast_width_is_refused_at_once(tmp_path):
    # The shape member is free to write: a 1 KB archive claiming 10^9 columns built 10^9 column names.
    m = sparse.csr_matrix(np.ones((3, 3)))
    path = tmp_path / "vast.npz"
    np.savez(path, format=b"csr", shape=np.array([3, 10**9]), data=m.data, indices=m.indices, indptr=m.indptr)
    res = _open_bounded(path)
    assert res.returncode == 0 and "columns" in res.stdout and "at most" in res.stdout, (res.stdout, res.stderr)


def test_csv_blocks_keep_the_selected_order_across_many_batches(tmp_path):
    """The CSV block (one pyarrow call per batch) holds the selected columns in the order asked, the
    rows in file order across pyarrow's batches, and an empty cell still fails as missing."""
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(20000, 6)), 6)  # ~1 MB: several 256 KiB batches
    path = tmp_path / "many.csv"
    np.savetxt(path, X, delimiter=",", header="a,b,c,d,e,f", comments="", fmt="%.6f")
    chunks = list(iter_chunks(path, columns=["e", "a", "c"], target="f", chunk_size=7000))
    got = np.vstack([c[0] for c in chunks])
    assert np.array_equal(got, X[:, [4, 0, 2]])
    assert np.array_equal(np.concatenate([c[1] for c in chunks]), X[:, 5])
    lines = path.read_text().splitlines()
    lines[15001] = "," + lines[15001].split(",", 1)[1]  # data row 15001: column a left empty
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"missing or non-finite value in column 'a' at data row 15001 "):
        list(iter_chunks(path, columns=["e", "a"]))


def test_a_npy_cut_short_while_it_is_read_is_an_error_not_a_crash(tmp_path):
    """Through a memory map, the first row past a truncation killed the process (SIGBUS, no message); the rows
    are now read from the file, and the change is refused in one line. In a child process,
    so that the old behaviour fails this test instead of killing the test run."""
    import subprocess
    import sys
    import textwrap

    path = tmp_path / "x.npy"
    np.save(path, np.ones((50_000, 4)))
    code = textwrap.dedent(f"""
        import os
        from dpmoments.data.tables import open_table
        chunks = open_table({str(path)!r}).chunks(1024)
        next(chunks)
        os.truncate({str(path)!r}, 200_000)
        try:
            list(chunks)
        except ValueError as exc:
            print(exc)
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "x.npy' changed while it was being read" in run.stdout
    assert run.stdout.count("\n") == 1


def test_npy_rows_read_from_the_file_equal_the_array(tmp_path):
    A = np.arange(5003 * 3, dtype=">i4").reshape(5003, 3)
    for name, data in (("c.npy", A), ("f.npy", np.asfortranarray(A))):
        np.save(tmp_path / name, data)
        for columns, want in ((None, A), ([2, 0], A[:, [2, 0]])):
            got = np.vstack(list(open_table(tmp_path / name, columns=columns).chunks(1000)))
            assert got.dtype == np.float64 and np.array_equal(got, want)


def test_a_file_without_a_numpy_header_is_not_called_a_pickle(tmp_path):
    path = tmp_path / "table.npy"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="does not start with a NumPy header") as info:
        open_table(path)
    assert "Python objects" not in str(info.value)


def test_a_pandas_index_stored_in_parquet_is_not_a_column(tmp_path):
    """df.to_parquet stores a non-default index (patient ids, say) as a column; it was read as a feature,
    and at ids in the thousands it took every row's norm, clipped along itself."""
    import pandas as pd

    frame = pd.DataFrame(X, columns=["a", "b", "c"], index=7000 + np.arange(len(X)))
    frame.to_parquet(tmp_path / "anon.parquet")
    frame.rename_axis("patient_id").to_parquet(tmp_path / "named.parquet")
    for name in ("anon.parquet", "named.parquet"):
        table = open_table(tmp_path / name)
        assert table.names == ["a", "b", "c"]
        assert np.allclose(np.concatenate(list(table.chunks(10))), X)
    frame.reset_index(drop=True).to_parquet(tmp_path / "range.parquet")  # a RangeIndex is metadata only
    assert open_table(tmp_path / "range.parquet").names == ["a", "b", "c"]


def _appended_between_passes(monkeypatch, path):
    """Open the file as each pass does, appending far-off rows just before the second pass opens it."""
    import dpmoments.data.readers as readers

    opened, real = [], readers.open_table

    def open_table(source, **kw):
        opened.append(source)
        if len(opened) == 2:
            with open(path, "a") as f:
                np.savetxt(f, 50 + np.ones((500, 3)), delimiter=",")
        return real(source, **kw)

    monkeypatch.setattr(readers, "open_table", open_table)
    return opened


@pytest.mark.parametrize("how", ["estimator", "release"])
def test_a_file_appended_to_between_two_passes_is_refused(tmp_path, monkeypatch, how):
    """(review7) Each pass over a path opens it anew, and checked only that the file did not change during
    that pass: rows appended between the private choices' passes and the release's were used (n = 40000 of
    a file the centre's passes had seen with 20000 rows). The passes of one fit now read one version."""
    import warnings

    import dpmoments as dpm
    from dpmoments.estimators import PrivateCovariance

    path = tmp_path / "x.csv"
    np.savetxt(path, np.random.default_rng(0).normal(size=(2000, 3)), delimiter=",", header="a,b,c", comments="")
    fits = {"estimator": lambda: PrivateCovariance(epsilon=1.0, delta=1e-6, rng=0).fit(path),
            # the third moment's bound is chosen in a pass of its own (the second moment's sums in the same one)
            "release": lambda: dpm.release_third_moment(path, epsilon=1.0, delta=1e-6, row_norm="auto", rng=0)}
    fit = fits[how]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit()  # unchanged: read in every pass
        opened = _appended_between_passes(monkeypatch, path)
        with pytest.raises(ValueError, match="x.csv' changed while it was being read"):
            fit()
        assert len(opened) >= 2
        monkeypatch.undo()
        fit()  # a later fit reads the file as it is now


def test_npy_chunks_kept_by_a_consumer_stay_as_read(tmp_path):
    # The reader reuses a chunk's buffer only when nothing refers to it: kept chunks (and views) keep their rows.
    A = np.arange(40.0).reshape(20, 2)
    np.save(tmp_path / "a.npy", A)
    kept = [c[1:] for c in iter_chunks(tmp_path / "a.npy", chunk_size=3)]
    assert np.array_equal(np.concatenate([A[k:k + 3][1:] for k in range(0, 20, 3)]), np.concatenate(kept))
    streamed = [c.sum() for c in iter_chunks(tmp_path / "a.npy", chunk_size=3)]  # nothing kept: buffers reused
    assert streamed == [A[k:k + 3].sum() for k in range(0, 20, 3)]


def test_a_npy_cut_short_between_two_passes_is_a_changed_file(tmp_path):
    # A later pass reopens the file: cut short since the first, its header no longer fits, and that is said as
    # what happened (the file changed), not as a bad header.
    from dpmoments.data.tables import same_file_version

    np.save(tmp_path / "c.npy", np.ones((50, 3)))
    with same_file_version():
        open_table(tmp_path / "c.npy")
        with open(tmp_path / "c.npy", "r+b") as f:
            f.truncate(300)
        with pytest.raises(ValueError, match="changed while it was being read"):
            open_table(tmp_path / "c.npy")
    with pytest.raises(ValueError, match="ends before the rows its header announces"):  # outside one fit: as it is
        open_table(tmp_path / "c.npy")
