"""PrivateCovariance, PrivateGraphicalLasso and PrivateRidgePrecision."""

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.covariance import graphical_lasso as sk_graphical_lasso

import dpmoments as dpm
from dpmoments import ApproxDP, BudgetExceededError, NotPrivateWarning, PureDP, Uncertified
from dpmoments.estimators import CenterBudget, PrivateCovariance, PrivateGraphicalLasso, PrivateRidgePrecision
from dpmoments.moments import clip_rows

RNG = np.random.default_rng(0)
THETA = np.eye(4) + 0.4 * (np.eye(4, k=1) + np.eye(4, k=-1))
X = RNG.multivariate_normal(np.zeros(4), np.linalg.inv(THETA), size=4000) / 4
XC = clip_rows(X, 1.0)
S_EXACT = XC.T @ XC / len(X)


def quiet(est, data=X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        return est.fit(data)


def test_covariance_infinite_epsilon_is_exact():
    est = quiet(PrivateCovariance(epsilon=math.inf, row_norm=1.0, center=None))
    np.testing.assert_allclose(est.covariance_, S_EXACT, rtol=1e-12)
    assert est.privacy_ == PureDP(math.inf)


def test_covariance_is_psd_and_records_its_guarantee():
    est = PrivateCovariance(epsilon=0.5, delta=1e-6, row_norm=1.0, center=None, rng=0).fit(X[:50])
    assert np.linalg.eigvalsh(est.covariance_).min() >= -1e-12
    assert isinstance(est.privacy_, ApproxDP) and est.privacy_.epsilon == 0.5
    assert est.release_.postprocessing[0].startswith("psd-projection")
    raw = PrivateCovariance(epsilon=0.5, delta=1e-6, row_norm=1.0, center=None, psd_floor=None, rng=0).fit(X[:50])
    assert raw.release_.postprocessing == ()


def test_public_and_private_centres():
    c = X.mean(axis=0) * 0 + 0.01  # a public centre, fixed in advance
    est = quiet(PrivateCovariance(epsilon=math.inf, row_norm=1.0, center=c))
    Xc = clip_rows(X - c, 1.0)
    np.testing.assert_allclose(est.covariance_, Xc.T @ Xc / len(X), rtol=1e-12)
    priv = PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=1.0, center="private",
                             center_budget=CenterBudget(mean=0.25), rng=1).fit(X)
    assert priv.privacy_.epsilon == pytest.approx(1.0) and priv.privacy_.delta == pytest.approx(1e-6)
    shares = {p.label: p.share for p in priv.privacy_parts_}
    assert list(shares)[0] == "location" and list(shares)[-2:] == ["mean", "second moment"]
    draws = [v for k, v in shares.items() if k.startswith("location") and not k.endswith("mean")]
    means = [v for k, v in shares.items() if k.endswith("mean")]
    assert sum(means) == pytest.approx(0.25)  # refinement: docs/bounds.md; the draws of the steps not taken
    assert sum(draws) <= 0.05 and sum(draws) + shares["second moment"] == pytest.approx(0.75)  # go to the moment
    np.testing.assert_allclose(priv.location_, X.mean(axis=0), atol=0.01)
    with pytest.raises(TypeError, match="center_budget"):
        PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=1.0, center_budget=0.2).fit(X)
    with pytest.raises(ValueError, match="'center'"):
        PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=1.0, center="mean").fit(X)


def test_private_centre_composes_its_parts_and_cannot_launder_an_uncertified_one():
    # Old: the classic formula at shares >= 1 made both parts Uncertified, yet the estimator reported a
    # certified (50, 1e-6). A composite release now calibrates its Gaussian parts as shares of one zCDP
    # rho, whatever 'calibration' says, so every part is certified and the total holds as reported.
    kw = dict(epsilon=50.0, delta=1e-6, row_norm=1.0, calibration="classic", center="private",
              center_budget=CenterBudget(mean=0.2))
    est = PrivateCovariance(**kw, rng=0).fit(X)
    g = est.privacy_
    assert g.certified and all(p.guarantee.certified for p in est.privacy_parts_)
    assert g.holding.epsilon <= 50.0 * (1 + 1e-9) and g.holding.delta == pytest.approx(1e-6)
    acct = dpm.Accountant(ApproxDP(200.0, 1e-5))
    PrivateCovariance(**kw, accountant=acct, rng=0).fit(X)
    assert len(acct.ledger) == 1
    lap = PrivateCovariance(epsilon=1.0, row_norm=1.0, mechanism="laplace", center="private",
                            center_budget=CenterBudget(mean=0.25), rng=0).fit(X)
    assert lap.privacy_ == PureDP(1.0)


def test_accountant_is_checked_before_and_charged_after():
    acct = dpm.Accountant(ApproxDP(1.5, 1e-5))
    PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=1.0, center=None, accountant=acct, rng=0).fit(X)
    assert acct.spent.epsilon == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=1.0, center=None, accountant=acct, rng=1).fit(X)
    assert len(acct.ledger) == 1


