"""Shared pieces of the precision-matrix reproductions (Su et al., Wang et al., ROC).

Command-line parsing, seeded generators, cross-validation of the non-private
estimators (the papers' λ rule), and markdown helpers. Layer 4: may import
everything in the package.
"""

import argparse
import os
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from ..exceptions import NotPrivateWarning, PrivacyLeakWarning, UncertifiedPrivacyWarning
from ..estimators import alpha_grid, noise_floor
from ..solvers import graphical_lasso_path

__all__ = ["SEED", "quiet", "cv_rope", "cv_glasso", "nll", "rope_path", "parallel_map", "md_table", "main_for",
           "fmt"]

SEED = 20240611  # the root seed of every reproduction in this package (recorded in each report)


def quiet():
    """Silence the warnings the reproductions trigger on purpose (each is stated in the report)."""
    for w in (NotPrivateWarning, PrivacyLeakWarning, UncertifiedPrivacyWarning, RuntimeWarning):
        warnings.simplefilter("ignore", w)


def nll(S_test, Theta):
    """Gaussian negative log-likelihood (up to constants): ``tr(S Θ) - log det Θ``."""
    sign, logdet = np.linalg.slogdet(Theta)
    return np.inf if sign <= 0 else float(np.sum(S_test * Theta) - logdet)


def _folds(n, k, rng):
    return np.array_split(rng.permutation(n), k)


def rope_path(S, lams):
    """ROPE for many penalties at once: one eigendecomposition, returns (eigvecs, thetas (L, p))."""
    phi, M = np.linalg.eigh(S)
    lams = np.asarray(lams, dtype=float)[:, None]
    return M, 2.0 / (phi[None, :] + np.sqrt(phi[None, :] ** 2 + 8.0 * lams))


def rope_grid(S):
    """λ grid for ROPE in the units of S² (λ enters as √(φ² + 8λ))."""
    scale = float(np.trace(S)) / S.shape[0]
    return scale**2 * np.geomspace(1e-3, 1e2, 26)


def cv_rope(X, rng, k=5):
    """5-fold CV of the non-private ROPE's negative log-likelihood (Su et al. §5.6): the chosen λ."""
    n = X.shape[0]
    S_all = X.T @ X / n
    lams = rope_grid(S_all)
    score = np.zeros(lams.size)
    for idx in _folds(n, k, rng):
        mask = np.ones(n, bool)
        mask[idx] = False
        Xtr, Xte = X[mask], X[idx]
        M, th = rope_path(Xtr.T @ Xtr / Xtr.shape[0], lams)
        proj = np.einsum("ij,ik,kj->j", M, Xte.T @ Xte / Xte.shape[0], M)  # diag(Mᵀ S_test M)
        score += th @ proj - np.log(th).sum(axis=1)
    return float(lams[int(np.argmin(score))])


def cv_glasso(X, rng, k=5, count=10, tol=1e-4):
    """5-fold CV of the non-private graphical lasso's negative log-likelihood over a log grid."""
    n = X.shape[0]
    lams = alpha_grid(X.T @ X / n, count)
    score = np.zeros(lams.size)
    for idx in _folds(n, k, rng):
        mask = np.ones(n, bool)
        mask[idx] = False
        Xtr, Xte = X[mask], X[idx]
        S_te = Xte.T @ Xte / Xte.shape[0]
        path = graphical_lasso_path(Xtr.T @ Xtr / Xtr.shape[0], lams, tol=tol)
        score += np.array([nll(S_te, r.precision) for r in path])
    return float(lams[int(np.argmin(score))])


def parallel_map(fn, tasks, jobs):
    """``map`` over tasks, in ``jobs`` processes (1: in-process)."""
    if jobs <= 1:
        return [fn(t) for t in tasks]
    with ProcessPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(fn, tasks, chunksize=1))


def fmt(x, digits=3):
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "–"
    if abs(x) >= 1000:
        return f"{x:.0f}"
    if abs(x) >= 100:
        return f"{x:.1f}"
    return f"{x:.{digits}g}"


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


