"""Reproduce Su, Guo & Zhang (2019), Tables 1 (DP-RP / ROPE) and 2 (DP-AGL / graphical lasso).

``python -m dpmoments.reproduce.su [--quick] [--reps N] [--jobs J] [--out PATH]`` writes
``benchmarks/results/su.md``.

Settings (``docs/algorithms.md`` §5.6): p = 100, n ∈ {100, 200, 400}, ε ∈ {0.1, 0.3, 0.5, 0.8, 1.2, 2},
δ = 1/n, losses relative to the NON-PRIVATE estimate Θ̂ at the same λ (ℓ1 = max column sum,
Frobenius, spectral). λ by 5-fold CV of the non-private estimator's negative log-likelihood, as the
paper (this leaks λ), and by our private rule. Configurations:

* ``paper``: rows divided by the data's own max ℓ2 norm (``max_norm_scale``: data-dependent, it
  LEAKS, §0.6), classic calibration with sensitivity √2/n (uncertified at ε ≥ 1, §0.3);
* ``maxnorm+analytic``: the same data, analytic calibration (isolates the calibration);
* ``ours``: rows divided by a PUBLIC radius R = 1.2·√tr(Σ) fixed from the model before sampling,
  then clipped to ‖x‖ ≤ 1; analytic calibration, replace-one.
"""

import math
import time

import numpy as np

from ..datasets import max_norm_scale, sample_gaussian, su_model
from ..metrics import relative_loss
from ..moments import clip_rows, release_second_moment
from ..solvers import graphical_lasso, graphical_lasso_admm
from ..solvers.rope import ridge_precision
from ._common import SEED, cv_glasso, cv_rope, ebic_fit, fmt, main_for, md_table, parallel_map, quiet

__all__ = ["run", "main", "PAPER_T1", "PAPER_T2"]

NORMS = ("l1", "fro", "spectral")
R_FACTOR = 1.2
EPS_FULL = (0.1, 0.3, 0.5, 0.8, 1.2, 2.0)
N_FULL = (100, 200, 400)
P_FULL = 100
REPS_ROPE, REPS_GLASSO, REPS_ADMM = 50, 4, 2

