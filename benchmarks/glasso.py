"""Graphical lasso: the fast solver against ADMM and scikit-learn, at equal accuracy.

AR(2) precision (θ_ii = 1, θ_{i,i±1} = 0.5, θ_{i,i±2} = 0.25), S from n = 10p
Gaussian samples, λ = 0.1. Every solver is judged by the relative objective gap
``(f - f*) / |f*|`` against a reference ``f*`` from our fast solver at a
duality-gap tolerance of 1e-13 (the duality gap certifies it). Targets
(the project's speed targets): at gap ≤ 1e-7, ≤ 0.3× scikit-learn's
``graphical_lasso`` (cd, tol = enet_tol = 1e-7) and QUIC-class (QUIC measured
earlier on these machines: 0.005 / 0.26 / 1.05–1.5 / 8.5 s at p = 100 / 500 /
1000 / 2000); a 20-value λ path ≤ 5× one solve (dense and ``sparse=True``, beside the one
``PrivateGraphicalLasso`` runs).

``python -m benchmarks glasso [--quick]`` (or ``python -m benchmarks.glasso``).
"""

import os
import sys
import time
import warnings

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from dpmoments.estimators.precision import SPARSE_PATH_FROM  # noqa: E402
from dpmoments.solvers import (glasso_objective, graphical_lasso, graphical_lasso_admm,  # noqa: E402
                               graphical_lasso_path)

from .timing import Table, best_of_each, log, ratio  # noqa: E402

ALPHA = 0.1
QUICK_SIZES = [100, 300]
SIZES = [100, 500, 1000, 2000]
# scikit-learn's sweep cap per p (its cd needs O(p^3) per sweep and at tol 1e-7 it often never meets its
# own dual-gap test, running every sweep; the cap keeps the benchmark bounded and is reported)
SK_MAX_ITER = {100: 100, 300: 100, 500: 100, 1000: 20, 2000: 5}
ADMM_MAX_P = 500  # ADMM needs one eigh per iteration and ~500 iterations at ρ = 100: p = 1000 takes minutes
QUIC_SECONDS = {100: "0.005", 500: "0.26", 1000: "1.05–1.5", 2000: "8.5"}
PATH_TARGET = 5.0  # the 20-value warm path against one cold solve (issue 18)
PATH_ROUNDS = 5  # rounds of (one solve, dense path, sparse path), taken in turns; the fastest of each


def ar2_cov(p, seed=0):
    T = (np.eye(p) + 0.5 * (np.eye(p, k=1) + np.eye(p, k=-1)) + 0.25 * (np.eye(p, k=2) + np.eye(p, k=-2)))
    L = np.linalg.cholesky(np.linalg.inv(T))
    X = np.random.default_rng(seed).standard_normal((10 * p, p)) @ L.T
    return X.T @ X / (10 * p)


def _time(fn, p):
    """Best of a few calls for small p, one call for large p. Returns (seconds, last result)."""
    out = {}

    def call():
        out["r"] = fn()

    if p <= 300:
        best, _ = best_of_each({"f": call}, repeat=3, min_total=0.5, max_repeat=10)
        return best["f"], out["r"]
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0, out["r"]


def _gap(f, ref):
    return f"{max((f - ref) / abs(ref), 0.0):.1e}" if np.isfinite(f) else "inf (not PD)"


def _sklearn(S, p):
    try:
        from sklearn.covariance import graphical_lasso as sk_glasso
    except ImportError:  # pragma: no cover
        return None

    def run():
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            _, P, n_iter = sk_glasso(S, ALPHA, mode="cd", tol=1e-7, enet_tol=1e-7,
                                     max_iter=SK_MAX_ITER.get(p, 100), return_n_iter=True)
        return 0.5 * (P + P.T), n_iter, any("converge" in str(x.message) for x in w)

    return run


