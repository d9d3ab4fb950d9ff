"""as_source: one question, what kind of input is this, answered once; every release and estimator takes the answer."""

import hashlib
import warnings

import numpy as np
import pytest
from scipy import sparse

from dpmoments.data import Source, as_source
from dpmoments.moments import accumulate_moments, release_second_moment
from dpmoments.moments.coinpress import coinpress_release
from dpmoments.moments.private_release import private_second_moment

pd = pytest.importorskip("pandas")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")

X = np.random.default_rng(3).normal(size=(600, 3)) * [1.0, 2.0, 0.5] + [1.0, -1.0, 4.0]


@pytest.fixture
def csv(tmp_path):
    path = tmp_path / "x.csv"
    np.savetxt(path, X, delimiter=",", header="a,b,c", comments="")
    return path


class Rereadable:
    """Chunks read afresh on every iteration (as the command line's files are)."""

    def __iter__(self):
        return iter([X[:200], X[200:]])


def test_every_kind_is_told_once(csv):
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    cases = {
        "array": X, "frame": frame, "sparse": sparse.csr_array(X), "dask": da.from_array(X, chunks=(250, 3)),
        "file": csv, "chunks": [X[:300], X[300:]], "stream": (c for c in [X]), "pair": (X, X[:, 0]),
    }
    for kind, data in cases.items():
        src = as_source(data)
        assert isinstance(src, Source) and src.kind == kind and src.data is data, kind
        assert as_source(src) is src
    assert as_source(str(csv)).kind == "file" and as_source(dd.from_pandas(frame, npartitions=2)).kind == "dask"
    assert as_source(Rereadable()).kind == "stream"


def test_public_facts_without_reading_the_rows(csv):
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    assert (as_source(X).n_features, as_source(X).total_rows, as_source(X).feature_names) == (3, 600, None)
    assert as_source(frame).feature_names == ["a", "b", "c"] and as_source(frame).named
    assert as_source(pd.DataFrame(X)).feature_names is None  # labels 0, 1, 2: not names
    pa = pytest.importorskip("pyarrow")
    assert as_source(pa.table(frame)).feature_names is None  # a pyarrow Table's columns are its values
    dframe = dd.from_pandas(frame, npartitions=3)
    assert (as_source(dframe).n_features, as_source(dframe).total_rows, as_source(dframe).feature_names) == \
        (3, 600, ["a", "b", "c"])
    f = as_source(csv)
    assert (f.n_features, f.feature_names, f.total_rows) == (3, ["a", "b", "c"], None)  # a text file's rows: unknown
    assert as_source(Rereadable()).n_features == 3 and as_source(Rereadable()).total_rows is None


def test_where_each_kind_lives(csv):
    assert as_source(X).in_memory and not as_source(X).out_of_core
    assert as_source(csv).out_of_core and as_source(da.from_array(X)).out_of_core
    assert as_source(sparse.csr_array(X)).sparse and as_source((sparse.csr_array(X), X[:, 0])).sparse
    assert as_source((da.from_array(X), da.from_array(X[:, 0]))).dask
    assert as_source(Rereadable()).rereadable and as_source([X]).rereadable
    assert not as_source(c for c in [X]).rereadable


def test_chunks_are_the_readers():
    assert [c.shape for c in as_source(X).chunks(250)] == [(250, 3), (250, 3), (100, 3)]


def test_fingerprint_is_of_the_bytes_and_opt_in(csv):
    assert as_source(csv).fingerprint() == hashlib.sha256(csv.read_bytes()).hexdigest()
    Y = X.copy()
    assert as_source(X).fingerprint() == as_source(Y).fingerprint()
    Y[599, 2] += 1e-9
    assert as_source(X).fingerprint() != as_source(Y).fingerprint()  # one row tells them apart: never in a release
    assert as_source(X).fingerprint() != as_source(X[:, :2]).fingerprint()
    with pytest.raises(ValueError, match="fingerprint"):
        as_source(da.from_array(X)).fingerprint()


