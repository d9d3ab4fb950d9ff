"""``dpmoments tensor``: a private orthogonal tensor decomposition (mixture of Gaussians or single topic model).

Two Gaussian releases -- the second moment (for whitening) and the third
moment (to decompose) -- share the budget; whitening, the tensor power method
and un-whitening are post-processing. ``--model mog`` streams the rows (one
pass); ``--model stm`` reads a file of integer word ids (n, 3) into memory.
"""

import math

import numpy as np

from ._args import CLIPPING_HELP, CliError, add_input_arguments, add_output_arguments, add_privacy_arguments
from ._args import _center
from ._output import ResultsDir
from ._progress import Progress
from ._release import epsilon_grid
from ._report import privacy_report
from .regress import add_memory_arguments, fingerprint, open_input, read_in_memory

HELP = "a private tensor decomposition: mixture-of-Gaussians means or single-topic-model topics"
DESCRIPTION = """\
Method-of-moments estimation from two Gaussian releases sharing (epsilon, delta) by basic
composition (or zCDP): the second moment, for whitening, and the third moment, decomposed by the
robust tensor power method (Anandkumar et al.; private as in Imtiaz & Sarwate's AGN).

--model mog: a spherical Gaussian mixture with a PUBLIC common variance --sigma2 (never estimated
from the data); rows are (centred at --center and) clipped to ||x||_2 <= --row-norm; writes the K
means and weights. One streaming pass.

--model stm: the single topic model; each row is a document of three word ids in
[0, --vocabulary-size) (an integer (n, 3) file: the bound is intrinsic, one-hot words have norm 1,
so there is no --row-norm); writes the K topics (word distributions) and weights. The documents
are loaded into memory (at most --max-rows)."""
EXAMPLES = """\
  dpmoments tensor mix.csv --model mog --sigma2 0.01 --n-components 3 --epsilon 1 --delta 1e-6 \\
      --row-norm 3 --out mog
  dpmoments tensor docs.npy --model stm --vocabulary-size 50 --n-components 4 --epsilon 1 --delta 1e-6 --out stm

writes: components.npy/.csv, weights.csv, privacy_report.json,
        privacy_utility.png/.svg (with --epsilon-grid)"""


def add_arguments(parser):
    add_input_arguments(parser)
    add_memory_arguments(parser)
    add_privacy_arguments(parser)
    group = parser.add_argument_group("model")
    group.add_argument("--model", choices=("mog", "stm"), default="mog", help="default mog")
    group.add_argument("--n-components", type=int, metavar="K", help="mixture components / topics (required)")
    group.add_argument("--sigma2", type=float, metavar="S", help="mog: the PUBLIC within-component variance (required)")
    group.add_argument("--vocabulary-size", type=int, metavar="D", help="stm: the PUBLIC vocabulary size (required)")
    group.add_argument("--second-share", type=float, default=0.5, metavar="F",
                       help="share of the budget for the second moment; the third gets 1 - F (default 0.5)")
    group.add_argument("--n-restarts", type=int, default=10, metavar="L", help="power-method restarts (default 10)")
    group.add_argument("--n-iter", type=int, default=30, metavar="N", help="power-method iterations (default 30)")
    add_output_arguments(parser)


def _check(args):
    if args.epsilon is None:
        raise CliError("--epsilon is required: the total epsilon > 0 of the two releases")
    if args.mechanism != "gaussian":
        raise CliError("tensor releases are Gaussian only: drop --mechanism laplace")
    if args.delta is None:
        raise CliError("--delta is required for the two Gaussian releases (e.g. --delta 1e-6, well below 1/n)")
    if args.calibration not in ("analytic", "zcdp"):
        raise CliError(f"--calibration must be 'analytic' or 'zcdp' for tensor releases; got {args.calibration!r}")
    if args.model == "mog":
        if args.row_norm is None:
            raise CliError("--row-norm is required: the public bound R on each row's L2 norm; " + CLIPPING_HELP)
        if args.sigma2 is None:
            raise CliError("--model mog needs --sigma2, the PUBLIC within-component variance (never estimated from "
                           "the data)")
        if not args.sigma2 >= 0 or math.isinf(args.sigma2):
            raise CliError(f"--sigma2 must be a finite number >= 0; got {args.sigma2:g}")
        if args.vocabulary_size is not None:
            raise CliError("--vocabulary-size is for --model stm")
    else:
        if args.row_norm is not None or args.center is not None:
            raise CliError("--model stm takes no --row-norm or --center: each document is three one-hot words, "
                           "whose norm 1 is the bound; give --vocabulary-size")
        if args.vocabulary_size is None or args.vocabulary_size < 1:
            raise CliError("--model stm needs --vocabulary-size D >= 1, the PUBLIC number of distinct words (word "
                           "ids are 0 .. D-1; never read from the data)")
        if args.sigma2 is not None:
            raise CliError("--sigma2 is for --model mog")
    if args.n_components is None or args.n_components < 1:
        raise CliError("--n-components is required: the number K >= 1 of components (topics)")
    if not 0.0 < args.second_share < 1.0:
        raise CliError(f"--second-share must be in (0, 1); got {args.second_share:g}")
    if args.n_restarts < 1 or args.n_iter < 1:
        raise CliError("--n-restarts and --n-iter must be >= 1")


def _word_ids(X, D, path):
    if X.shape[1] != 3:
        raise CliError(f"--model stm needs exactly 3 columns (the word ids of each document); '{path}' gives "
                       f"{X.shape[1]} (use --columns)")
    ids = np.rint(X)
    if not np.array_equal(ids, X):
        raise CliError(f"--model stm needs integer word ids; '{path}' has non-integer values")
    if ids.min() < 0 or ids.max() >= D:
        raise CliError(f"word ids must be in [0, --vocabulary-size {D}); '{path}' has ids in "
                       f"[{int(ids.min())}, {int(ids.max())}]")
    return ids.astype(np.int64)