class _Parser(argparse.ArgumentParser):
    """One-line errors, as every dpmoments command (``usage`` is left to ``--help``)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def _at_least_one(text):
    """``--reps``/``--jobs``: an integer >= 1 (zero replications would write an empty table as the result)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1; got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1; got {value}")
    return value


def _markdown_path(parser, given, name, quick):
    """The results file: a ``.md`` path (its figures are written beside it, named after it)."""
    out = Path(given or f"benchmarks/results/{name}{'-quick' if quick else ''}.md")
    if out.suffix != ".md" or out.is_dir():
        parser.error(f"--out must be a markdown file ending in .md (its figures go beside it); got {str(out)!r}")
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def _write_atomically(out, text):
    """Write beside ``out`` and rename over it: an interrupted run leaves the old file or the new one."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def main_for(name, run, doc, argv=None):
    """The shared command line: ``--quick``, ``--reps N``, ``--jobs J``, ``--out PATH``."""
    parser = _Parser(prog=f"python -m dpmoments.reproduce.{name}", description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny grid (seconds)")
    parser.add_argument("--reps", type=_at_least_one, default=None,
                        help="replications (default: the module's full setting)")
    parser.add_argument("--jobs", type=_at_least_one, default=2, help="worker processes (default 2)")
    parser.add_argument("--out", default=None, help=f"output file (default benchmarks/results/{name}.md)")
    args = parser.parse_args(argv)
    out = _markdown_path(parser, args.out, name, args.quick)
    t0 = time.perf_counter()
    text = run(quick=args.quick, reps=args.reps, jobs=args.jobs, figure_prefix=str(out.with_suffix("")),
               argv=argv if argv is not None else sys.argv[1:])
    _write_atomically(out, text)
    sys.stdout.write(text)
    sys.stderr.write(f"wrote {out} in {time.perf_counter() - t0:.0f} s\n")
    return text


def main_quick(name, run, doc, argv=None):
    """The command line of a one-process reproduction: ``--quick`` and ``--out PATH``.

    ``run(quick=..., figure=...)`` returns the markdown; the figure is written beside it.
    """
    parser = _Parser(prog=f"python -m dpmoments.reproduce.{name}", description=doc)
    parser.add_argument("--quick", action="store_true", help="small grid (seconds)")
    parser.add_argument("--out", default=None, help=f"output file (default benchmarks/results/{name}.md)")
    args = parser.parse_args(argv)
    out = _markdown_path(parser, args.out, name, args.quick)
    text = run(quick=args.quick, figure=out.with_suffix(".png"))
    _write_atomically(out, text)
    sys.stdout.write(text)
    return text


def ebic_fit(release, alphas=10, gamma=0.5, tol=1e-4):
    """Private λ by the extended BIC on a release alone (free post-processing); ``(precision, alpha)``.

    The rule of ``PrivateGraphicalLasso(alpha="ebic", alphas=alphas, ebic_gamma=gamma)``: the release
    is projected to the PSD cone (floor 0), a log grid of ``alphas`` values below its largest
    off-diagonal entry (down to 1/100 of it, and never below the release's noise floor,
    :func:`~dpmoments.estimators.noise_floor`) is solved, and the extended BIC
    ``n[tr(SΘ) − log det Θ] + |E| log n + 4γ|E| log p`` picks the penalty. Computed here with the
    warm-started path solver (faster than the estimator's independent fits; same grid and criterion).
    """
    S = release.project_psd(0.0).second_moment
    lams = alpha_grid(S, alphas, floor=noise_floor(release))
    path = graphical_lasso_path(S, lams, tol=tol)
    p = S.shape[0]
    scores = []
    for r in path:
        edges = int(np.count_nonzero(np.abs(np.triu(r.precision, 1)) > 1e-10))
        scores.append(release.n * nll(S, r.precision) + edges * np.log(release.n) + 4 * gamma * edges * np.log(p))
    best = int(np.argmin(scores))
    return path[best].precision, float(lams[best])
