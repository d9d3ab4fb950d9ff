"""row_norm="auto" / response_bound="auto" in the release functions (moments/auto_release.py)."""

import math

import numpy as np
import pytest
import scipy.sparse

import dpmoments as dpm
from dpmoments.exceptions import BoundWarning, NotPrivateWarning
from dpmoments.mechanisms.laws import GAUSSIAN
from dpmoments.moments.auto_release import BoundBudget, clip_target, noise_norm, rank_error
from dpmoments.privacy import ApproxDP, PureDP, compose

RNG = np.random.default_rng(0)
X = RNG.normal(size=(20_000, 5))
Y = 3.0 * X[:, 0] + RNG.normal(size=20_000)
NORMS = np.linalg.norm(X, axis=1)


def test_auto_second_moment_reports_every_share():
    rel = dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm="auto", rng=0, center=None)
    labels = [p.label for p in rel.parts]
    assert labels == ["row_norm", "clipped rows", "second moment"]
    assert sum(p.share for p in rel.parts) == pytest.approx(1.0)
    assert rel.guarantee == compose([p.guarantee for p in rel.parts])
    assert rel.guarantee.epsilon == pytest.approx(1.0) and rel.guarantee.delta == 1e-6
    assert rel.parts[0].guarantee == PureDP(0.09) and rel.parts[1].guarantee.epsilon == pytest.approx(0.01)
    assert rel.row_norm == rel.parts[0].released["row_norm"]
    report = rel.to_dict()
    assert [p["label"] for p in report["parts"]] == labels
    fraction, sd = rel.clipped_fraction
    assert abs(fraction - np.mean(NORMS > rel.row_norm)) < 5 * sd
    acct = dpm.Accountant(ApproxDP(1.0, 1e-6))
    acct.spend(rel.guarantee, label="auto")  # the whole release fits the budget it was given


def test_auto_clips_about_the_balanced_number_of_rows():
    rel = dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm="auto", rng=3, center=None)
    budget = BoundBudget()
    _, clipped = clip_target(budget, "second", GAUSSIAN, 5, 0.9, 1e-6, "replace-one", "analytic", 0.09)
    assert clipped == max(2 * noise_norm("second", GAUSSIAN, 5, 0.9, 1e-6, "replace-one", "analytic"),
                          rank_error(0.09, budget.search, t=5))
    beyond = np.sum(NORMS > rel.row_norm)
    assert beyond < 3 * clipped and rel.parts[0].released["target"] == f"clip about {clipped:.3g} rows"


def test_fixed_quantile_and_cross_and_third_moments():
    rel = dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm="auto",
                                    bound_budget=BoundBudget(share=0.2, quantile=0.9, diagnostic=0.0), rng=1, center=None)
    assert [p.label for p in rel.parts] == ["row_norm", "second moment"]
    lo, hi = np.quantile(NORMS, [0.88, 0.92])
    assert lo <= rel.row_norm <= 1.034 * hi
    cross = dpm.release_cross_moment(X, Y, epsilon=1.0, delta=1e-6, row_norm="auto", response_bound="auto", rng=2)
    assert [p.label for p in cross.parts] == ["row_norm", "response_bound", "clipped rows", "cross moment"]
    assert np.quantile(np.abs(Y), 0.9) < cross.response_bound < 1.1 * np.abs(Y).max()
    np.testing.assert_allclose(cross.cross_moment, X.T @ Y / len(Y), atol=0.2)
    third = dpm.release_third_moment(X, epsilon=1.0, delta=1e-6, row_norm="auto", rng=2)
    assert third.third_moment.shape == (5, 5, 5) and third.guarantee.epsilon == pytest.approx(1.0)
    lap = dpm.release_second_moment(X, epsilon=1.0, row_norm="auto", mechanism="laplace", rng=2, center=None)
    assert isinstance(lap.guarantee, PureDP) and lap.guarantee.epsilon == pytest.approx(1.0)


def test_epsilon_inf_is_exact_and_releases_no_count():
    with pytest.warns(NotPrivateWarning):
        rel = dpm.release_second_moment(X, epsilon=math.inf, row_norm="auto", center=None)
    assert rel.row_norm >= NORMS.max() and not rel.is_private
    np.testing.assert_allclose(rel.second_moment, X.T @ X / len(X), rtol=1e-12)
    assert [p.label for p in rel.parts] == ["row_norm", "second moment"] and rel.clipped_fraction is None


def test_the_same_release_from_every_rereadable_source(tmp_path):
    import dask.array as da

    np.save(tmp_path / "X.npy", X)
    ref = dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm="auto", rng=5, center=None)
    for source in (tmp_path / "X.npy", [X[:9000], X[9000:]], da.from_array(X, chunks=(4000, 5))):
        got = dpm.release_second_moment(source, epsilon=1.0, delta=1e-6, row_norm="auto", rng=5, center=None)
        assert got.row_norm == ref.row_norm
        np.testing.assert_allclose(got.second_moment, ref.second_moment, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    (dict(bound_budget=1.0), "'bound_budget'"),
    (dict(bound_budget=0.0), "'bound_budget'"),
    (dict(bound_budget=1.5), "'bound_budget'"),
    (dict(mechanism="wishart"), "supports mechanism"),
    (dict(secure=True), "secure=True"),
])
def test_bad_auto_options_get_one_line_errors(kwargs, match):
    with pytest.raises(ValueError, match=match) as err:
        dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm="auto", **kwargs, center=None)
    assert "\n" not in str(err.value)


def test_refusals_that_protect_the_data():
    with pytest.raises(ValueError, match="search range is empty"):
        BoundBudget(search=(1.0, 1e-3))
    with pytest.raises(TypeError, match="'bound_budget'"):
        dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm="auto", bound_budget="0.1", center=None)
    with pytest.raises(ValueError, match="one-shot iterator"):
        dpm.release_second_moment((c for c in np.array_split(X, 3)), epsilon=1.0, delta=1e-6, row_norm="auto", center=None)
    with pytest.raises(ValueError, match="dense X"):
        dpm.release_second_moment(scipy.sparse.csr_array(X), epsilon=1.0, delta=1e-6, row_norm="auto", center=None)
    with pytest.raises(ValueError, match="too few rows") as err:  # 30 rows cannot pay for a private draw
        dpm.release_second_moment(X[:30], epsilon=1.0, delta=1e-6, row_norm="auto", center=None)
    assert str(X[0, 0])[:5] not in str(err.value)


def test_warnings_come_from_released_values_only():
    # a quantile of 0.5 clips half the rows: the noisy count says so
    with pytest.warns(BoundWarning, match="clipped"):
        dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm="auto", rng=0,
                                  bound_budget=BoundBudget(quantile=0.5), center=None)
    # every row norm is above the range's top: the drawn bound sits at the top edge
    with pytest.warns(BoundWarning, match="end of its search range"):
        capped = dpm.release_second_moment(100 * X, epsilon=1.0, delta=1e-6, row_norm="auto", rng=0,
                                           bound_budget=BoundBudget(search=(1e-3, 1.0)), center=None)
    assert capped.row_norm == 1.0