# Paper means (docs/algorithms.md §5.6). Table 1: M1, M2, M3 (ℓ1, F, ℓ2); Table 2: M2, M3, M4.
_T1 = """100 0.1 2033.43 992.43 1952.80 2023.17 982.35 1937.40 2799.51 1397.73 2732.86
100 0.3 676.69 329.80 90.76 673.34 326.44 89.84 932.06 464.65 128.87
100 0.5 405.34 197.28 54.35 403.36 195.27 53.80 558.56 278.04 77.20
100 0.8 252.70 122.74 33.88 251.50 121.48 33.53 348.46 173.07 48.14
100 1.2 118.22 57.08 15.84 117.71 56.49 15.68 163.35 80.61 22.53
100 2 70.25 33.67 9.40 69.98 33.33 9.31 97.30 47.65 13.40
200 0.1 1640.76 773.12 1397.26 1639.64 782.21 1326.40 2634.83 1315.41 2277.36
200 0.3 545.36 256.42 70.62 544.96 259.44 71.45 876.13 436.65 121.23
200 0.5 326.27 153.08 42.24 326.02 154.89 42.74 524.37 260.90 72.56
200 0.8 203.03 94.97 26.28 202.85 96.09 26.59 326.49 162.05 45.18
200 1.2 94.44 43.78 12.22 94.34 44.31 12.37 152.20 74.99 21.06
200 2 55.70 25.55 7.20 55.63 25.86 7.29 90.01 43.97 12.46
400 0.1 1328.60 578.15 1040.17 1347.95 592.49 859.38 2589.53 1208.54 1934.99
400 0.3 440.65 191.07 52.75 447.01 195.82 54.04 859.69 400.10 111.19
400 0.5 263.04 113.67 31.49 266.81 116.50 32.26 513.76 238.43 66.43
400 0.8 163.13 70.14 19.53 165.43 71.89 20.00 319.19 147.51 41.25
400 1.2 75.09 31.83 9.00 76.12 32.63 9.21 147.72 67.46 19.08
400 2 43.70 18.21 5.24 44.27 18.67 5.37 86.54 38.97 11.18"""
_T2 = """100 0.1 82.90 9.45 26.23 80.19 9.45 26.09 67.15 9.42 26.02
100 0.3 27.27 2.98 0.83 26.45 2.99 0.83 22.18 2.98 0.83
100 0.5 16.31 1.75 0.48 15.87 1.75 0.48 13.32 1.75 0.48
100 0.8 10.22 1.08 0.28 9.98 1.09 0.29 8.39 1.09 0.29
100 1.2 4.85 0.52 0.12 4.80 0.52 0.12 4.05 0.53 0.12
100 2 2.88 0.31 0.07 2.89 0.32 0.07 2.46 0.32 0.07
200 0.1 44.10 4.91 13.68 42.76 4.91 13.61 36.09 4.90 13.59
200 0.3 14.61 1.55 0.42 14.23 1.56 0.42 12.03 1.56 0.42
200 0.5 8.83 0.93 0.24 8.63 0.94 0.24 7.31 0.94 0.24
200 0.8 5.57 0.59 0.14 5.48 0.59 0.14 4.65 0.59 0.14
200 1.2 2.61 0.28 0.06 2.62 0.29 0.06 2.23 0.29 0.06
200 2 1.52 0.16 0.03 1.56 0.17 0.04 1.34 0.17 0.04
400 0.1 23.31 2.52 6.98 22.74 2.52 6.95 19.29 2.52 6.94
400 0.3 7.87 0.83 0.21 7.72 0.83 0.21 6.57 0.83 0.21
400 0.5 4.79 0.50 0.12 4.72 0.51 0.12 4.02 0.51 0.12
400 0.8 3.00 0.32 0.07 2.98 0.32 0.07 2.55 0.32 0.07
400 1.2 1.37 0.15 0.03 1.40 0.15 0.03 1.21 0.15 0.03
400 2 0.79 0.09 0.02 0.83 0.09 0.02 0.72 0.09 0.02"""


def _parse(text, models):
    out = {}
    for line in text.splitlines():
        v = line.split()
        n, eps, vals = int(v[0]), float(v[1]), [float(x) for x in v[2:]]
        for j, m in enumerate(models):
            out[(m, n, eps)] = tuple(vals[3 * j:3 * j + 3])
    return out


PAPER_T1 = _parse(_T1, (1, 2, 3))
PAPER_T2 = _parse(_T2, (2, 3, 4))

ROPE_CONFIGS = ("paper", "maxnorm+analytic", "ours (CV λ)", "ours (private λ)")
GLASSO_CONFIGS = ("paper (ADMM ρ=100)", "paper (exact solver)", "maxnorm+analytic", "ours (CV λ)",
                  "ours (eBIC λ)")


def _losses(est, ref):
    return tuple(relative_loss(est, ref, norm) for norm in NORMS)


def _settings(quick):
    if quick:
        return dict(p=15, ns=(200,), eps=(0.5, 2.0), reps=(2, 1, 1), admm_iter=1000)
    return dict(p=P_FULL, ns=N_FULL, eps=EPS_FULL, reps=(REPS_ROPE, REPS_GLASSO, REPS_ADMM), admm_iter=1000)


def _model(k, p):
    return su_model(k, p, np.random.default_rng([SEED, k, p]))


def _release(X, eps, n, calibration, seed):
    return release_second_moment(X, epsilon=eps, delta=1.0 / n, row_norm=1.0, calibration=calibration,
                                 rng=np.random.default_rng(seed), center=None)


