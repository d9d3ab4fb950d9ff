"""The bundled Sachs et al. (2005) data set."""

import dataclasses
import gzip
from importlib import resources

import numpy as np
import pytest

from dpmoments.datasets import SachsData, load_sachs

NAMES = ("praf", "pmek", "plcg", "PIP2", "PIP3", "p44/42", "pakts473", "PKA", "PKC", "P38", "pjnk")


@pytest.fixture(scope="module")
def sachs():
    return load_sachs()


def test_shape_and_names(sachs):
    assert isinstance(sachs, SachsData)
    assert sachs.data.shape == (7466, 11)
    assert sachs.data.dtype == np.float64
    assert sachs.feature_names == NAMES
    assert not np.isnan(sachs.data).any()
    assert np.isfinite(sachs.data).all()
    assert sachs.log is True


def test_raw_values_and_log():
    raw = load_sachs(log=False)
    assert raw.log is False
    assert raw.data.min() == 1.0 and raw.data.max() == 9058.0
    np.testing.assert_array_equal(raw.data[0], [26.4, 13.2, 8.82, 18.3, 58.8, 6.61, 17.0, 414.0, 17.0, 44.9, 40.0])
    np.testing.assert_allclose(load_sachs(log=True).data, np.log(raw.data), rtol=0, atol=0)


def test_edges_and_adjacency(sachs):
    assert len(sachs.edges) == 18
    assert all(c in NAMES and e in NAMES and c != e for c, e in sachs.edges)
    assert ("PIP2", "PKC") in sachs.edges and ("PKA", "pjnk") in sachs.edges
    A = sachs.adjacency
    assert A.shape == (11, 11) and A.dtype == bool
    np.testing.assert_array_equal(A, A.T)
    assert not A.diagonal().any()
    assert 17 <= A.sum() // 2 <= 18
    assert A.sum() // 2 == len({frozenset(e) for e in sachs.edges})
    idx = {n: i for i, n in enumerate(NAMES)}
    for c, e in sachs.edges:
        assert A[idx[c], idx[e]] and A[idx[e], idx[c]]


def test_description_and_frozen(sachs):
    for word in ("Sachs", "Science", "2005", "cdt", "MIT", "offline"):
        assert word in sachs.description
    with pytest.raises(dataclasses.FrozenInstanceError):
        sachs.data = None


def test_fresh_arrays_each_call():
    a, b = load_sachs(), load_sachs()
    a.data[0, 0] = -1.0
    assert b.data[0, 0] != -1.0


def test_bundled_files_present():
    root = resources.files("dpmoments.datasets").joinpath("data")
    for name in ("sachs.csv.gz", "sachs_edges.csv", "README"):
        assert root.joinpath(name).is_file()
    header = gzip.decompress(root.joinpath("sachs.csv.gz").read_bytes()).split(b"\n", 1)[0]
    assert header.decode() == ",".join(NAMES)


def test_bad_log():
    with pytest.raises(TypeError, match="'log' must be a bool"):
        load_sachs(log="yes")
