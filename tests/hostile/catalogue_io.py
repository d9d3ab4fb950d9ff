"""Catalogue cases for files, outputs and extreme numbers (appended to ``catalogue.CASES``).

Every message here names the file or option and what is wrong, never a value
read from the data: the cells below that must not appear are ``SECRET``.
"""

import os
import pathlib
import tempfile

import numpy as np
from scipy import sparse

import dpmoments as dpm
from dpmoments.estimators import PrivateCovariance
from dpmoments.data.tables import open_table

OK = dict(epsilon=1.0, delta=1e-6, row_norm=1.0)
PRIVACY = ("--epsilon", "1", "--delta", "1e-6", "--row-norm", "1")
SECRET = "14.23"


def _irls():
    from dpmoments.estimators import PrivateIRLS

    return PrivateIRLS(**OK, response_bound=1.0)


def _typed(text="a,t\n1,u\n2,v\n"):
    return _file("typed.csv", text)


def _frame():
    import pandas as pd

    return pd.DataFrame({"a": [1.0, 2.0]})


def _dir():
    return pathlib.Path(tempfile.mkdtemp())


def _file(name, text=None, data=None):
    path = _dir() / name
    if data is not None:
        np.save(path, data)
    else:
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


def _fresh():
    return str(_dir() / "out")


def _masked():
    return np.ma.masked_array(np.array([[1.0, 100.0], [0.5, 0.2]]), mask=[[False, True], [False, False]])


def _pandas_na():
    import pandas as pd

    return pd.DataFrame({"a": pd.array([1.0, None, 2.0], dtype="Float64"), "b": [1.0, 2.0, 3.0]})


def _dask_nan():
    import dask.array as da

    x = np.random.default_rng(0).normal(size=(1000, 3))
    x[400, 1] = np.nan
    return da.from_array(x, chunks=(100, 3))


def _fifo():
    path = _dir() / "stream.csv"
    os.mkfifo(path)
    return str(path)


def _study():
    """A study directory holding the input; returns (the input, the directory)."""
    study = _dir() / "study"
    study.mkdir()
    np.save(study / "patients.npy", np.random.default_rng(0).normal(size=(20, 3)))
    (study / "notes.txt").write_text("unrelated")
    return str(study / "patients.npy"), str(study)


def _foreign_dir():
    path = _dir() / "mine"
    path.mkdir()
    (path / "thesis.tex").write_text("years of work")
    return str(path)


def _link():
    real = _dir() / "real"
    real.mkdir()
    link = real.parent / "link"
    link.symlink_to(real)
    return str(link)


def _words(ids):
    return _file("docs.npy", data=np.array(ids, dtype=float))