def _path_row(S, p):
    """One solve, the dense and the sparse 20-value path, timed in turns; the row of the path table.

    Each call is timed by the wall clock and by this thread's CPU time (the solver is single-threaded
    at one BLAS thread, so on an idle machine the two agree; on a shared one the CPU time leaves out the
    time other processes held the core, which inflates a long call more than a short one).
    """
    off = np.abs(S - np.diag(np.diag(S))).max()
    alphas = np.geomspace(off, ALPHA, 20)
    calls = {"one": lambda: graphical_lasso(S, ALPHA), "dense": lambda: graphical_lasso_path(S, alphas),
             "sparse": lambda: graphical_lasso_path(S, alphas, sparse=True)}
    wall, cpu, out = {k: np.inf for k in calls}, {k: np.inf for k in calls}, {}
    for _ in range(PATH_ROUNDS):
        for name, fn in calls.items():
            t0, c0 = time.perf_counter(), time.thread_time()
            out[name] = fn()
            cpu[name] = min(cpu[name], time.thread_time() - c0)
            wall[name] = min(wall[name], time.perf_counter() - t0)
    dense, thin = out["dense"], out["sparse"]
    worst = max(r.duality_gap / abs(r.objective) for r in dense + thin)
    diff = max(float(np.abs(d.precision - t.precision.toarray()).max()) for d, t in zip(dense, thin))
    mine = "sparse" if p >= SPARSE_PATH_FROM else "dense"
    ours = cpu[mine] / cpu["one"]

    def cell(name):
        return f"{cpu[name] / cpu['one']:.2f}× ({wall[name] / wall['one']:.2f}×)"

    return [p, f"{cpu['one']:.3f} s ({wall['one']:.3f} s)", f"{cpu['dense']:.3f} s ({wall['dense']:.3f} s)",
            cell("dense"), f"{cpu['sparse']:.3f} s ({wall['sparse']:.3f} s)", cell("sparse"),
            f"{ours:.2f}× ({mine}){'' if ours <= PATH_TARGET else ' not met'}",
            sum(r.n_iter for r in thin), f"{worst:.1e}", f"{diff:.1e}"]


