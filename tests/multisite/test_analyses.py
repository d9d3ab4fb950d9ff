"""Every moment-based estimator fits across sites with no glue: a multi-site run produces what fit_release takes."""

import math
import warnings

import numpy as np
import pytest

from dpmoments.datasets.mixtures import make_mog, make_single_topic
from dpmoments.estimators import (PrivateCovariance, PrivateGraphicalLasso, PrivateModelSelection, PrivatePCA,
                                  PrivateRidgePrecision, PrivateTensorDecomposition, release_mog_moments,
                                  release_topic_moments)
from dpmoments.exceptions import NotPrivateWarning
from dpmoments.multisite import ANALYSES, Site, api, irls, release_tensor_moments, run_cape, run_pooled
from dpmoments.moments import clip_rows
from dpmoments.solvers.irls import irls as exact_irls

INF = math.inf


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        yield


def _split(X, y=None, parts=3, **kw):
    Xs = np.array_split(X, parts)
    ys = [None] * parts if y is None else np.array_split(y, parts)
    return [Site(f"s{i}", a, b, **kw) for i, (a, b) in enumerate(zip(Xs, ys))]


@pytest.mark.parametrize("make", [
    lambda: PrivateCovariance(epsilon=1, delta=1e-6, row_norm=1.0),
    lambda: PrivatePCA(n_components=2, epsilon=1, delta=1e-6, row_norm=1.0),
    lambda: PrivateGraphicalLasso(alpha=0.01, epsilon=1, delta=1e-6, row_norm=1.0),
    lambda: PrivateRidgePrecision(alpha=0.1, epsilon=1, delta=1e-6, row_norm=1.0),
])
def test_second_moment_estimators_fit_a_multisite_release_like_the_pooled_one(make):
    X = np.random.default_rng(0).normal(size=(3000, 4)) / 4
    sites = _split(X, row_norm=1.0)
    rel, rep = run_cape(sites, epsilon=INF, delta=1e-5)
    pooled, _ = run_pooled(sites, epsilon=INF, delta=1e-5)
    a, b = make().fit_release(rel), make().fit_release(pooled)
    for attr in ("covariance_", "components_", "precision_"):
        if hasattr(a, attr):
            np.testing.assert_allclose(np.abs(getattr(a, attr)), np.abs(getattr(b, attr)), atol=1e-8)
    private, rep = run_cape(sites, epsilon=1.0, delta=1e-6, rng=0)
    assert make().fit_release(private).privacy_ == rep.guarantee


def test_model_selection_across_sites():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(30_000, 4)) / 2
    y = X @ np.array([1.0, 1.0, 0.0, 0.0]) + 0.1 * rng.normal(size=30_000)
    sites = _split(X, y, row_norm=2.0, response_bound=2.0)
    rel, rep = api.analyse(sites, "select", epsilon=1.0, delta=1e-6, rng=0)
    assert rel.second_moment.shape == (5, 5) and rel.guarantee == rep.guarantee
    sel = PrivateModelSelection(epsilon=1.0, bounds=1.0, response_bound=2.0, R=3.0, phi=200.0).fit_release(rel)
    assert sel.selected_ == (0, 1) and sel.privacy_ == rep.guarantee
    np.testing.assert_allclose(sel.coef_[:2], [1.0, 1.0], atol=0.1)
    # How often redrawn releases choose the same model: before, no selection probability at all.
    assert sel.selection_probability_ > 0.9 and sel.uncertainty_["method"] == "parametric bootstrap"
    assert not sel.diagnostics_


