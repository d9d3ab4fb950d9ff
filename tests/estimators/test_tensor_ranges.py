"""``ranges=`` on the tensor decomposition (and ``dpmoments tensor --ranges``): each value clipped to its
column's public range, in its own units (the public ``sigma2`` is stated in them); with every column ranged
the box bounds the rows. The ranges are public: a change to the data but not the ranges changes no noise."""

import json
import warnings

import numpy as np
import pytest

from dpmoments.estimators import PrivateTensorDecomposition
from dpmoments.exceptions import NotPrivateWarning

from ..cli.helpers import in_process

MU = np.array([[3.0, 0.0], [0.0, 3.0]])
RANGES = {0: (-2.0, 6.0), 1: (-2.0, 6.0)}


def _mixture(seed, n):
    rng = np.random.default_rng(seed)
    return MU[rng.integers(0, 2, n)] + 0.3 * rng.normal(size=(n, 2))


def _fit(X, **kw):
    kw = {"n_components": 2, "model": "mog", "sigma2": 0.09, "epsilon": 1.0, "delta": 1e-6, "rng": 0, **kw}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateTensorDecomposition(**kw).fit(X)


def test_each_value_is_clipped_to_its_range_in_its_own_units():
    X = _mixture(0, 400)
    X[0] = [1e6, -1e6]  # outside both ranges: clipped to (6, -2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        est = _fit(X, epsilon=float("inf"), row_norm=100.0, ranges={"x0": (-2, 6), 1: (-2, 6)})
    Z = np.clip(X, -2.0, 6.0)
    np.testing.assert_allclose(est.moments_.second.second_moment, Z.T @ Z / len(Z), rtol=1e-10)
    assert est.moments_.second.postprocessing[-1].startswith("public ranges for x0, x1 (each value clipped")


def test_a_change_to_the_data_but_not_the_ranges_changes_no_noise():
    """Every column ranged and too few rows to draw the bound: the box's bound, free, whatever the rows."""
    fits = [_fit(_mixture(seed, 200) * scale, ranges=RANGES) for seed, scale in ((1, 1.0), (2, 50.0))]
    (a, b) = (f.moments_ for f in fits)
    assert a.second.row_norm == b.second.row_norm == pytest.approx(np.sqrt(2) * 6.0)
    assert a.second.sensitivity == b.second.sensitivity and a.third.noise_scale == b.third.noise_scale
    assert "the ranges' box about the centre, free" in a.second.postprocessing[-2]
    assert str(fits[0].privacy_) == "(1, 1e-06)-DP" and fits[0].privacy_parts_ == ()


def test_with_rows_enough_the_bound_is_drawn_within_the_box_and_the_fit_finds_the_means():
    est = _fit(_mixture(3, 20_000), ranges=RANGES, epsilon=2.0)
    assert est.moments_.second.row_norm <= np.sqrt(2) * 6.0 and [p.label for p in est.privacy_parts_][0] == "row_norm"
    found = np.abs(est.components_[:, None, :] - MU[None]).sum(-1).min(1)
    assert found.max() < 0.3


def test_the_topic_model_takes_no_ranges():
    with pytest.raises(ValueError, match="model='stm' takes no 'center' or 'ranges'"):
        PrivateTensorDecomposition(n_components=2, model="stm", vocabulary_size=5, epsilon=1.0, delta=1e-6,
                                   ranges={0: (0, 1)}).fit(np.zeros((10, 3), dtype=int))


def test_the_command_takes_ranges_as_the_estimator_does(tmp_path, capsys):
    X = _mixture(4, 300)
    np.savetxt(tmp_path / "m.csv", X, delimiter=",", header="a,b", comments="")
    res = in_process(capsys)("tensor", tmp_path / "m.csv", "--n-components", 2, "--sigma2", 0.09, "--epsilon", 1,
                             "--delta", "1e-6", "--ranges", "a=-2:6,b=-2:6", "--seed", 0, "--out", tmp_path / "o",
                             "--no-figures")
    assert res.returncode == 0, res.stderr
    report = json.loads((tmp_path / "o" / "privacy_report.json").read_text())
    assert report["ranges"]["given"] == {"a": [-2.0, 6.0], "b": [-2.0, 6.0]}
    assert report["ranges"]["columns"].startswith("public ranges for a, b")
    est = _fit(X, ranges=RANGES)  # the same release through the library
    np.testing.assert_array_equal(np.load(tmp_path / "o" / "components.npy"), est.components_)