def run(quick=False):
    """Graphical lasso: fast solver vs ADMM vs scikit-learn, AR(2), λ = 0.1, equal accuracy."""
    sizes = QUICK_SIZES if quick else SIZES
    sk_table = Table(
        "Diagonal excluded (scikit-learn's convention): time and relative objective gap",
        ["p", "ours (tol 1e-7)", "ours gap", "sklearn cd (tol 1e-7)", "sklearn gap", "sklearn sweeps",
         "ours / sklearn", "QUIC (earlier, s)"])
    paper_table = Table(
        "Diagonal penalised (the papers' convention): fast solver vs Boyd's ADMM",
        ["p", "blocks", "ours (tol 1e-7)", "ours gap", "ADMM ρ=100 (paper)", "its gap / iters",
         "ADMM tuned", "its gap / iters", "ADMM paper / ours", "ADMM tuned / ours"])
    path_table = Table(
        "20-value λ path (geometric, from max|S_ij| (i≠j) down to 0.1, warm starts) vs one cold solve at 0.1",
        ["p", "one solve", "dense path", "dense / one", "sparse=True path", "sparse / one",
         f"estimator's path / one (target ≤ {PATH_TARGET:g}×)", "sweeps (20 λ)", "worst gap on the path",
         "max |dense − sparse| entry"])
    for p in sizes:
        S = ar2_cov(p)
        log(f"p = {p}: references")
        ref_sk = graphical_lasso(S, ALPHA, penalize_diagonal=False, tol=1e-13, max_iter=200).objective
        ref_pen = graphical_lasso(S, ALPHA, tol=1e-13, max_iter=200)

        # ---- scikit-learn's convention
        log(f"p = {p}: ours vs sklearn")
        t_ours, r = _time(lambda: graphical_lasso(S, ALPHA, penalize_diagonal=False), p)
        row = [p, f"{t_ours:.3f} s", _gap(r.objective, ref_sk)]
        skrun = _sklearn(S, p)
        if skrun is None:
            row += ["not installed", "", "", ""]
        else:
            t_sk, (P, n_iter, warned) = _time(skrun, p)
            f_sk = glasso_objective(S, P, ALPHA, penalize_diagonal=False)
            capped = f" (cap {SK_MAX_ITER.get(p, 100)}, not converged)" if warned else ""
            row += [f"{t_sk:.3f} s", _gap(f_sk, ref_sk), f"{n_iter}{capped}", ratio(t_ours, t_sk)]
        row.append(QUIC_SECONDS.get(p, ""))
        sk_table.rows.append(row)

        # ---- the papers' convention
        log(f"p = {p}: ours vs ADMM")
        t_pen, r = _time(lambda: graphical_lasso(S, ALPHA), p)
        row = [p, r.n_blocks, f"{t_pen:.3f} s", _gap(r.objective, ref_pen.objective)]
        if p <= ADMM_MAX_P:
            t_a, a = _time(lambda: graphical_lasso_admm(S, ALPHA, rho=100.0), p)
            t_b, b = _time(lambda: graphical_lasso_admm(S, ALPHA, rho=1.0, abs_tol=1e-7, rel_tol=1e-7,
                                                        over_relaxation=1.6, residual_balancing=True,
                                                        max_iter=500), p)
            row += [f"{t_a:.3f} s", f"{_gap(a.objective, ref_pen.objective)} / {a.n_iter}",
                    f"{t_b:.3f} s", f"{_gap(b.objective, ref_pen.objective)} / {b.n_iter}",
                    ratio(t_a, t_pen), ratio(t_b, t_pen)]
        else:
            row += ["skipped (eigh per iteration)", "", "", "", "", ""]
        paper_table.rows.append(row)

        # ---- the path
        log(f"p = {p}: path")
        path_table.rows.append(_path_row(S, p))
    sk_table.notes += [
        "gap = (f − f*)/|f*|, f* from our solver at duality-gap tol 1e-13; ours stops on a relative duality gap "
        "of 1e-7, which bounds its gap.",
        "sklearn: mode='cd', tol=enet_tol=1e-7; its sweeps are capped per p (100 up to p = 500, 20 at 1000, "
        "5 at 2000) to bound the run; a capped, non-converged run is marked and its time is a lower bound.",
        "QUIC column: times measured in an earlier session on a machine like this one, not in this run.",
    ]
    paper_table.notes += [
        "ADMM paper: ρ = 100, ε_abs = 1e-4, ε_rel = 1e-2 (Boyd's stopping rule, docs/algorithms.md §5.4); ADMM tuned: "
        "ρ₀ = 1, residual balancing, over-relaxation 1.6, ε_abs = ε_rel = 1e-7, ≤ 500 iterations.",
        f"ADMM is skipped above p = {ADMM_MAX_P} (one full eigendecomposition per iteration).",
    ]
    path_table.notes += [
        "Large λ split into many blocks by the exact screening, so they are cheap; the path is solved largest λ "
        "first, each warm started from the previous one. Diagonal penalised, tol 1e-7.",
        f"Timing: {PATH_ROUNDS} rounds of (one solve, dense path, sparse path) taken in turns, the fastest call "
        "of each. Times are CPU seconds of the solving thread, wall seconds in brackets; ratios likewise. On this "
        "shared 2-core machine a 20-penalty path is interrupted by other processes far more often than a single "
        "solve 5× shorter, so wall-clock ratios drift upward with load; the CPU-time ratio is the work ratio "
        "(the solver is single-threaded at one BLAS thread, so on an idle machine the two agree).",
        f"The estimator's path: `PrivateGraphicalLasso` runs `sparse=True` from p = {SPARSE_PATH_FROM} "
        "(`SPARSE_PATH_FROM`), the dense path below; its ratio is the one the target is about.",
        "worst gap: the largest certified relative duality gap over the 20 penalties (each ≤ tol 1e-7 "
        "bounds the relative suboptimality); the last column: the largest |entry| difference between the dense "
        "and the sparse path's precisions over all penalties (the same iterates, so 0).",
    ]
    return [sk_table, paper_table, path_table]


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    tables = run(quick=quick)
    print("\n\n".join(t.markdown() for t in tables))
