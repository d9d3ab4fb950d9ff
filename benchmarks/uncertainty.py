"""What uncertainty costs: the closed forms and one bootstrap draw, against the fit itself.

For each estimator, ``fit_release`` (or ``fit``) is timed with ``n_draws=0`` (closed forms and
noise checks: the default) and with ``n_draws=20``, in turns; the tables give the per-draw cost
as a multiple of the plain fit, measured in the same run. The closed forms' own cost is the
difference between ``n_draws=0`` now and the fit before this change: one extra eigendecomposition
at most (PCA: a full ``eigvalsh``), shown against a bare ``eigh`` of the same matrix.

``python -m benchmarks uncertainty [--quick]`` writes ``benchmarks/results/uncertainty.md``.
"""

import warnings

import numpy as np

from dpmoments import release_second_moment
from dpmoments.datasets import su_model
from dpmoments.datasets.mixtures import make_mog
from dpmoments.estimators import (PrivateGraphicalLasso, PrivateIRLS, PrivatePCA, PrivateRidgePrecision,
                                  PrivateTensorDecomposition, release_mog_moments)

from .timing import Table, best_of_each, log

DRAWS = 20
KW = dict(epsilon=1.0, delta=1e-6, row_norm=1.0)


def _second_moment(d, n=50_000):
    X = np.random.default_rng(0).standard_normal((n, d)) @ np.linalg.cholesky(np.linalg.inv(su_model(3, d))).T
    X /= 2 * np.sqrt(np.trace(np.linalg.inv(su_model(3, d))))
    return release_second_moment(X, rng=0, **KW, center=None)


def _cases(quick):
    dims = (20, 50) if quick else (20, 100, 200)
    for d in dims:
        rel = _second_moment(d)
        k = max(2, d // 10)
        yield f"PCA d = {d}, k = {k}", lambda nd, rel=rel, k=k: PrivatePCA(
            n_components=k, n_draws=nd, rng=0, **KW).fit_release(rel)
        yield f"graphical lasso (eBIC) p = {d}", lambda nd, rel=rel: PrivateGraphicalLasso(
            alpha="ebic", n_draws=nd, rng=0, **KW).fit_release(rel)
        yield f"ridge precision p = {d}", lambda nd, rel=rel: PrivateRidgePrecision(
            alpha=0.01, n_draws=nd, rng=0, **KW).fit_release(rel)
    gen = np.random.default_rng(1)
    X = gen.standard_normal((20_000, 10)) / 8
    y = X @ gen.standard_normal(10) + 0.01 * gen.standard_normal(20_000)
    yield "IRLS d = 10, n = 2e4, J = 5 (fit)", lambda nd: PrivateIRLS(
        response_bound=1.0, n_iter=5, w_max=10.0, fit_intercept=False, target="sample", n_draws=nd, rng=0,
        **KW).fit(X, y)
    m = make_mog(20_000, 10, 5, sigma2=0.05, rng=0)
    moments = release_mog_moments(m.X, sigma2=0.05, epsilon=1.0, delta=1e-6, row_norm=1.84, rng=0)
    yield "tensor MOG D = 10, K = 5", lambda nd: PrivateTensorDecomposition(
        n_components=5, model="mog", sigma2=0.05, n_draws=nd, rng=0, **{**KW, "row_norm": 1.84}).fit_release(moments)


def run(quick=False):
    """Per-draw cost of the parametric bootstrap, as a multiple of the fit."""
    table = Table(title=f"Cost of uncertainty: the fit with n_draws = 0 (closed forms) and {DRAWS}",
                  columns=["estimator", "fit, n_draws = 0 (s)", f"fit, n_draws = {DRAWS} (s)", "one draw (ms)",
                           "one draw / one fit"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, fit in _cases(quick):
            log(label)
            best, _ = best_of_each({"plain": lambda: fit(0), "boot": lambda: fit(DRAWS)}, repeat=3, min_total=0.5,
                                   max_repeat=5)
            per_draw = (best["boot"] - best["plain"]) / DRAWS
            ratio = per_draw / best["plain"]
            table.rows.append([label, f"{best['plain']:.4f}", f"{best['boot']:.3f}", f"{1e3 * max(per_draw, 0):.2f}",
                               f"{ratio:.2f}×" if ratio >= 0.01 else "< 0.01×"])
    table.notes = ["'one draw / one fit' = (time with the draws − time without) / draws / time without, from "
                   "the fastest of at least 3 turns each; IRLS's fit includes its 5 passes over the data, which "
                   "a draw does not repeat (a draw is one 11 x 11 solve, below the timing's resolution here).",
                   "The closed forms (n_draws = 0) are part of the first column: at most one extra "
                   "eigendecomposition of the released matrix."]
    return [table]