def cases(cli):
    """The cases, given the catalogue's in-process command-line runner."""
    study_input, study = _study()
    csv = _file("good.csv", "a,b,c\n1,2,3\n4,5,6\n")
    return [
        ("data-masked", "API", "a masked array with a masked entry",
         lambda: dpm.release_second_moment(_masked(), **OK, center=None), ValueError,
         "masked array with masked values;"),
        ("data-masked-fit", "API", "a masked array given to an estimator",
         lambda: PrivateCovariance(**OK).fit(_masked()), ValueError, "masked array with masked values;"),
        ("data-numeric-strings", "API", "numbers as strings (an object array) in a release",
         lambda: dpm.release_second_moment(np.array([["1", "2"], ["3", "4"]], dtype=object), **OK, center=None), TypeError,
         "never parses strings"),
        ("data-numeric-strings-fit", "API", "numbers as strings given to an estimator (the same rule)",
         lambda: PrivateCovariance(**OK).fit(np.array([["1", "2"], ["3", "4"]], dtype=object)), TypeError,
         "never parses strings"),
        ("data-pandas-na", "API", "a DataFrame with a pandas NA", lambda: dpm.release_second_moment(_pandas_na(), **OK, center=None),
         ValueError, "missing value"),
        ("data-list-of-rows", "API", "a list of rows given to a release",
         lambda: dpm.release_second_moment([[1.0, 2.0], [3.0, 4.0]], **OK, center=None), TypeError, "np.asarray(rows)"),
        ("data-dask-nan-row", "API", "a NaN at row 400 of a dask array",
         lambda: dpm.release_second_moment(_dask_nan(), **OK, center=None), ValueError, "row 400"),
        ("table-y-twice", "API", "`PrivateIRLS().fit(open_table(f, target='c'), y)`: the response given twice",
         lambda: _irls().fit(open_table(csv, target="c"), [1.0, 2.0]), ValueError, "and y is given too"),
        ("table-no-response", "API", "`PrivateIRLS().fit(open_table(f))`: a table without a target and no y",
         lambda: _irls().fit(open_table(csv)), ValueError, "needs a response: give y, or open the table with target="),
        ("table-indicator-other-range", "API", "a range 0:2 for a one-hot column the table makes (its range is 0:1)",
         lambda: dpm.release_second_moment(open_table(_typed(), categories={"t": ["u", "v"]}), **OK,
                                           ranges={"t=u": (0, 2)}), ValueError, "it is a 0/1 column the table makes"),
        ("table-duplicate-after-one-hot", "API", "a column named `t=u` beside the declared level `u` of `t`",
         lambda: open_table(_typed("a,t=u,t\n1,2,u\n"), categories={"t": ["u"]}), ValueError,
         "two feature columns are named 't=u'"),
        ("table-range-on-excluded-column", "API", "a range for a column left out by `exclude`",
         lambda: PrivateCovariance(**OK, ranges={"a": (0, 1)}).fit(open_table(csv, exclude=["a"])), ValueError,
         "'ranges' names column 'a', which is not a feature column"),
        ("table-frame-delimiter", "API", "`open_table(DataFrame, delimiter=';')`",
         lambda: open_table(_frame(), delimiter=";"), ValueError, "apply to text files, not to the DataFrame"),
        ("file-header-of-numbers", "API", "a CSV without a header read as if it had one",
         lambda: open_table(_file("wine.csv", f"{SECRET},1.71\n13.2,1.78\n")), ValueError, "header=False"),
        ("file-semicolons", "API", "a semicolon-separated file read as comma-separated",
         lambda: open_table(_file("eu.csv", "a;b\n1;2\n")), ValueError, "delimiter"),
        ("file-not-utf8", "API", "a Latin-1 file", lambda: open_table(_file("l1.csv", b"poids\xe9,b\n1,2\n")), ValueError,
         "is not UTF-8 text"),
        ("file-named-pipe", "API", "a named pipe", lambda: open_table(_fifo()), ValueError, "not a regular file"),
        ("file-dense-npz", "API", "an .npz of dense arrays",
         lambda: open_table(_npz_dense()), ValueError,
         "no scipy.sparse matrix"),
        ("cli-bad-cell-quoted", "CLI", "a CSV with a text cell (the cell is never shown)",
         lambda: cli("covariance", _file("bad.csv", "a,b\n1,2\n3,JANE-DOE\n"), *PRIVACY, "--out", _fresh()), 2,
         "the value in column 'b' at line 3 is not a number"),
        ("cli-bad-cell-in-a-bool-column", "CLI", "a CSV bool column (True/False, read as 1/0) with another word",
         lambda: cli("covariance", _file("flag.csv", "a,b\n1,True\n3,JANE-DOE\n"), *PRIVACY, "--out", _fresh()), 2,
         "the value in column 'b' at line 3 is not True or False"),
        ("cli-header-of-numbers", "CLI", "a headerless CSV (its first row would become column names)",
         lambda: cli("covariance", _file("wine.csv", f"{SECRET},1.71\n13.2,1.78\n"), *PRIVACY, "--out", _fresh()), 2,
         "--no-header"),
        ("cli-out-holds-input", "CLI", "`--out study --force` where study/ holds the input",
         lambda: cli("covariance", study_input, *PRIVACY, "--out", study, "--force"), 2, "contains the input"),
        ("cli-out-working-dir", "CLI", "`--out . --force`",
         lambda: cli("covariance", csv, *PRIVACY, "--out", ".", "--force"), 2, "the working directory"),
        ("cli-force-foreign-dir", "CLI", "`--force` onto a directory dpmoments did not write",
         lambda: cli("covariance", csv, *PRIVACY, "--out", _foreign_dir(), "--force"), 2, "not written by dpmoments"),
        ("cli-out-symlink", "CLI", "an `--out` that is a symbolic link",
         lambda: cli("covariance", csv, *PRIVACY, "--out", _link()), 2, "symbolic link"),
        ("cli-epsilon-tiny", "CLI", "`--epsilon 1e-300`",
         lambda: cli("covariance", csv, "--epsilon", "1e-300", "--delta", "1e-6", "--row-norm", "1", "--out",
                     _fresh()), 2, "at least 1e-12"),
        ("cli-epsilon-subnormal", "CLI", "`--epsilon 1e-320` (`regress`)",
         lambda: cli("regress", csv, "--target", "c", "--epsilon", "1e-320", "--delta", "1e-6", "--row-norm", "1",
                     "--response-bound", "1", "--n-iter", "2", "--w-max", "10", "--out", _fresh()), 2, "--epsilon"),
        ("cli-delta-subnormal", "CLI", "`--delta 1e-320`",
         lambda: cli("covariance", csv, "--epsilon", "1", "--delta", "1e-320", "--row-norm", "1", "--out", _fresh()),
         2, "smallest normal double"),
        ("cli-row-norm-huge", "CLI", "`--row-norm 1e200`",
         lambda: cli("covariance", csv, "--epsilon", "1", "--delta", "1e-6", "--row-norm", "1e200", "--out",
                     _fresh()), 2, "rescale the data"),
        ("cli-epsilon-grid-tiny", "CLI", "`--epsilon-grid 1e-300,1`",
         lambda: cli("covariance", csv, *PRIVACY, "--epsilon-grid", "1e-300,1", "--out", _fresh()), 2,
         "--epsilon-grid"),
        ("cli-stm-word-ids", "CLI", "`tensor --model stm` with word ids outside the vocabulary "
         "(neither the ids nor how many printed)",
         lambda: cli("tensor", _words([[0, 1, 2], [3, 4, 977]] * 5), "--model", "stm", "--vocabulary-size", "10",
                     "--n-components", "2", "--epsilon", "1", "--delta", "1e-6", "--out", _fresh()), 2,
         "has ids outside it"),
        ("cli-no-header-npy", "CLI", "`--no-header` with a .npy file",
         lambda: cli("covariance", _file("x.npy", data=np.ones((4, 2))), "--no-header", *PRIVACY, "--out", _fresh()),
         2, "--no-header"),
        ("cli-named-pipe", "CLI", "a named pipe as the data file",
         lambda: cli("covariance", _fifo(), *PRIVACY, "--out", _fresh()), 2, "not a regular file"),
        ("data-dask-text", "API", "a dask DataFrame with a text column (never quoted)",
         lambda: dpm.release_second_moment(_dask_text_frame(), **OK, center=None), TypeError, "not text"),
        ("cli-npz-vast-width", "CLI", "a 1 KB sparse archive claiming 10^9 columns",
         lambda: cli("covariance", _vast_npz(), *PRIVACY, "--out", _fresh()), 2, "at most"),
        ("cli-force-added-files", "CLI", "`--force` onto an old result someone has since added files to",
         lambda: cli("covariance", csv, *PRIVACY, "--uncentred", "--out", _added_to(cli, csv), "--force"), 2,
         "did not write"),
        ("data-file-changes", "API", "a data file another program appends to while it is streamed (the "
         "passes of the private choices would mix two data sets)", _appended_while_read, ValueError,
         "changed while"),
        ("data-npy-cut-short", "API", "a `.npy` truncated by another program while it is read (through a "
         "memory map this killed the process with SIGBUS)", _npy_cut_short, ValueError, "changed while"),
        ("cli-npy-not-npy", "CLI", "a CSV (or any file without a NumPy header) named `.npy` (numpy took it for a "
         "pickle: \"it holds Python objects\")", lambda: cli("covariance", _file("data.npy", "a,b\n1,2\n"),
                                                            *PRIVACY, "--out", _fresh()), 2, "NumPy header"),
        ("cli-ridge-ebic", "CLI", "`precision --method ridge --alpha ebic` (eBIC is the graphical lasso's; ridge "
         "fell through to the library's \"'alpha' must be a real number\")",
         lambda: cli("precision", csv, *PRIVACY, "--center", "0,0,0", "--method", "ridge", "--alpha", "ebic",
                     "--out", _fresh()), 2, "numeric --alpha"),
        ("data-sums-overflow", "API", "finite rows under a finite bound whose sums pass 1e308 (rows of norm 1e154, "
         "`row_norm=1e155`): it said \"'M' contains NaN or infinite values; remove or impute them\"",
         lambda: dpm.release_second_moment(np.full((3000, 2), 1e154), **{**OK, "row_norm": 1e155}, center=None), ValueError,
         "sums of the clipped rows overflow"),
        ("cli-negative-column", "CLI", "`--columns -1` (positions are 0-based; Python's count from the end is "
         "not taken)", lambda: cli("covariance", csv, *PRIVACY, "--columns", "-1", "--out", _fresh()), 2,
         "0-based"),
    ]