def test_fit_release_costs_nothing_and_clone_works():
    rel = dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0, center=None)
    acct = dpm.Accountant(ApproxDP(0.1, 1e-9))
    est = PrivateGraphicalLasso(alpha=0.005, epsilon=1.0, delta=1e-6, row_norm=1.0, accountant=acct, center=None)
    est.fit_release(rel)
    assert acct.spent is None and est.privacy_ == rel.guarantee
    assert clone(est).get_params()["alpha"] == 0.005


def test_glasso_infinite_epsilon_equals_the_non_private_solve():
    est = quiet(PrivateGraphicalLasso(alpha=0.002, epsilon=math.inf, row_norm=1.0, penalize_diagonal=False,
                                      tol=1e-10, center=None))
    _, prec = sk_graphical_lasso(S_EXACT, alpha=0.002, tol=1e-12, enet_tol=1e-12, max_iter=1000)
    np.testing.assert_allclose(est.precision_, prec, rtol=1e-5, atol=1e-5 * np.abs(prec).max())
    assert est.converged_ and est.n_iter_ >= 1


def test_glasso_admm_solver_agrees_with_fast():
    fast = quiet(PrivateGraphicalLasso(alpha=0.003, epsilon=math.inf, row_norm=1.0, tol=1e-10, center=None))
    admm = quiet(PrivateGraphicalLasso(alpha=0.003, epsilon=math.inf, row_norm=1.0, solver="admm",
                                       admm_rho=1.0, max_iter=20000, center=None))
    np.testing.assert_allclose(admm.precision_, fast.precision_, rtol=1e-2, atol=1e-2 * np.abs(fast.precision_).max())


def test_glasso_on_very_noisy_release_never_nans():
    est = PrivateGraphicalLasso(alpha=0.01, epsilon=0.05, delta=1e-6, row_norm=1.0, rng=3, center=None).fit(X[:30])
    assert np.all(np.isfinite(est.precision_)) and np.linalg.eigvalsh(est.precision_).min() > 0


def test_glasso_ebic_picks_from_the_release_only():
    est = PrivateGraphicalLasso(alpha="ebic", alphas=8, epsilon=2.0, delta=1e-6, row_norm=1.0, rng=0, center=None).fit(X)
    assert est.alphas_.shape == (8,) and est.ebic_.shape == (8,)
    assert est.alpha_ == est.alphas_[np.argmin(est.ebic_)]
    with pytest.raises(ValueError, match="'alpha'"):
        PrivateGraphicalLasso(alpha="cv", epsilon=2.0, delta=1e-6, row_norm=1.0, center=None).fit(X)


def test_glasso_mechanisms():
    with pytest.warns(dpm.UncertifiedPrivacyWarning):
        w = PrivateGraphicalLasso(alpha=0.01, epsilon=1.0, row_norm=1.0, mechanism="wishart", rng=0, center=None).fit(X)
    assert isinstance(w.privacy_, Uncertified)
    lap = PrivateGraphicalLasso(alpha=0.01, epsilon=1.0, row_norm=1.0, mechanism="laplace", rng=0, center=None).fit(X)
    assert lap.privacy_ == PureDP(1.0)
    with pytest.warns(dpm.UncertifiedPrivacyWarning, match="output perturbation"):
        out = PrivateGraphicalLasso(alpha=0.05, epsilon=1.0, row_norm=1.0, mechanism="output", rng=0, center=None).fit(X)
    assert isinstance(out.privacy_, Uncertified) and out.release_ is None
    with pytest.raises(dpm.UncertifiedSpendError):
        PrivateGraphicalLasso(alpha=0.05, epsilon=1.0, row_norm=1.0, mechanism="output",
                              accountant=dpm.Accountant(PureDP(5.0)), center=None).fit(X)


def test_ridge_precision_is_pd_even_on_indefinite_releases():
    est = PrivateRidgePrecision(alpha=0.01, epsilon=0.05, delta=1e-6, row_norm=1.0, rng=0, center=None).fit(X[:20])
    assert np.linalg.eigvalsh(est.release_.second_moment).min() < 0
    assert np.linalg.eigvalsh(est.precision_).min() > 0
    S = est.release_.second_moment
    P = est.precision_
    np.testing.assert_allclose(-np.linalg.inv(P) + S + 2 * 0.01 * P, 0, atol=1e-8)


@pytest.mark.parametrize("cls,extra", [(PrivateCovariance, {}), (PrivateGraphicalLasso, {"alpha": 0.01}),
                                       (PrivateRidgePrecision, {"alpha": 0.01})])
