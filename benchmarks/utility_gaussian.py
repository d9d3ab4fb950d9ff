"""Utility designs on Gaussian rows: covariance (Wang et al.), graphical lasso (Su et al.), PCA (Imtiaz & Sarwate).

The exact second moment of ``n`` Gaussian rows ``N(0, Sigma)`` is
``L W L^T / n`` with ``W ~ W_d(n, I)`` (drawn by the library's Bartlett
sampler), so ``n`` can reach 1e9 at the cost of one ``d x d`` draw. It is
released by :func:`release_from_exact`, the library's own calibration and
mechanisms applied to it, which :func:`check_release_from_exact` compares with
:func:`dpmoments.release_second_moment` on real rows. The public bounds are
chosen so that a row is clipped with probability below 1e-5 (stated per
design), which is what lets the exact moment follow the Wishart law.
"""

import functools
import math

import numpy as np

from dpmoments import Release
from dpmoments.datasets import su_model
from dpmoments.estimators import PrivateCovariance, PrivateGraphicalLasso, PrivatePCA
from dpmoments.mechanisms import symmetric_matrix_noise, wishart_noise
from dpmoments.metrics import auc, roc_curve
from dpmoments.moments import moment_sensitivity, release_second_moment
from dpmoments.privacy import ApproxDP, PureDP, calibrate_gaussian, calibrate_laplace
from dpmoments.privacy.wishart import wishart_degrees_of_freedom
from dpmoments.solvers import graphical_lasso, graphical_lasso_path

from .utility import DELTA, EPSILON, Analysis, Method, geometric

MECHANISMS = {  # label, guarantee, library mechanism
    "ours": ("ours: Gaussian, analytic calibration", "(1, 1e-06)-DP", "gaussian"),
    "laplace": ("Laplace (papers' pure-DP mechanism)", "1-DP", "laplace"),
    "wishart": ("Wishart W(k, R²/n·I), k certified (real guarantee)", "(1, 1e-06)-DP", "wishart-approx"),
}


@functools.lru_cache(maxsize=None)
def _wishart_df(d):
    return wishart_degrees_of_freedom(d, EPSILON, DELTA, "replace-one")  # depends on d only (scale R^2/n)


def exact_second_moment(L, n, seed):
    """(1/n) sum of x x^T over n rows N(0, L L^T): L W_d(n, I) L^T / n."""
    gen = np.random.default_rng([n, seed, L.shape[0]])
    return L @ wishart_noise(L.shape[0], n, 1.0, gen) @ L.T / n


def release_from_exact(S, n, mechanism, row_norm, seed):
    """The release :func:`dpmoments.release_second_moment` would make of rows whose exact moment is ``S``."""
    d, gen = S.shape[0], np.random.default_rng([n, seed, 7])
    common = dict(n=n, n_features=d, row_norm=row_norm, neighbours="replace-one", randomness="seeded")
    if mechanism == "none":
        return Release(second_moment=S, mechanism="none", noise_scale=0.0, guarantee=PureDP(math.inf), **common)
    if mechanism == "wishart-approx":
        df, scale = _wishart_df(d), row_norm**2 / n
        return Release(second_moment=S + wishart_noise(d, df, scale, gen), mechanism=mechanism, noise_scale=scale,
                       noise_df=df, guarantee=ApproxDP(EPSILON, DELTA), **common)
    norm = "l2" if mechanism == "gaussian" else "l1"
    sens = moment_sensitivity("second", norm=norm, n_samples=n, n_features=d, neighbours="replace-one",
                              row_norm=row_norm)
    scale, guarantee = (calibrate_gaussian(EPSILON, DELTA, sens, "analytic") if mechanism == "gaussian"
                        else calibrate_laplace(EPSILON, sens))
    noisy = S + symmetric_matrix_noise(d, scale, gen, distribution=mechanism)
    return Release(second_moment=noisy, mechanism=mechanism, noise_scale=scale, sensitivity=sens,
                   sensitivity_norm=norm, guarantee=guarantee,
                   calibration="analytic" if mechanism == "gaussian" else None, **common)