def _data(k, p, n, rep):
    """The paper's max-norm-scaled data and ours (public radius, clipped) from one Gaussian sample."""
    Theta = _model(k, p)
    rng = np.random.default_rng([SEED, k, p, n, rep])
    X = sample_gaussian(Theta, n, rng)
    R = R_FACTOR * math.sqrt(np.trace(np.linalg.inv(Theta)))  # public: fixed by the design, not the sample
    return {"maxnorm": max_norm_scale(X), "ours": clip_rows(X / R, 1.0)}, rng


def _rope_part(k, n, rep, s, data, rng):
    res = {}
    lam = {key: cv_rope(X, rng) for key, X in data.items()}
    ref = {key: ridge_precision(X.T @ X / n, lam[key]) for key, X in data.items()}
    for e_i, eps in enumerate(s["eps"]):
        seed = [SEED, 1, k, n, rep, e_i]
        for cfg, key, cal in (("paper", "maxnorm", "classic"), ("maxnorm+analytic", "maxnorm", "analytic"),
                              ("ours (CV λ)", "ours", "analytic")):
            rel = _release(data[key], eps, n, cal, seed)
            res[(cfg, eps)] = _losses(ridge_precision(rel.second_moment, lam[key]), ref[key])
            if cfg == "ours (CV λ)":
                # private λ: a public rule from the noise level alone, √(8λ) = E‖E‖₂ ≈ 2σ√p
                lam_priv = rel.noise_scale**2 * s["p"] / 2.0
                res[("ours (private λ)", eps)] = _losses(ridge_precision(rel.second_moment, lam_priv), ref[key])
    return res


def _glasso_part(k, n, rep, s, data, rng, admm):
    res, info = {}, {"admm_conv": [], "admm_vs_exact": [], "ebic_alpha_ratio": []}
    lam = {key: cv_glasso(X, rng) for key, X in data.items()}
    S = {key: X.T @ X / n for key, X in data.items()}
    ref = {key: graphical_lasso(S[key], lam[key], tol=1e-6).precision for key in data}
    if admm:
        ref_admm = graphical_lasso_admm(S["maxnorm"], lam["maxnorm"], rho=100.0, max_iter=s["admm_iter"])
        info["admm_conv"].append(ref_admm.converged)
        info["admm_vs_exact"].append(relative_loss(ref_admm.precision, ref["maxnorm"], "fro"))
    for e_i, eps in enumerate(s["eps"]):
        seed = [SEED, 2, k, n, rep, e_i]
        for cfg, key, cal in (("paper (exact solver)", "maxnorm", "classic"), ("maxnorm+analytic", "maxnorm", "analytic"),
                              ("ours (CV λ)", "ours", "analytic")):
            rel = _release(data[key], eps, n, cal, seed)
            if admm and cfg == "paper (exact solver)":  # the paper: ADMM on the raw (indefinite) S̃
                fit = graphical_lasso_admm(rel.second_moment, lam[key], rho=100.0, max_iter=s["admm_iter"])
                info["admm_conv"].append(fit.converged)
                res[("paper (ADMM ρ=100)", eps)] = _losses(fit.precision, ref_admm.precision)
            Sp = rel.project_psd(0.0).second_moment
            res[(cfg, eps)] = _losses(graphical_lasso(Sp, lam[key], tol=1e-4).precision, ref[key])
            if cfg == "ours (CV λ)":
                precision, alpha = ebic_fit(rel)
                res[("ours (eBIC λ)", eps)] = _losses(precision, ref[key])
                info["ebic_alpha_ratio"].append(alpha / lam[key])
    info["lam_cv"] = lam
    return res, info


def _task(args):
    quiet()  # silence the expected warnings in the worker processes
    k, n, rep, s, parts = args
    t0 = time.perf_counter()
    data, rng = _data(k, s["p"], n, rep)
    out = {"rope": None, "glasso": None, "info": None}
    if "rope" in parts:
        out["rope"] = _rope_part(k, n, rep, s, data, rng)
    if "glasso" in parts:
        out["glasso"], out["info"] = _glasso_part(k, n, rep, s, data, rng, admm="admm" in parts)
    out["seconds"] = time.perf_counter() - t0
    return (k, n, rep), out


