"""Estimators and neighbouring relations (issue 12): what each accepts, refuses, records and warns about."""

import warnings

import numpy as np
import pytest

from dpmoments.datasets.mixtures import make_mog
from dpmoments.estimators import (
    CenterBudget, PrivateCovariance, PrivateGraphicalLasso, PrivateIRLS, PrivateModelSelection, PrivatePCA,
    PrivateRidgePrecision, PrivateTensorDecomposition,
)
from dpmoments.exceptions import NoiseDominatesWarning, PrivacyLeakWarning, UncertifiedPrivacyWarning
from dpmoments.privacy import compose
from dpmoments.privacy.relations import NEIGHBOURS

RNG = np.random.default_rng(11)
X = RNG.normal(size=(400, 3)) / 3
Y = X @ np.array([1.0, -1.0, 0.0]) + 0.1 * RNG.normal(size=400)
PRIV = dict(epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0)
# PrivateCovariance centres privately by default (docs/bounds.md); here the uncentred moment, like the others.
MOMENT_ESTIMATORS = {
    "covariance": lambda **kw: PrivateCovariance(center=None, **PRIV, **kw),
    "glasso": lambda **kw: PrivateGraphicalLasso(alpha=0.05, **PRIV, **kw, center=None),
    "glasso-ebic": lambda **kw: PrivateGraphicalLasso(alpha="ebic", alphas=5, **PRIV, **kw, center=None),
    "ridge": lambda **kw: PrivateRidgePrecision(alpha=0.1, **PRIV, **kw, center=None),
    "pca": lambda **kw: PrivatePCA(n_components=2, **PRIV, **kw, center=None),
}