def check_release_from_exact():
    """The same noise law and guarantee as the library's release of real rows (raises if they drift apart)."""
    X = np.random.default_rng(0).normal(size=(2000, 4)) / 4
    for mechanism in ("gaussian", "laplace", "wishart-approx"):
        lib = release_second_moment(X, epsilon=EPSILON, delta=DELTA, row_norm=1.0, mechanism=mechanism, rng=0, center=None)
        ours = release_from_exact(lib.second_moment, 2000, mechanism, 1.0, 0)
        same = (lib.noise_scale, lib.noise_df, str(lib.guarantee), lib.sensitivity) == \
            (ours.noise_scale, ours.noise_df, str(ours.guarantee), ours.sensitivity)
        if not same:
            raise AssertionError(f"release_from_exact drifted from release_second_moment for {mechanism!r}")


def _methods(fit, grid, reps, keys=("ours", "laplace", "wishart")):
    return [Method(MECHANISMS[k][0], MECHANISMS[k][1], functools.partial(fit, mechanism=MECHANISMS[k][2]),
                   grid, reps) for k in keys]


# -- covariance: Wang, Huai & Xu's substitute design --------------------------------------------------------------
def _covariance(quick):
    d = 20
    sigma = np.linalg.inv(su_model(3, d))
    sigma_x = 0.25 * sigma / np.trace(sigma)  # x = 0.5 z / sqrt(tr Sigma): typical norm 0.5, bound R = 1
    L = np.linalg.cholesky(sigma_x)
    ref = np.linalg.norm(sigma_x)

    def fit(n, seed, mechanism="none"):
        rel = release_from_exact(exact_second_moment(L, n, seed), n, mechanism, 1.0, seed)
        est = PrivateCovariance(epsilon=EPSILON, delta=DELTA, row_norm=1.0).fit_release(rel)
        return float(np.linalg.norm(est.covariance_ - sigma_x) / ref)

    grid = geometric(1e3, 1e7 if quick else 1e9)
    return Analysis("covariance", "relative Frobenius error ‖Σ̂ − Σ‖/‖Σ‖", False, fit, 20,
                    _methods(fit, grid, 5 if quick else 20),
                    "Wang et al. (substitute, as benchmarks/results/wang.md): Θ = AR(2) (Su's Model 3), d = 20, "
                    "x = 0.5·z/√tr Σ, R = 1 (clipping probability 1.5e-6 per row); PrivateCovariance defaults "
                    "(PSD projection)")


# -- graphical lasso: Su, Guo & Zhang's Model 3 -------------------------------------------------------------------
def _path_auc(S, truth):
    """ROC AUC of support recovery along 30 penalties from max |S_ij| down to 1/1000 of it (as reproduce/roc.py)."""
    off = np.abs(S - np.diag(np.diag(S)))
    alphas = np.geomspace(off.max(), off.max() / 1000, 30)
    fits = graphical_lasso_path(S, alphas)
    return auc(*roc_curve([f.precision for f in fits], truth))