def _tasks(s, reps):
    r_rope, r_gl, r_admm = reps
    tasks = []
    for k in (1, 2, 3, 4):
        for n in s["ns"]:
            for rep in range(max(r_rope, r_gl)):
                parts = set()
                if k <= 3 and rep < r_rope:
                    parts.add("rope")
                if k >= 2 and rep < r_gl:
                    parts.add("glasso")
                    if rep < r_admm:
                        parts.add("admm")
                if parts:
                    tasks.append((k, n, rep, s, parts))
    # slow tasks (ADMM, then glasso) first, for load balance
    tasks.sort(key=lambda t: -(10 * ("admm" in t[4]) + ("glasso" in t[4])))
    return tasks


def _collect(results, part):
    acc = {}
    for (k, n, rep), out in results:
        if out[part] is None:
            continue
        for (cfg, eps), losses in out[part].items():
            acc.setdefault((k, n, cfg, eps), []).append(losses)
    return {key: np.array(v) for key, v in acc.items()}


def _table(acc, paper, models, configs, s, main_cfg, number):
    lines = []
    for k in models:
        lines += ["", f"#### Table {number}, Model {k}", ""]
        head = ["n", "ε", "published ℓ1", "published F", "published ℓ2", f"{main_cfg} ℓ1", f"{main_cfg} F",
                f"{main_cfg} ℓ2"] + [f"{c} F" for c in configs if c != main_cfg]
        rows = []
        for n in s["ns"]:
            for eps in s["eps"]:
                pv = paper.get((k, n, eps), (None,) * 3)
                row = [n, eps] + [fmt(x) for x in pv]
                main = acc.get((k, n, main_cfg, eps))
                row += [fmt(float(x)) for x in main.mean(axis=0)] if main is not None else ["–"] * 3
                for c in configs:
                    if c == main_cfg:
                        continue
                    a = acc.get((k, n, c, eps))
                    row.append("–" if a is None else f"{fmt(float(a[:, 1].mean()))} (±{fmt(float(a[:, 1].std()), 2)})")
                rows.append(row)
        lines += md_table(head, rows)
    return lines


def _reps_line(acc, configs, part_models, s):
    counts = {c: sorted({len(acc[(k, n, c, e)]) for k in part_models for n in s["ns"] for e in s["eps"]
                         if (k, n, c, e) in acc}) for c in configs}
    return "; ".join(f"{c}: {v[0] if len(v) == 1 else v} reps" for c, v in counts.items() if v)