def test_tensor_mog_and_stm_across_sites_equal_the_centralised_moments_with_noise_off():
    m = make_mog(6000, 6, 3, sigma2=0.02, rng=0)
    mom, rep = release_tensor_moments(_split(m.X, parts=4, row_norm=2.0), model="mog", epsilon=INF, delta=0.5,
                                      sigma2=0.02)
    central = release_mog_moments(m.X, sigma2=0.02, epsilon=INF, row_norm=2.0)
    np.testing.assert_allclose(mom.m2, central.m2, atol=1e-12)
    np.testing.assert_allclose(mom.m3, central.m3, atol=1e-12)
    est = PrivateTensorDecomposition(n_components=3, model="mog", epsilon=1, delta=1e-5, row_norm=2.0, sigma2=0.02,
                                     rng=3).fit_release(mom)
    err = np.abs(np.abs(est.components_ @ m.components.T).max(axis=1) - 1)
    assert err.max() < 0.05 and set(rep.parts) == {"second", "third", "mean"}
    t = make_single_topic(8000, 8, 3, rng=2)
    mom, rep = release_tensor_moments(_split(t.X, parts=4), model="stm", epsilon=INF, delta=0.5, vocabulary_size=8)
    central = release_topic_moments(t.X, vocabulary_size=8, epsilon=INF)
    np.testing.assert_allclose(mom.m3, central.m3, atol=1e-12)
    assert np.abs(mom.m2 - central.m2).max() < 0.01  # all three word pairs: the same expectation
    PrivateTensorDecomposition(n_components=3, model="stm", epsilon=1, delta=1e-5, vocabulary_size=8,
                               rng=0).fit_release(mom)


def test_irls_across_sites_is_the_exact_fit_with_noise_off_and_private_with_it():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 3)) / 4
    y = X @ np.array([1.0, -1.0, 0.5]) + 0.05 * rng.standard_t(2, size=6000)
    sites = _split(X, y, row_norm=1.0, response_bound=1.0)
    fit, rep = irls(sites, epsilon=INF, delta=0.5, n_iter=8, w_max=10.0, fit_intercept=False)
    exact = exact_irls(clip_rows(X, 1.0), np.clip(y, -1, 1), n_iter=8, w_max=10.0)
    np.testing.assert_allclose(fit.coef, exact.coef, atol=1e-8)
    fit, rep = irls(sites, epsilon=1.0, delta=1e-6, n_iter=5, w_max=10.0, rng=0, fit_intercept=False)
    assert np.abs(fit.coef - [1.0, -1.0, 0.5]).max() < 0.25
    assert len(rep.parts) == 14 and len(fit.sampling) == 4  # 5 iterations' A and B, and the 4 sampling releases
    assert rep.composition == "zcdp" and fit.guarantee == rep.guarantee
    assert ANALYSES["regress"].composition == "zcdp"


def test_irls_across_sites_fits_the_intercept_of_one_machine():
    """The default intercept: each site appends the constant 0.5 R to its rows clipped to R, as PrivateIRLS does
    on one machine (whose audits cover that row bound); with the noise off the two fits agree, coefficients and
    intercept, an extreme row included."""
    from dpmoments.estimators import PrivateIRLS

    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 2)) / 4
    y = X @ np.array([1.0, -0.5]) + 0.4 + 0.05 * rng.standard_t(2, size=3000)
    X[7], y[7] = [1e6, -1e6], 1e6  # clipped the same way: the formed row (x clipped to R, 0.5 R) is one machine's
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit, _ = irls(_split(X, y, row_norm=1.0, response_bound=2.0), epsilon=INF, delta=0.5, n_iter=6, w_max=10.0)
        across = PrivateIRLS(epsilon=None, delta=None, n_iter=6, w_max=None).fit_release(fit)
        alone = PrivateIRLS(epsilon=INF, delta=0.5, row_norm=1.0, response_bound=2.0, n_iter=6, w_max=10.0,
                            sampling_budget=0.0).fit(X, y)
    assert fit.intercept_scale == pytest.approx(0.5) and across.intercept_fitted_
    np.testing.assert_allclose(across.coef_, alone.coef_, atol=1e-8)
    assert across.intercept_ == pytest.approx(alone.intercept_, abs=1e-8) and abs(across.intercept_ - 0.4) < 0.05