def _glasso(quick):
    p = 20
    theta = su_model(3, p)
    sigma = np.linalg.inv(theta)
    scale = 4.0 * np.trace(sigma)  # x = z / (2 sqrt(tr Sigma)): bound R = 1 is 2x the typical norm
    L, theta_x = np.linalg.cholesky(sigma / scale), theta * scale
    truth = (np.abs(theta) > 0) & ~np.eye(p, dtype=bool)
    ref = np.linalg.norm(theta_x)
    kw = dict(epsilon=EPSILON, delta=DELTA, row_norm=1.0)

    def release(n, seed, mechanism):
        return release_from_exact(exact_second_moment(L, n, seed), n, mechanism, 1.0, seed)

    def auc_fit(n, seed, mechanism="none"):
        return _path_auc(release(n, seed, mechanism).project_psd(0.0).second_moment, truth)

    def loss_fit(n, seed, mechanism="none"):
        est = PrivateGraphicalLasso(alpha="ebic", **kw).fit_release(release(n, seed, mechanism))
        return float(np.linalg.norm(est.precision_ - theta_x) / ref)

    alpha = 0.1 * 0.5**2 / p  # Wang et al.'s public penalty rule rho = 0.1 r^2 / d (as reproduce/wang.py; r = 0.5)
    output = _output_perturbation(L, theta_x, truth, alpha, ref)
    grid, reps = geometric(1e3, 1e7 if quick else 1e10), 4 if quick else 10
    out_label = "output perturbation (Wang et al. Alg. 1)"
    out_guarantee = "UNCERTIFIED claim of 1-DP"
    design = ("Su et al. Model 3 (AR(2)), p = 20, x = z/(2√tr Σ), R = 1 (clipping probability 1.5e-6 per row); "
              "truth: the model's support / precision of the scaled rows")
    return [
        Analysis("graphical lasso: ROC AUC", "AUC of the 30-penalty path (as reproduce/roc.py)", True, auc_fit, 10,
                 _methods(auc_fit, grid, reps) + [Method(out_label, out_guarantee, output[0], grid, reps,
                                                         "AUC by thresholding |partial correlations|")],
                 design),
        Analysis("graphical lasso: F-loss", "‖Θ̂ − Θ‖_F/‖Θ‖_F at the eBIC penalty (library default)", False,
                 loss_fit, 10, _methods(loss_fit, grid, reps) + [
                     Method(out_label, out_guarantee, output[1], grid, reps,
                            f"public penalty ρ = 0.1 r²/d = {alpha:.3g} (reproduce/wang.py's rule, r = 0.5 the "
                            "typical row norm)")], design),
    ]


def _output_perturbation(L, theta_x, truth, alpha, ref):
    """Wang et al.'s Algorithm 1 as PrivateGraphicalLasso(mechanism='output') computes it, from the exact moment."""
    d = L.shape[0]

    def noisy(n, seed):
        exact = graphical_lasso(exact_second_moment(L, n, seed), alpha, max_iter=1000).precision
        scale = d**2.5 / (n * EPSILON * alpha**2)
        W = wishart_noise(d, d + 1, scale, np.random.default_rng([n, seed, 11]))
        return exact + 0.5 * (W + W.T)

    def auc_fit(n, seed):
        P = noisy(n, seed)
        partial = np.abs(P / np.sqrt(np.outer(np.abs(np.diag(P)), np.abs(np.diag(P)))))
        levels = np.unique(partial[np.triu_indices(d, 1)])
        return auc(*roc_curve([partial > t for t in levels[::max(1, levels.size // 60)]], truth))

    def loss_fit(n, seed):
        return float(np.linalg.norm(noisy(n, seed) - theta_x) / ref)

    return auc_fit, loss_fit


# -- PCA: Imtiaz & Sarwate's capePCA synthetic design -------------------------------------------------------------
def _pca(quick):
    D, K = 200, 50
    a = np.r_[np.linspace(10, 1, K), 0.5 * np.random.default_rng(20240611).random(D - K)]
    R = 1.5 * math.sqrt(a.sum())
    L = np.diag(np.sqrt(a))
    top = np.sort(a)[::-1][:K].sum()

    def fit(n, seed, mechanism="none"):
        rel = release_from_exact(exact_second_moment(L, n, seed), n, mechanism, R, seed)
        est = PrivatePCA(n_components=K, epsilon=EPSILON, delta=DELTA, row_norm=R).fit_release(rel)
        V = est.components_.T
        return float(np.sum(a[:, None] * V**2))  # tr(V^T A V)

    grid = geometric(1e3, 1e7 if quick else 1e10)
    return Analysis("PCA", f"captured variance tr(VᵀAV) (max {top:.1f})", True, fit, 5,
                    _methods(fit, grid, 3 if quick else 5),
                    f"capePCA synthetic: D = 200, K = 50, A = diag(linspace(10, 1, 50), 0.5·U(0,1)^150), "
                    f"R = 1.5·√tr A = {R:.1f} (clipping probability 2e-6 per row, measured)")


def analyses(quick=False):
    check_release_from_exact()
    return [_covariance(quick), *_glasso(quick), _pca(quick)]