def run(quick=False, reps=None, jobs=2, figure_prefix=None, argv=None):
    """Run the reproduction; return the markdown report."""
    quiet()
    t0 = time.perf_counter()
    s = _settings(quick)
    r = s["reps"] if reps is None else (reps, min(reps, s["reps"][1]) if not quick else reps,
                                         min(reps, s["reps"][2]))
    results = parallel_map(_task, _tasks(s, r), jobs)
    rope, glasso = _collect(results, "rope"), _collect(results, "glasso")
    infos = [out["info"] for _, out in results if out["info"] is not None]
    admm_conv = [c for i in infos for c in i["admm_conv"]]
    admm_gap = [g for i in infos for g in i["admm_vs_exact"]]
    ebic_ratio = [g for i in infos for g in i["ebic_alpha_ratio"]]
    wall = time.perf_counter() - t0
    cmd = "python -m dpmoments.reproduce.su" + ("" if not argv else " " + " ".join(argv))
    L = ["# Su, Guo & Zhang (2019) — DP ridge precision (Table 1) and DP graphical lasso (Table 2)", "",
         f"Command: `OPENBLAS_NUM_THREADS=1 {cmd}` (root seed {SEED}; wall time {wall:.0f} s with {jobs} "
         f"process(es)).", "",
         f"Settings: p = {s['p']}, n ∈ {list(s['ns'])}, ε ∈ {list(s['eps'])}, δ = 1/n (the paper's choice; a δ "
         "of 1/n or more allows publishing a whole row at random, so the library warns with a PrivacyLeakWarning: "
         "use δ well below 1/n in practice), replace-one "
         f"(sensitivity √2/n on ‖x‖ ≤ 1). Replications: {_reps_line(rope, ROPE_CONFIGS, (1, 2, 3), s)} "
         f"(Table 1); {_reps_line(glasso, GLASSO_CONFIGS, (2, 3, 4), s)} (Table 2). The paper used 50 "
         "for everything; Table 2 runs fewer to stay within ~10 minutes on 2 cores (ADMM at ρ = 100 "
         "runs its 1000 iterations, ≈ 2.5 s per solve at p = 100). Every loss is relative to the "
         "NON-PRIVATE estimate Θ̂ at the same λ on the same (scaled/clipped) data: ‖Θ̂_priv − Θ̂‖/‖Θ̂‖, "
         "ℓ1 = max column sum, F = Frobenius, ℓ2 = spectral. Cells: mean over replications, (± sd).", "",
         "Configurations:", "",
         "* **paper** — rows divided by the sample's own max ℓ2 norm (`max_norm_scale`). **This leaks**: the "
         "scale is an unprivatised function of the most extreme record, so the stated sensitivity does not "
         "hold (docs/algorithms.md §0.6); it is reproduced only to compare with the paper. Classic Gaussian "
         "calibration σ = (√2/n)√(2 ln(1.25/δ))/ε — not a valid (ε, δ) proof at ε ≥ 1 (reported "
         "`Uncertified` by the library, §0.3). λ by 5-fold CV of the non-private estimator's negative "
         "log-likelihood (ROPE: 26-point log grid in units of (tr S/p)²; glasso: 10-point log grid below "
         "max|S_ij|) — **λ leaks too** (it is a function of the raw data).",
         "* **maxnorm+analytic** — the same data and λ, analytic Gaussian calibration (Balle & Wang 2018): "
         "isolates the effect of the calibration.",
         f"* **ours** — rows divided by a PUBLIC radius R = {R_FACTOR}·√tr(Σ), fixed from the model before "
         "sampling (in practice: domain knowledge), then clipped to ‖x‖ ≤ 1; analytic calibration; "
         "replace-one. Private (ε, δ)-DP for the release. With \"CV λ\" the λ still comes from the "
         "non-private CV (for comparability); \"private λ\" (ROPE) is the public rule √(8λ) = 2σ√p (the "
         "expected spectral norm of the noise; depends only on n, ε, δ, p); \"eBIC λ\" (glasso) picks λ "
         "on the release alone (the rule of `PrivateGraphicalLasso(alpha='ebic', alphas=10)`: PSD projection, "
         "10-point log grid floored at the release's noise level (`noise_floor`), extended BIC with γ = 0.5; "
         "computed with the warm-started path solver; free post-processing). "
         "The reference Θ̂ for the private-λ rows is still the non-private estimate at the CV λ.",
         "* Table 2 **paper (ADMM ρ=100)**: Boyd's ADMM (ρ = 100, ABSTOL 1e-4, RELTOL 1e-2, 1000 "
         "iterations) for BOTH Θ̂ and Θ̂_priv, on the raw indefinite S̃ (as the paper). "
         "**paper (exact solver)** and the other rows: S̃ projected to the PSD cone (eigenvalue floor 0, "
         "free post-processing, §0.5) and the exact fast graphical-lasso solver (relative duality gap ≤ 1e-4; the "
         "non-private reference Θ̂ ≤ 1e-6).",
         "", "## Table 1 — DP-RP (ROPE), Models 1–3",
         "", "Main columns: the paper's configuration (ℓ1, F, ℓ2) beside the paper's means; then the "
         "Frobenius loss of the other configurations."]
    L += _table(rope, PAPER_T1, (1, 2, 3), ROPE_CONFIGS, s, "paper", 1)
    L += ["", "## Table 2 — DP-AGL (graphical lasso), Models 2–4", "",
          "Main columns: the paper's configuration with ADMM ρ = 100 (ℓ1, F, ℓ2) beside the paper's "
          "means; then the Frobenius loss of the other configurations."]
    L += _table(glasso, PAPER_T2, (2, 3, 4), GLASSO_CONFIGS, s, "paper (ADMM ρ=100)", 2)
    conv = np.mean(admm_conv) if admm_conv else float("nan")
    L += ["", "## Solver check: ADMM (ρ = 100) against the exact solver", "",
          f"* ADMM runs that met Boyd's stopping rule within 1000 iterations: {100 * conv:.0f}% of "
          f"{len(admm_conv)} (non-private and private).",
          f"* Non-private: ‖Θ̂_ADMM − Θ̂_exact‖_F/‖Θ̂_exact‖_F = {fmt(float(np.mean(admm_gap))) if admm_gap else '–'} "
          f"(mean over {len(admm_gap)} data sets at the CV λ).",
          f"* eBIC λ / CV λ (glasso, ours): median {fmt(float(np.median(ebic_ratio))) if ebic_ratio else '–'}, "
          f"range [{fmt(float(np.min(ebic_ratio))) if ebic_ratio else '–'}, "
          f"{fmt(float(np.max(ebic_ratio))) if ebic_ratio else '–'}].", ""]
    L += _notes(conv, admm_gap)
    return "\n".join(L) + "\n"


