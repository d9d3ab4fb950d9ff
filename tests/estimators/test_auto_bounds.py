"""response_bound / row_norm / bounds = "auto" in PrivateIRLS and PrivateModelSelection."""

import numpy as np
import pytest

import dpmoments as dpm
from dpmoments.estimators import PrivateIRLS, PrivateModelSelection
from dpmoments.privacy import ApproxDP, PureDP, compose

RNG = np.random.default_rng(3)
X = RNG.normal(size=(100_000, 3)) * 5
Y = X @ np.array([1.0, -1.0, 0.5]) + 0.05 * RNG.standard_t(2, size=100_000)
IRLS = dict(epsilon=1.0, delta=1e-6, n_iter=5, w_max=10.0)


def test_irls_auto_bounds_are_private_quantiles_and_compose():
    est = PrivateIRLS(row_norm="auto", response_bound="auto", rng=0, **IRLS).fit(X, Y)
    # the public target of sampling_quantile, not a fixed 5%: the slopes' clipping bias falls with n
    for part, beyond in zip(est.privacy_parts_[:2], (np.linalg.norm(X, axis=1), np.abs(Y))):
        aimed = (1 - float(part.released["target"].split("-quantile")[0])) * X.shape[0]
        assert aimed < 0.05 * X.shape[0] and 0.5 * aimed <= (beyond > part.released[part.label]).sum() <= 2 * aimed
    labels = [p.label for p in est.privacy_parts_]
    assert labels == ["row_norm", "response_bound", "sampling (error budget)", "IRLS iterations"]
    # zCDP accounting: the draws are shares of rho, composed with the iterations in zCDP
    total = compose([p.guarantee for p in est.privacy_parts_], composition="zcdp", delta=1e-6)
    assert est.privacy_.rho == pytest.approx(total.rho, rel=1e-12)  # the same rho, added in another order
    assert est.privacy_.epsilon == pytest.approx(1.0) and est.privacy_.delta == 1e-6
    assert [type(p.guarantee).__name__ for p in est.privacy_parts_[:2]] == ["ZCDP", "ZCDP"]
    assert [p["label"] for p in est.privacy_report_["parts"]] == labels
    np.testing.assert_allclose(est.coef_, [1.0, -1.0, 0.5], atol=0.3)


