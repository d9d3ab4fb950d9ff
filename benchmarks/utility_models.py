"""Utility designs on real rows: tensor mixtures (Imtiaz & Sarwate), IRLS (Park & Welling), selection (Lei et al.)."""

import functools
import math

import numpy as np

from dpmoments.datasets.mixtures import make_mog, make_single_topic
from dpmoments.estimators import PrivateIRLS, PrivateModelSelection, PrivateTensorDecomposition
from dpmoments.reproduce.cape import q_comp
from dpmoments.reproduce.park_welling import D as PW_D, NOISE_VAR, SX, SY

from .utility import DELTA, EPSILON, N_REF, Analysis, Method, geometric

TENSOR_NOTE = ("the papers' mechanism for tensors is this Gaussian one (AGN); they have no Laplace, Wishart or "
               "output-perturbation variant of it")


# -- tensor mixtures: capeAGN's synthetic MOG and single-topic designs ---------------------------------------------
def _tensor(model, quick):
    D, K, sigma2 = 10, 5, 0.05
    R = 1.5 * math.sqrt(1.0 + sigma2 * D)

    def data(n, seed):
        gen = np.random.default_rng([n, seed, 3])
        return make_mog(n, D, K, sigma2=sigma2, rng=gen) if model == "mog" else make_single_topic(n, D, K, rng=gen)

    def fit(n, seed, epsilon=EPSILON):
        m = data(n, seed)
        kw = dict(sigma2=sigma2, row_norm=R) if model == "mog" else dict(vocabulary_size=D)
        est = PrivateTensorDecomposition(n_components=K, model=model, epsilon=epsilon, delta=DELTA, rng=seed, **kw)
        return q_comp(est.fit(m.X).components_, m.components, model)

    top = 1e6 if model == "mog" else 3e6
    grid, reps = geometric(1e3, top / 10 if quick else top), 3 if quick else 5
    name = "MOG tensor" if model == "mog" else "topic (STM) tensor"
    design = (f"capeAGN synthetic {model.upper()}: D = 10, K = 5" +
              (f", σ² = 0.05 (public), R = 1.5·√(1 + σ²D) = {R:.2f}, budget (0.5, 0.5)" if model == "mog"
               else ", three words per document, budget (0.5, 0.5)"))
    return Analysis(name, "q_comp = mean distance to the nearest true component (as reproduce/cape.py)", False,
                    functools.partial(fit, epsilon=math.inf), reps,
                    [Method("ours: Gaussian (AGN), analytic calibration", "(1, 1e-06)-DP", fit, grid, reps,
                            TENSOR_NOTE)], design)


# -- IRLS: Park & Welling's LAD regression ------------------------------------------------------------------------
def irls_data(n, seed):
    """Park & Welling's design (reproduce/park_welling.py): a training set of n rows and a fresh test set of 10k."""
    gen = np.random.default_rng([n, seed, 5])
    theta = gen.standard_normal(PW_D)

    def rows(m):
        X = gen.standard_normal((m, PW_D))
        return X / SX, (X @ theta + math.sqrt(NOISE_VAR) * gen.standard_normal(m)) / SY

    return rows(n), rows(10_000)


def test_rmse(coef, test, intercept=0.0):
    X, y = test
    return float(np.sqrt(np.mean((y - X @ coef - intercept) ** 2)))


def _irls(quick):
    base = dict(delta=DELTA, row_norm=1.0, response_bound=1.0, n_iter=5, w_max=10.0, fit_intercept=False,
                target="sample")  # the setup this benchmark measured: no intercept, no sampling releases

    def fit(n, seed, epsilon=EPSILON, **kw):
        train, test = irls_data(n, seed)
        return test_rmse(PrivateIRLS(epsilon=epsilon, rng=seed, **base, **kw).fit(*train).coef_, test)

    grid, reps = geometric(1e3, 1e6 if quick else 1e7, per_decade=3), 3
    paper = functools.partial(fit, first_moment="laplace", second_moment="wishart", accounting="cdp-paper")
    return Analysis("IRLS (LAD regression)", "test RMSE (scaled y; noise floor 0.0079)", False,
                    functools.partial(fit, epsilon=math.inf), reps,
                    [Method("ours: Gaussian, zCDP accounting (defaults)", "(1, 1e-06)-DP", fit, grid, reps),
                     Method("paper: CDP + Laplace + Wishart", "UNCERTIFIED (no finite guarantee known)", paper,
                            grid, reps)],
                    "Park & Welling: d = 10, x ~ N(0, I), θ ~ N(0, I), y = xθ + N(0, 0.01), public scaling "
                    "x/(2√d), y/(4√d), clipped to ‖x‖ ≤ 1, |y| ≤ 1; J = 5, w_max = 10; a fresh test set of 10k rows")


# -- model selection: Lei et al.'s simulation ---------------------------------------------------------------------
def _selection(quick):
    beta = np.array([1.0, 1, 1, 0, 0, 0])

    def fit(n, seed, epsilon=EPSILON, **kw):
        gen = np.random.default_rng([n, seed, 9])
        X = gen.uniform(-1, 1, size=(n, 6))
        y = X @ beta + gen.standard_normal(n)
        sel = PrivateModelSelection(epsilon=epsilon, bounds=1.0, response_bound=4.0, R=3.0, rng=seed, **kw)
        return float(sel.fit(X, y).selected_ == (0, 1, 2))

    grid, reps = geometric(1e3, 1e5 if quick else 1e6), 10 if quick else 20
    return Analysis("model selection", "P(select the true model)", True, functools.partial(fit, epsilon=math.inf),
                    reps, [
                        Method("ours: report-noisy-min, φ = 8 log|M| Δ/ε (default)", "1-DP", fit, grid, reps),
                        Method("exponential mechanism, same φ", "1-DP", functools.partial(fit, mechanism="exponential"),
                               grid, reps),
                        Method("Lei et al.'s BIC-like φ = σ² log n (σ² = 1)", "1-DP",
                               functools.partial(fit, phi="bic"), geometric(1e3, 1e5), reps,
                               "the old default: its penalty is below the selection noise")],
                    "Lei et al.: β = (1, 1, 1, 0, 0, 0), X ~ U(−1, 1)^6, y = Xβ + N(0, 1), r = 4, R = 3, all 63 "
                    "subsets; non-private: the exact argmin with the BIC and the exact residual variance")


def analyses(quick=False):
    return [_tensor("mog", quick), _tensor("stm", quick), _irls(quick), _selection(quick)]


__all__ = ["analyses", "irls_data", "test_rmse", "N_REF"]