def test_bad_inputs_name_the_parameter(cls, extra):
    with pytest.raises(ValueError, match="'row_norm'"):
        cls(epsilon=1.0, delta=1e-6, row_norm=-1, **extra).fit(X)
    with pytest.raises(ValueError, match="'epsilon'"):
        cls(epsilon=0, delta=1e-6, row_norm=1.0, **extra).fit(X)
    with pytest.raises(ValueError, match="'mechanism'"):
        cls(epsilon=1, delta=1e-6, row_norm=1.0, mechanism="magic", **extra).fit(X)
    with pytest.raises(ValueError, match="NaN"):
        cls(epsilon=1, delta=1e-6, row_norm=1.0, **extra).fit(np.full((3, 2), np.nan))
    with pytest.raises(TypeError, match="'release'"):
        cls(epsilon=1, delta=1e-6, row_norm=1.0, **extra).fit_release(np.eye(2))


def test_negative_alpha_is_refused():
    with pytest.raises(ValueError, match="'alpha'"):
        PrivateGraphicalLasso(alpha=-1.0, epsilon=1, delta=1e-6, row_norm=1.0, center=None).fit(X)
    with pytest.raises(ValueError, match="'alpha'"):
        PrivateRidgePrecision(alpha=0.0, epsilon=1, delta=1e-6, row_norm=1.0, center=None).fit(X)


def test_private_centre_is_estimated_around_a_public_prior():
    far = X + 6.0  # data far from the origin: clipping around 0 would crush every row
    prior = CenterBudget(mean=0.25, prior=[6.0, 6.0, 6.0, 6.0])
    est = PrivateCovariance(epsilon=2.0, delta=1e-6, row_norm=1.0, center="private", center_budget=prior,
                            rng=1).fit(far)
    np.testing.assert_allclose(est.location_, far.mean(axis=0), atol=0.02)
    np.testing.assert_allclose(est.covariance_, np.cov(X.T, bias=True), atol=0.02)
    with pytest.raises(ValueError, match="'prior'"):
        CenterBudget(prior=[np.nan])
    with pytest.raises(ValueError, match="one entry per feature"):
        PrivateCovariance(epsilon=2.0, delta=1e-6, row_norm=1.0, center="private",
                          center_budget=CenterBudget(prior=[0.0]), rng=1).fit(far)


def test_glasso_path_is_solved_once_and_kept():
    """alpha='ebic' solves its grid as one warm path and keeps it (path_); a fixed alpha keeps none."""
    est = PrivateGraphicalLasso(alpha="ebic", alphas=6, alpha_floor=0, epsilon=2.0, delta=1e-6, row_norm=1.0,
                                rng=0, center=None).fit(X)
    path = est.path_
    assert np.array_equal(path.alphas, est.alphas_) and np.array_equal(path.ebic, est.ebic_)
    assert len(path.precisions) == 6 and path.n_edges.shape == (6,) and path.objective.shape == (6,)
    assert path.alphas[path.chosen] == est.alpha_
    np.testing.assert_array_equal(path.precisions[path.chosen], est.precision_)
    for P, k in zip(path.precisions, path.n_edges):
        assert k == np.count_nonzero(np.abs(np.triu(P, 1)) > 1e-8)
    fixed = PrivateGraphicalLasso(alpha=0.05, epsilon=2.0, delta=1e-6, row_norm=1.0, rng=0, center=None).fit(X)
    assert fixed.path_ is None


def test_glasso_edges_rule_picks_the_smallest_penalty_within_budget():
    est = PrivateGraphicalLasso(alpha="edges", max_edges=1, alphas=8, epsilon=2.0, delta=1e-6, row_norm=1.0,
                                rng=0, center=None).fit(X)
    within = est.path_.n_edges <= 1
    assert est.path_.n_edges[est.path_.chosen] <= 1
    assert est.alpha_ == est.alphas_[within].min()
    with pytest.raises(TypeError, match="'max_edges'"):
        PrivateGraphicalLasso(alpha="edges", epsilon=2.0, delta=1e-6, row_norm=1.0, rng=0, center=None).fit(X)


def test_output_perturbation_refuses_a_noise_scale_outside_the_floats_before_solving(monkeypatch):
    # alpha^2 underflowed to 0 and a bare ZeroDivisionError came out after the exact solve on the data.
    import dpmoments.estimators._glasso_output as _glasso_output

    monkeypatch.setattr(_glasso_output, "release_second_moment", lambda *a, **k: pytest.fail("the data were read"))
    with pytest.raises(ValueError, match="Wishart noise scale"):
        PrivateGraphicalLasso(alpha=1e-300, mechanism="output", epsilon=1.0, row_norm=1.0, rng=0, center=None).fit(X)


@pytest.mark.parametrize("gamma", [-1.0, 5.0, float("nan")])
def test_ebic_gamma_outside_zero_one_is_refused(gamma):
    with pytest.raises(ValueError, match="'ebic_gamma'"):
        PrivateGraphicalLasso(alpha="ebic", ebic_gamma=gamma, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0, center=None).fit(X)