def test_irls_public_bounds_keep_their_noise_for_a_seed():
    a = PrivateIRLS(row_norm=15.0, response_bound=15.0, rng=4, **IRLS).fit(X, Y)
    b = PrivateIRLS(row_norm=15.0, response_bound=15.0, rng=4, **IRLS).fit(X, Y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert [p.label for p in a.privacy_parts_] == ["sampling (error budget)", "IRLS iterations"]  # no bound draws
    assert a.row_norm_ == 15.0


def test_irls_accountant_and_bad_share():
    acct = dpm.Accountant(ApproxDP(1.0, 1e-6))
    PrivateIRLS(row_norm="auto", response_bound=15.0, accountant=acct, rng=0, **IRLS).fit(X, Y)
    assert acct.spent.epsilon == pytest.approx(1.0)
    with pytest.raises(ValueError, match="'bound_budget'"):
        PrivateIRLS(row_norm="auto", response_bound=15.0, bound_budget=1.0, **IRLS).fit(X, Y)


def test_model_selection_auto_bounds():
    Z = RNG.uniform(-1, 1, size=(20_000, 4))
    y = Z @ np.array([1.0, 1.0, 0.0, 0.0]) + RNG.normal(size=20_000)
    sel = PrivateModelSelection(epsilon=1.0, bounds="auto", response_bound="auto", R=2.0, phi=500.0,
                                rng=0).fit(Z, y)
    assert sel.selected_ == (0, 1)
    assert 0.9 <= sel.bounds_ <= 1.04 and np.quantile(np.abs(y), 0.93) <= sel.response_bound_
    parts = sel.privacy_report_["budget_parts"]
    assert parts["bounds"] == pytest.approx(0.1) and parts["selection"] == pytest.approx(0.9)
    assert isinstance(sel.privacy_, PureDP) and sel.privacy_.epsilon == pytest.approx(1.0)
    assert [p["label"] for p in sel.privacy_report_["bounds"]] == ["bounds", "response_bound"]


def test_too_few_rows_for_a_private_response_bound():
    with pytest.raises(ValueError, match="too few rows"):
        PrivateIRLS(row_norm=15.0, response_bound="auto", **IRLS).fit(X[:100], Y[:100])


def _smallest(exc_info):
    """The epsilon and share a refusal names (``... runs from epsilon E, or at this epsilon from OPTION S``)."""
    import re

    text = str(exc_info.value)
    eps = float(re.search(r"runs from epsilon ([0-9.e+-]+)", text).group(1))
    share = re.search(r"from 'bound_budget' ([0-9.e+-]+)", text)
    return eps, None if share is None else float(share.group(1))


@pytest.mark.parametrize("cls, kwargs, rows", [
    (PrivateIRLS, dict(delta=1e-6, row_norm="auto", response_bound="auto", n_iter=2, w_max=10.0), 600),
    (PrivateModelSelection, dict(bounds="auto", response_bound="auto", R=1.0, max_size=1), 150),
])
def test_a_refusal_names_the_smallest_epsilon_and_share_that_run(cls, kwargs, rows):
    """Computed from the public n and grid: the run goes through at what it names, and not below it by more than its
    rounding up to two digits (at 600 rows the draws run on the small-table grid of 30 steps from epsilon 1.1x,
    named 1.2; moments/draw_grid.py). Model selection's bounds take up to 0.7 of epsilon where their draws need it
    (estimators/_selection_share.py): at 150 rows from epsilon 1.29, and no share at epsilon 1 runs them."""
    Z, y = X[:rows], Y[:rows]
    with pytest.raises(dpm.exceptions.TooFewRowsError) as err:
        cls(epsilon=1.0, rng=0, **kwargs).fit(Z, y)
    eps, share = _smallest(err)
    cls(epsilon=eps, rng=0, **kwargs).fit(Z, y)
    with pytest.raises(dpm.exceptions.TooFewRowsError):
        cls(epsilon=eps * 0.9, rng=0, **kwargs).fit(Z, y)
    if share is not None:
        cls(epsilon=1.0, bound_budget=share, rng=0, **kwargs).fit(Z, y)


def test_irls_and_selection_run_on_a_few_hundred_rows():
    """At 600 rows a 0.95-quantile needs epsilon 0.84 per draw; aiming lower (at least the draw's rank error
    above, never below the 0.75-quantile) and, for IRLS, zCDP shares of rho let them run at epsilon 2 and 4."""
    Z, y = X[:600], Y[:600]
    irls = PrivateIRLS(epsilon=2.0, delta=1e-6, row_norm="auto", response_bound="auto", n_iter=2, w_max=10.0,
                       rng=0).fit(Z, y)
    norms = np.linalg.norm(Z, axis=1)
    assert np.quantile(norms, 0.6) <= irls.row_norm_ <= 1.034 * norms.max()
    sel = PrivateModelSelection(epsilon=4.0, bounds="auto", response_bound="auto", R=1.0, max_size=1,
                                rng=0).fit(Z, y)
    assert np.quantile(np.abs(Z).max(axis=1), 0.6) <= sel.bounds_ <= 1.034 * np.abs(Z).max()


def test_tensor_decomposition_with_a_private_row_bound():
    from dpmoments.datasets.mixtures import make_mog
    from dpmoments.estimators import PrivateTensorDecomposition

    mix = make_mog(50_000, 6, 2, sigma2=0.01, rng=0)
    est = PrivateTensorDecomposition(n_components=2, model="mog", epsilon=2.0, delta=1e-6, row_norm="auto",
                                     sigma2=0.01, rng=0).fit(mix.X)
    assert [p.label for p in est.privacy_parts_] == ["row_norm", "moments"]
    assert est.privacy_.epsilon <= 2.0 and est.privacy_.delta == 1e-6
    err = max(np.min(np.linalg.norm(mix.components - c, axis=1)) for c in est.components_)
    assert err < 0.1


def test_irls_bound_quantile_is_public_and_rises_with_n():
    from dpmoments.moments.auto_release import BoundBudget, sampling_quantile

    auto = BoundBudget()
    assert sampling_quantile(100, auto) == 0.95  # never more than the fixed 5% clipped
    assert sampling_quantile(10_000, auto) == pytest.approx(0.99)  # about sqrt(n) rows
    assert sampling_quantile(1_000_000, auto) == pytest.approx(0.999)
    assert sampling_quantile(1_000_000, auto, noise_norm=2500) == pytest.approx(0.995)  # the noise's balance, 2x
    assert sampling_quantile(1_000_000, BoundBudget(quantile=0.9)) == 0.9  # the caller's quantile kept