def test_a_directory_is_fingerprinted_file_by_file(tmp_path):
    store = tmp_path / "x.zarr"
    (store / "0").mkdir(parents=True)
    (store / "zarr.json").write_bytes(b"{}")
    (store / "0" / "0").write_bytes(b"rows")
    seen = []

    class Bar:
        def update(self, n):
            seen.append(n)

    first = as_source(store).fingerprint(Bar())
    assert seen == [4, 2] and len(first) == 64
    (store / "0" / "0").write_bytes(b"rowz")
    assert as_source(store).fingerprint() != first


def _same(a, b):
    assert a.second_moment.tobytes() == b.second_moment.tobytes()
    assert (a.center is None and b.center is None) or a.center.tobytes() == b.center.tobytes()
    assert a.guarantee == b.guarantee and a.n == b.n


def test_releases_take_a_source_and_give_the_same_numbers(csv):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for data in (X, csv, da.from_array(X, chunks=(250, 3))):
            _same(release_second_moment(data, epsilon=1.0, delta=1e-6, row_norm=8.0, rng=0, center=None),
                  release_second_moment(as_source(data), epsilon=1.0, delta=1e-6, row_norm=8.0, rng=0, center=None))
        args = dict(epsilon=4.0, delta=1e-6, row_norm="auto", center=None, center_budget=None, scale=None,
                    bound_budget=0.1, mechanism="gaussian", neighbours="replace-one", calibration="analytic", rng=1)
        _same(private_second_moment(X, **args), private_second_moment(as_source(X), **args))
        np.testing.assert_array_equal(accumulate_moments(as_source(X), row_norm=8.0).xtx,
                                      accumulate_moments(X, row_norm=8.0).xtx)


def test_estimators_take_a_source_and_give_the_same_numbers(csv):
    from dpmoments.estimators import PrivateCovariance, PrivatePCA, PrivateTensorDecomposition

    big = np.random.default_rng(5).normal(size=(5000, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kwargs in (dict(), dict(method="coinpress"), dict(row_norm=6.0, center=None)):
            a = PrivateCovariance(epsilon=4.0, delta=1e-6, rng=2, **kwargs).fit(big)
            b = PrivateCovariance(epsilon=4.0, delta=1e-6, rng=2, **kwargs).fit(as_source(big))
            assert a.covariance_.tobytes() == b.covariance_.tobytes(), kwargs
        names = PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=30.0, center=None, rng=0).fit(
            as_source(pd.DataFrame(X, columns=["a", "b", "c"]))).feature_names_in_
        assert list(names) == ["a", "b", "c"]
        p = PrivatePCA(n_components=1, epsilon=1.0, delta=1e-6, row_norm=30.0, center=None, rng=0)
        assert p.fit(as_source(csv)).components_.tobytes() == p.fit(csv).components_.tobytes()
        t = PrivateTensorDecomposition(n_components=2, model="mog", epsilon=1.0, delta=1e-6, row_norm=30.0,
                                       sigma2=1.0, rng=0)
        assert t.fit(as_source(X)).weights_.tobytes() == t.fit(X).weights_.tobytes()


def test_coinpress_release_takes_a_source():
    from dpmoments.estimators import CenterBudget

    big = np.random.default_rng(5).normal(size=(20000, 3))
    args = dict(epsilon=1.0, delta=1e-6, row_norm="auto", center="private", center_budget=CenterBudget(),
                bound_budget=0.1, rng=4)
    _same(coinpress_release(big, **args), coinpress_release(as_source(big), **args))



def test_a_site_holds_a_source():
    from dpmoments.multisite import Site, run

    def release(wrap):
        sites = [Site(f"s{k}", wrap(part), row_norm=10.0) for k, part in enumerate(np.array_split(X, 3))]
        return run(sites, epsilon=1.0, delta=1e-6, rng=0)[0]

    _same(release(lambda part: part), release(as_source))