def _notes(conv, admm_gap):
    gap = fmt(100 * float(np.mean(admm_gap))) if admm_gap else "–"
    return [
        "## Notes and deviations", "",
        "* **Why the paper's Table 2 numbers are small and model-independent.** After max-norm scaling, "
        "S ≈ Σ/(max‖x‖²) has entries ≈ 1/p and the glasso solution has entries ≈ p; ADMM with ρ = 100 then "
        "moves very slowly and met its stopping rule in 1000 iterations in only " f"{100 * conv:.0f}% of runs "
        "(section above): the 'non-private' and 'private' iterates are both far from the optimum (" f"{gap}% "
        "relative error on average) and close to each other, so their relative difference is small and nearly the same for "
        "every model. With the exact solver (and a PSD projection) the private glasso is far less accurate "
        "relative to the true non-private optimum — compare the ADMM and exact columns. The paper's "
        "Table 2 values therefore measure an unconverged ADMM, not the DP glasso.",
        "* Table 1 (ROPE has a closed form, so no solver question): at p = 100 and n ≤ 400 the noise "
        "(σ ≈ 0.006–0.44 per entry for the classic calibration) dwarfs S (entries ≈ 1/p), so relative losses ≫ 1 are "
        "expected "
        "(docs/algorithms.md §5.6 anomalies). The paper's ℓ2 column at ε = 0.1 is 20–30× its ε = 0.3 value "
        "while ℓ1 and F scale as 1/ε: ours scales as 1/ε in all three, which supports the transcription "
        "error reading.",
        "* Models 1 and 4 are random: one matrix per model (seeded), shared by all replications. The "
        "paper's AR(2) diagonal typo (θ_ii = 0) is read as θ_ii = 1.",
        "* The paper does not say whether λ was cross-validated once or per data set; here per data set "
        "(per replication and per scaling). The same λ is used for the private fit (the paper's λ leak).",
        "* Paper values are the means of the paper's tables as recovered in docs/algorithms.md §5.6 (standard "
        "errors omitted there).",
    ]


def main(argv=None):
    return main_for("su", run, __doc__, argv)


if __name__ == "__main__":
    main()