def _vast_npz():
    path = _dir() / "vast.npz"
    m = sparse.csr_matrix(np.ones((3, 3)))
    np.savez(path, format=b"csr", shape=np.array([3, 10**9]), data=m.data, indices=m.indices, indptr=m.indptr)
    return str(path)


def _dask_text_frame():
    import dask.dataframe as dd
    import pandas as pd

    return dd.from_pandas(pd.DataFrame({"id": ["JANE-DOE-4711"] * 4, "x": np.arange(4.0)}), npartitions=2)


def _added_to(cli, csv):
    """An earlier dpmoments result holding one more file, written by someone else."""
    path = _dir() / "old-result"
    cli("covariance", csv, *PRIVACY, "--uncentred", "--out", str(path))
    (path / "my-notes.txt").write_text("written after the run")
    return str(path)


def _appended_while_read():
    path = pathlib.Path(_file("growing.csv", "a,b\n" + "1,2\n" * 3000))
    stream = open_table(path).chunks(1024)
    next(stream)
    with open(path, "a") as f:
        f.write("3,4\n")
    list(stream)


def _npy_cut_short():
    path = _file("cut.npy", data=np.ones((5000, 3)))
    chunks = open_table(path).chunks(1024)
    next(chunks)
    os.truncate(path, 40_000)
    list(chunks)


def _npz_dense():
    path = _dir() / "dense.npz"
    np.savez(path, X=np.ones((3, 2)))
    return str(path)