def run(args):
    from ..estimators import PrivateTensorDecomposition, TensorBudget

    _check(args)
    source = open_input(args)
    grid = epsilon_grid(args)
    d = source.n_features if args.model == "mog" else args.vocabulary_size
    if args.n_components > d:
        what = "number of columns" if args.model == "mog" else "vocabulary size"
        raise CliError(f"--n-components must be in [1, {d}] (the {what}); got {args.n_components}")
    budget = TensorBudget(second=args.second_share, third=1.0 - args.second_share)
    center = _center(args.center, source.n_features) if args.model == "mog" else None
    est = PrivateTensorDecomposition(
        n_components=args.n_components, model=args.model, epsilon=args.epsilon, delta=args.delta,
        row_norm=args.row_norm, sigma2=args.sigma2, vocabulary_size=args.vocabulary_size, budget=budget,
        neighbours=args.neighbours, calibration=args.calibration, center=center, n_restarts=args.n_restarts,
        n_iter=args.n_iter, rng=args.seed)
    fp = fingerprint(source, args)
    if args.model == "mog":
        with Progress(f"reading {source.path.name}", total=source.total_rows, enabled=not args.quiet) as bar:
            est.fit(source.chunks(args.chunk_size, bar))
        names = source.feature_names
    else:
        X, _ = read_in_memory(source, args)
        est.fit(_word_ids(X, args.vocabulary_size, source.path))
        del X
        names = [f"w{j}" for j in range(args.vocabulary_size)]
    m = est.moments_
    analysis = {"estimator": "PrivateTensorDecomposition", "model": args.model, "n_components": args.n_components,
                "sigma2": args.sigma2, "vocabulary_size": args.vocabulary_size,
                "budget": {"second": budget.second, "third": budget.third},
                "weights": est.weights_.tolist(), "eigenvalues": est.eigenvalues_.tolist(),
                "loaded_into_memory": args.model == "stm", "estimate": "components.npy"}
    with ResultsDir(args.out, args.force) as res:
        comps = est.components_
        np.save(res.path("components.npy"), comps)
        res.save_table("components.csv", ["component"] + list(names),
                       [[f"c{j + 1}"] + [repr(float(v)) for v in row] for j, row in enumerate(comps)])
        res.save_table("weights.csv", ["component", "weight", "eigenvalue"],
                       [[f"c{j + 1}", repr(float(w)), repr(float(lam))]
                        for j, (w, lam) in enumerate(zip(est.weights_, est.eigenvalues_))])
        if grid and not args.no_figures:
            _grid_figure(res, grid, m, args)
        rep = privacy_report("tensor", m.second, source=source, fingerprint=fp, analysis=analysis, argv=args.argv,
                             extra={"files": res.files + ["privacy_report.json"]})
        _compose(rep, m)
        res.save_json("privacy_report.json", rep)
    if not args.quiet:
        what = "means" if args.model == "mog" else "topics"
        print(f"{args.model}: {args.n_components} {what} from {m.second.n} "
              f"{'rows' if args.model == 'mog' else 'documents'} of {source.path.name}; weights "
              + ", ".join(f"{w:.3g}" for w in est.weights_))
        print(f"privacy: {m.guarantee} under {m.second.neighbours}, composed from the second-moment release "
              f"{m.second.guarantee} (sigma={m.second.noise_scale:.3g}) and the third-moment release "
              f"{m.third.guarantee} (sigma={m.third.noise_scale:.3g}); "
              + (f"rows clipped to ||x|| <= {args.row_norm:g}; " if args.model == "mog" else "")
              + ("secure randomness" if m.second.secure else f"{m.second.randomness} randomness (NOT secure)"))
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


def _compose(rep, m):
    """The report's privacy block states the composed guarantee, with both releases beside it."""
    p = rep["privacy"]
    g = m.guarantee
    p.update(guarantee=str(g), guarantee_detail=g.to_dict(), certified=g.certified,
             composition="basic composition of the two Gaussian releases" if p["calibration"] == "analytic"
             else "zCDP composition of the two Gaussian releases",
             sensitivity={"second": m.second.sensitivity, "third": m.third.sensitivity},
             noise_scale={"second": m.second.noise_scale, "third": m.third.noise_scale})
    if m.model == "stm":
        p["row_norm"] = None
        p["clipping"] = ("none needed: each document is three one-hot words (norm 1 each), so the symmetrised "
                         "moments have sensitivity sqrt(2)/N (replace-one) without clipping")
    rep["release"] = {"second": m.second.to_dict(), "third": m.third.to_dict(),
                      "composed": {"guarantee": str(g), "guarantee_detail": g.to_dict()}}


def _grid_figure(res, grid, m, args):
    from .. import plots
    from ..moments.tensor_moments import _sigma, planned_guarantees

    b = m.budget
    curves = {"second-moment noise sigma": [], "third-moment noise sigma": []}
    for e in grid:
        g2, g3, _ = planned_guarantees(e, args.delta, args.calibration, b)
        curves["second-moment noise sigma"].append(_sigma(g2, m.second.sensitivity, (b.second * e, b.second * args.delta)))
        curves["third-moment noise sigma"].append(_sigma(g3, m.third.sensitivity, (b.third * e, b.third * args.delta)))
    ax = plots.plot_privacy_utility(grid, curves, label="noise sigma per coordinate", chosen=args.epsilon,
                                    title="tensor releases: noise against epsilon (calibration only)")
    res.save_figure("privacy_utility", ax)