def _irls_sites(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(5000, 3)) / 2
    y = X @ np.array([1.0, -0.5, 0.0]) + 0.1 * rng.standard_t(2, size=5000)
    return _split(X, y, row_norm=2.0, response_bound=2.0)


def _irls_fit(sites, rng):
    from dpmoments.estimators import PrivateIRLS

    fit, rep = api.irls(sites, epsilon=1.0, delta=1e-6, n_iter=3, w_max=10.0, rng=rng, fit_intercept=False,
                        sampling_budget=None)  # the noise-only path: each iteration's noise passed on undamped
    est = PrivateIRLS(epsilon=None, delta=None, row_norm=None, response_bound=None, n_iter=3, w_max=None)
    return fit, rep, est.fit_release(fit)


def test_irls_across_sites_has_standard_errors_that_match_its_noise():
    # Before, multi-site regress printed bare coefficients: no standard error said how much was noise.
    sites = _irls_sites(0)
    fit, rep, est = _irls_fit(sites, 1)
    np.testing.assert_array_equal(est.coef_, fit.coef)
    assert est.privacy_ == rep.guarantee and est.privacy_report_["fitted_by"] == "fit_release"
    assert np.all(est.coef_se_ > 0) and est.coef_interval_.shape == (2, 3) and est.snr_ > 1
    fits = [_irls_fit(sites, 100 + k)[2] for k in range(40)]  # ratios 2.52, 1.66, 1.76 (2.51, 1.75, 1.92 at 60)
    spread = np.std([f.coef_ for f in fits], axis=0, ddof=1)
    reported = np.mean([f.coef_se_ for f in fits], axis=0)
    # Without the sampling releases nothing estimates the IRLS map's contraction: each of the 3
    # iterations' noise is passed on undamped (each at its own iterate): conservative, never below the spread
    assert np.all((0.7 < reported / spread) & (reported / spread < 3.0)), reported / spread


def test_irls_fit_release_refuses_what_it_cannot_read():
    from dpmoments.estimators import PrivateIRLS

    est = PrivateIRLS(epsilon=1, delta=1e-6, row_norm=1, response_bound=1, n_iter=2, w_max=5)
    with pytest.raises(TypeError, match="IRLSFit"):
        est.fit_release(np.zeros(3))
    fit, _ = api.irls(_irls_sites(0), epsilon=1.0, delta=1e-6, n_iter=2, w_max=10.0, rng=0, fit_intercept=False)
    # the run's rows decide: fit_intercept is not applied to a run without the sites' constant column
    assert est.set_params(fit_intercept=True).fit_release(fit).intercept_ == 0.0


def test_a_failed_fit_release_leaves_the_estimator_as_it_was():
    # (review7) Model selection's fit_release had lost all_or_nothing (it sat on a helper instead): a bad phi
    # left R_ and sigma2_ set on an unfitted estimator. PrivateIRLS.fit_release never had it: a fit without
    # n_psd_clipped left coef_ set.
    from types import SimpleNamespace

    from dpmoments.estimators import PrivateIRLS

    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(3000, 3)) / 2
    rel, _ = api.analyse(_split(X, X[:, 0], row_norm=2.0, response_bound=2.0), "select", epsilon=1.0, delta=1e-6,
                         rng=0)
    sel = PrivateModelSelection(epsilon=1.0, bounds=1.0, response_bound=2.0, R=3.0, phi=-1.0)
    with pytest.raises(ValueError, match="'phi'"):
        sel.fit_release(rel)
    assert not [k for k in vars(sel) if k.endswith("_")]
    fit, _ = api.irls(_irls_sites(0), epsilon=1.0, delta=1e-6, n_iter=2, w_max=10.0, rng=0)
    est = PrivateIRLS(epsilon=None, delta=None, row_norm=None, response_bound=None, n_iter=2, w_max=None)
    with pytest.raises(TypeError):
        est.fit_release(SimpleNamespace(**{**vars(fit), "n_psd_clipped": None}))
    assert not [k for k in vars(est) if k.endswith("_")]