def _all_fitted():
    """One fitted instance of every estimator, at its default relation."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncertifiedPrivacyWarning)
        fits = {name: make().fit(X) for name, make in MOMENT_ESTIMATORS.items()}
        fits["glasso-output"] = PrivateGraphicalLasso(alpha=0.05, mechanism="output", epsilon=1.0, row_norm=1.0,
                                                      rng=0, center=None).fit(X)
    fits["irls"] = PrivateIRLS(epsilon=1.0, delta=1e-6, row_norm=1.0, response_bound=2.0, n_iter=2, w_max=5.0,
                               rng=0).fit(X, Y)
    fits["selection"] = PrivateModelSelection(epsilon=1.0, bounds=1.0, response_bound=2.0, R=2.0, phi=1.0,
                                              rng=0).fit(X, Y)
    mog = make_mog(2000, 3, 2, sigma2=0.01, rng=0)
    fits["tensor"] = PrivateTensorDecomposition(n_components=2, model="mog", epsilon=1.0, delta=1e-6, row_norm=3.0,
                                                sigma2=0.01, rng=0).fit(mog.X)
    return fits


def test_every_estimator_records_its_guarantee_and_relation():
    for name, est in _all_fitted().items():
        assert est.privacy_ is not None, name
        assert est.neighbours_ == "replace-one", name


@pytest.mark.parametrize("name", list(MOMENT_ESTIMATORS))
@pytest.mark.parametrize("neighbours", NEIGHBOURS)
def test_moment_estimators_accept_the_three_relations(name, neighbours):
    est = MOMENT_ESTIMATORS[name](neighbours=neighbours).fit(X)
    assert est.neighbours_ == neighbours == est.release_.neighbours
    assert est.privacy_.epsilon == pytest.approx(1.0) and est.privacy_.delta == pytest.approx(1e-6)
    if neighbours == "add-remove":
        assert not est.release_.n_public and est.release_.n != 400
        assert est.release_.count_share == 0.05
    else:
        assert est.release_.n == 400


def test_count_share_reaches_the_release_and_the_plan():
    est = PrivateCovariance(neighbours="add-remove", count_share=0.2, center=None, **PRIV).fit(X)
    assert est.release_.count_share == 0.2 and est.release_.count_guarantee.epsilon == pytest.approx(0.2)
    assert est._planned_guarantee() == est.privacy_
    with pytest.raises(ValueError, match="'count_share'"):
        PrivateCovariance(neighbours="add-remove", count_share=0.0, center=None, **PRIV).fit(X)


def test_private_centre_under_add_remove():
    est = PrivateCovariance(neighbours="add-remove", center="private", center_budget=CenterBudget(mean=0.2),
                            **PRIV).fit(X)
    assert not est.release_.n_public and est.neighbours_ == "add-remove"


@pytest.mark.parametrize("make,match", [
    (lambda: PrivateCovariance(mechanism="wishart-approx", neighbours="add-remove", center=None, **PRIV),
     "noisy row count"),
    (lambda: PrivateGraphicalLasso(alpha=0.1, mechanism="output", neighbours="add-remove", epsilon=1.0,
                                   row_norm=1.0, center=None), "exact n"),
    (lambda: PrivateCovariance(neighbours="swap", **PRIV), "'neighbours' must be one of"),
])
def test_relations_an_estimator_cannot_honour_are_refused_in_one_line(make, match):
    with pytest.raises(ValueError, match=match) as err:
        make().fit(X)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("neighbours", ["zero-out", "add-remove", "swap"])
def test_irls_and_model_selection_are_replace_one_only(neighbours):
    with pytest.raises(ValueError, match="neighbours") as err:
        PrivateIRLS(epsilon=1.0, delta=1e-6, row_norm=1.0, response_bound=2.0, n_iter=2, w_max=5.0,
                    neighbours=neighbours).fit(X, Y)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="neighbours"):
        PrivateModelSelection(epsilon=1.0, bounds=1.0, response_bound=2.0, R=2.0, neighbours=neighbours).fit(X, Y)


SMALL = X[:8]
ORIGIN = (0.0, 0.0, 0.0)


@pytest.mark.parametrize("fit", [
    lambda kw: PrivateCovariance(center=None, **kw).fit(SMALL),
    # a public prior: 8 rows are too few for a private location draw, which is refused before any delta check
    lambda kw: PrivateCovariance(center="private", center_budget=CenterBudget(prior=ORIGIN), **kw).fit(SMALL),
    lambda kw: PrivateGraphicalLasso(alpha=0.1, **kw, center=None).fit(SMALL),
    lambda kw: PrivateRidgePrecision(alpha=0.1, **kw, center=None).fit(SMALL),
    lambda kw: PrivatePCA(n_components=1, **kw, center=None).fit(SMALL),
    lambda kw: PrivateIRLS(response_bound=1.0, n_iter=1, w_max=2.0, **kw).fit(SMALL, Y[:8]),
    lambda kw: PrivateTensorDecomposition(n_components=1, model="mog", sigma2=0.0, **kw).fit(SMALL),
], ids=["covariance", "covariance-private-centre", "glasso", "ridge", "pca", "irls", "tensor"])
def test_every_fit_warns_when_delta_is_at_least_one_over_n(fit):
    with pytest.warns(PrivacyLeakWarning, match=r"delta=0\.2 >= 1/n with n=8 \(rows\)"):
        fit(dict(epsilon=1.0, delta=0.2, row_norm=1.0, rng=0))


def test_the_warning_names_the_noisy_count_under_add_remove():
    with pytest.warns(PrivacyLeakWarning, match="the noisy row count") as rec:
        est = PrivateCovariance(epsilon=1.0, delta=0.5, row_norm=1.0, neighbours="add-remove", center=None,
                                rng=0).fit(SMALL)
    assert f"n={est.release_.n} " in str(rec[0].message)


def test_composite_fit_warns_on_its_total_delta():
    """The private centre splits delta: each part is below 1/n, the total is not."""
    with pytest.warns(PrivacyLeakWarning, match=r"delta=0\.15 "):
        PrivateCovariance(epsilon=1.0, delta=0.15, row_norm=1.0, center="private",
                          center_budget=CenterBudget(mean=0.5, prior=ORIGIN), rng=0).fit(SMALL)


# -- PrivateGraphicalLasso(mechanism="output"): nothing from the exact solve -------------------------------------
def _output_fit(X):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        est = PrivateGraphicalLasso(alpha=0.02, mechanism="output", epsilon=1.0, row_norm=2.0, rng=5, center=None).fit(X)
    return est, rec


_MIX = np.array([[1.0, 0.9, 0.8, 0.7], [0.0, 0.4, 0.3, 0.2], [0.0, 0.0, 0.5, 0.1], [0.0, 0.0, 0.0, 0.2]])
INDEPENDENT = np.random.default_rng(3).normal(size=(500, 4)) / 3
CORRELATED = np.random.default_rng(4).normal(size=(500, 4)) @ _MIX / 3  # needs more sweeps than INDEPENDENT


def test_output_perturbation_exposes_nothing_but_the_noisy_output():
    (a, rec_a), (b, rec_b) = _output_fit(INDEPENDENT), _output_fit(CORRELATED)
    # The noisy output, its inverse and what the noise checks read from it (post-processing of the output).
    noisy = {"precision_", "covariance_", "snr_", "uncertainty_", "diagnostics_"}
    fitted = {k for k in vars(a) if k.endswith("_") and not k.startswith("_")}
    assert fitted == {k for k in vars(b) if k.endswith("_") and not k.startswith("_")}
    for name in sorted(fitted - noisy):
        va, vb = getattr(a, name), getattr(b, name)
        assert (np.array_equal(va, vb) if isinstance(va, np.ndarray) else va == vb), name
    assert a.n_iter_ is None and a.converged_ is None
    # The same noise on both: the outputs differ only by the exact solutions' difference.
    assert not np.allclose(a.precision_, b.precision_)
    # No warning but the uncertified claim and the noise checks on the noisy output leaves the fit (a solver
    # warning would carry its duality gap).
    for rec in (rec_a, rec_b):
        assert {w.category for w in rec} <= {UncertifiedPrivacyWarning, NoiseDominatesWarning}


def test_output_perturbation_hides_a_solver_warning():
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        PrivateGraphicalLasso(alpha=0.02, mechanism="output", epsilon=1.0, row_norm=2.0, max_iter=1, tol=1e-14,
                              rng=5, center=None).fit(CORRELATED)
    assert {w.category for w in rec} <= {UncertifiedPrivacyWarning, NoiseDominatesWarning}  # noise checks: output only
    assert UncertifiedPrivacyWarning in {w.category for w in rec}
    assert not any("duality gap" in str(w.message) for w in rec)


def test_tensor_under_add_remove_spends_what_it_planned():
    from dpmoments.moments.tensor_moments import check_tensor_arguments, planned_guarantees

    mog = make_mog(2000, 3, 2, sigma2=0.01, rng=0)
    est = PrivateTensorDecomposition(n_components=2, model="mog", epsilon=1.0, delta=1e-6, row_norm=3.0, sigma2=0.01,
                                     neighbours="add-remove", rng=0).fit(mog.X)
    plan = planned_guarantees(check_tensor_arguments(1.0, 1e-6, "add-remove", "analytic", None))
    assert est.privacy_ == plan.total == compose([plan.count.guarantee, plan.second.guarantee, plan.third.guarantee])
    assert est.moments_.second.count_guarantee == plan.count.guarantee and est.neighbours_ == "add-remove"
    assert est.privacy_.epsilon == pytest.approx(1.0)
