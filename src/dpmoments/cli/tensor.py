"""``dpmoments tensor``: a private orthogonal tensor decomposition (mixture of Gaussians or single topic model).

Two Gaussian releases -- the second moment (for whitening) and the third
moment (to decompose) -- share the budget; whitening, the tensor power method
and un-whitening are post-processing. ``--model mog`` streams the rows (one
pass); ``--model stm`` reads a file of integer word ids (n, 3) into memory.

Noise: with draws (``--draws auto`` up to 100 columns or words) both
releases are redrawn and the decomposition rerun, giving each weight's and
each mean's (topic's) standard error. A decomposition that failed (a
whitening that divides by noise, sigma2 above the data's spectrum, weights
that are not proportions) is withheld: its means and weights are not printed
or drawn, and the report says so.
"""

import math

from ._args import (CliError, _bounded_int, _center, _nonnegative_bound, add_input_arguments, add_memory_arguments,
                    add_output_arguments, add_privacy_arguments, check_count_share)
from ._choices import bound_budget, check_choices, choices_of, choices_report, too_few_rows_hint
from ._noise import AUTO_MAX_TENSOR, add_uncertainty_arguments, draws, json_safe
from ..mechanisms import laws
from ._ranges import (add_plain_ranges_arguments, add_typed_column_arguments, categories_of, impute_of,
                      positional_ranges, ranges_lines, ranges_of, ranges_report)

HELP = "a private tensor decomposition: mixture-of-Gaussians means or single-topic-model topics"
DESCRIPTION = """\
Method-of-moments estimation from two Gaussian releases sharing (epsilon, delta) by basic
composition (or zCDP): the second moment, for whitening, and the third moment, decomposed by the
robust tensor power method (Anandkumar et al.; private as in Imtiaz & Sarwate's AGN).

--model mog: a spherical Gaussian mixture with a PUBLIC common variance --sigma2 (never estimated
from the data); rows are (centred at a public --center and) clipped to ||x||_2 <= --row-norm:
by default 'auto' (a private 0.95-quantile of the row norms, lowered on small data to leave the
draw's rank error above it, paid from --bound-share 0.1 of the budget and listed in the report),
or a public bound, which costs nothing; writes the K means and weights. Two streaming passes (one
with a public --row-norm). There is no --center private: seen from the data's mean the K means
are linearly dependent (their weighted sum is 0) and the method cannot recover them; a PUBLIC
--center away from the mean is fine.

--model stm: the single topic model; each row is a document of three word ids in
[0, --vocabulary-size) (an integer (n, 3) file: the bound is intrinsic, one-hot words have norm 1,
so there is no --row-norm, and no centre); writes the K topics (word distributions) and weights. The documents
are loaded into memory (at most --max-rows)."""
EXAMPLES = """\
  dpmoments tensor mix.csv --model mog --sigma2 0.01 --n-components 3 --epsilon 1 --delta 1e-6 --out mog
  dpmoments tensor mix.csv --model mog --sigma2 0.01 --n-components 3 --epsilon 1 --delta 1e-6 \\
      --row-norm 3 --out mog
  dpmoments tensor docs.npy --model stm --vocabulary-size 50 --n-components 4 --epsilon 1 --delta 1e-6 --out stm

writes: components.npy/.csv, weights.csv (with se and interval when drawn), components_se.npy/.csv (with draws),
        privacy_report.json, weights.png (with draws), privacy_utility.png (with --epsilon-grid)"""


def add_arguments(parser):
    add_input_arguments(parser, cluster=True, several=True)
    add_memory_arguments(parser)
    add_privacy_arguments(parser, private=("row_norm",), auto_default=True)
    parser.set_defaults(row_norm=None)  # auto for mog, set in _check: stm refuses any --row-norm it is given
    group = parser.add_argument_group("model")
    group.add_argument("--model", choices=("mog", "stm"), default="mog", help="default mog")
    group.add_argument("--n-components", type=int, metavar="K", help="mixture components / topics (required)")
    group.add_argument("--sigma2", type=_nonnegative_bound, metavar="S",
                       help="mog: the PUBLIC within-component variance (required)")
    group.add_argument("--vocabulary-size", type=int, metavar="D", help="stm: the PUBLIC vocabulary size (required)")
    group.add_argument("--second-share", type=float, default=0.5, metavar="F",
                       help="share of the budget for the second moment; the third gets 1 - F (default 0.5)")
    add_plain_ranges_arguments(group, (
        "mog: PUBLIC per-column ranges, e.g. age=0:120,score=0:10: each value is clipped to its column's range, "
        "free; the columns keep their units (--sigma2 is stated in them). With every column ranged the row bound "
        "is drawn on a grid that ends at the box's largest norm about the centre, or is that norm, free, when "
        "there are too few rows. State ranges from the data's documentation, never from the data"))
    add_typed_column_arguments(group)
    group.add_argument("--n-restarts", type=_bounded_int(1, 10_000), default=10, metavar="L",
                       help="power-method restarts (default 10)")
    group.add_argument("--n-iter", type=_bounded_int(1, 100_000), default=30, metavar="N",
                       help="power-method iterations (default 30)")
    add_uncertainty_arguments(parser, closed_form="the checks of the whitening and the weights only",
                              auto_draws="the weights' and the means' (topics') standard errors",
                              limit=AUTO_MAX_TENSOR, cost="about 2 s", target=True)
    add_output_arguments(parser)


def _check(args):
    """One-line refusals before any data are read; returns the row bound (``"auto"`` unless given, for mog)."""
    if args.epsilon is None:
        raise CliError("--epsilon is required: the total epsilon > 0 of the two releases")
    if laws.named(args.mechanism) is not laws.GAUSSIAN:
        raise CliError("tensor releases are Gaussian only: drop --mechanism laplace")
    if args.delta is None:
        raise CliError("--delta is required for the two Gaussian releases (e.g. --delta 1e-6, well below 1/n)")
    if args.calibration not in ("analytic", "zcdp"):
        raise CliError(f"--calibration must be 'analytic' or 'zcdp' for tensor releases; got {args.calibration!r}")
    check_count_share(args)
    row_norm = _check_mog(args) if args.model == "mog" else _check_stm(args)
    if args.n_components is None or args.n_components < 1:
        raise CliError("--n-components is required: the number K >= 1 of components (topics)")
    if not 0.0 < args.second_share < 1.0:
        raise CliError(f"--second-share must be in (0, 1); got {args.second_share:g}")
    if args.n_restarts < 1 or args.n_iter < 1:
        raise CliError("--n-restarts and --n-iter must be >= 1")
    return row_norm


def _check_mog(args):
    if args.sigma2 is None:
        raise CliError("--model mog needs --sigma2, the PUBLIC within-component variance (never estimated from "
                       "the data)")
    if not args.sigma2 >= 0 or math.isinf(args.sigma2):
        raise CliError(f"--sigma2 must be a finite number >= 0; got {args.sigma2:g}")
    if args.vocabulary_size is not None:
        raise CliError("--vocabulary-size is for --model stm")
    return "auto" if args.row_norm is None else args.row_norm


def _check_stm(args):
    if args.row_norm is not None or args.center is not None:
        raise CliError("--model stm takes no --row-norm or --center: each document is three one-hot words, "
                       "whose norm 1 is the bound; give --vocabulary-size")
    if args.vocabulary_size is None or args.vocabulary_size < 1:
        raise CliError("--model stm needs --vocabulary-size D >= 1, the PUBLIC number of distinct words (word "
                       "ids are 0 .. D-1; never read from the data)")
    if args.sigma2 is not None:
        raise CliError("--sigma2 is for --model mog")
    return None


def _word_ids(X, D, path):
    import numpy as np

    if X.shape[1] != 3:
        raise CliError(f"--model stm needs exactly 3 columns (the word ids of each document); '{path}' gives "
                       f"{X.shape[1]} (use --columns)")
    ids = np.rint(X)
    if not np.array_equal(ids, X):
        raise CliError(f"--model stm needs integer word ids; '{path}' has non-integer values")
    if ((ids < 0) | (ids >= D)).any():
        # Neither the ids (an extreme id is a data value) nor how many (a count read from the data, unnoised).
        raise CliError(f"word ids must be in [0, --vocabulary-size {D}); '{path}' has ids outside it")
    return ids.astype(np.int64)


def run(args):
    """The run, on a dask cluster's workers with ``--scheduler`` (mixtures of Gaussians: their moments stream)."""
    from ._cluster import on_cluster, scheduler_address

    address = scheduler_address(args)
    if address is None:
        return _run(args, None)
    if args.model != "mog":
        raise CliError(f"--scheduler applies to --model mog; --model {args.model} reads its documents into memory")
    with on_cluster(address) as client:
        return _run(args, client)


def _run(args, client):
    import numpy as np

    from ._cluster import ClusterSource, print_notes
    from ._io import fingerprint, open_input
    from ._output import check_destination, ResultsDir
    from ._release import epsilon_grid
    from ._report import privacy_report
    from .present.tensor import compose_report, grid_figure, save_tensor, tensor_noise, weights_figure

    row_norm = _check(args)
    if client is None:
        source = open_input(args)
    else:
        check_destination(args.out, args.force)
        source = ClusterSource(client, args.data, args.columns)
    print_notes(source, args.quiet)
    grid = epsilon_grid(args)
    d = source.n_features if args.model == "mog" else args.vocabulary_size
    if args.n_components > d:
        what = "number of columns" if args.model == "mog" else "vocabulary size"
        raise CliError(f"--n-components must be in [1, {d}] (the {what}); got {args.n_components}")
    choices = choices_of(args, ("row_norm",) if row_norm == "auto" else ())
    est = _estimator(args, source, row_norm, choices, d)
    fp = fingerprint(source, args)
    names = _fit(est, args, source, row_norm, choices)
    noise = tensor_noise(est)
    analysis = noise.analysis(_analysis(args, est))
    m = est.moments_
    with ResultsDir(args.out, args.force) as res:
        save_tensor(res, est, names)
        if not args.no_figures and est.weights_interval_ is not None and not noise.withholds \
                and np.isfinite(est.weights_interval_).all():  # withheld (the model misfits): no bars to draw
            weights_figure(res, est, m)
        if grid and not args.no_figures:
            grid_figure(res, grid, m, args)
        rep = privacy_report("tensor", m.second, source=source, fingerprint=fp, analysis=analysis, argv=args.argv,
                             extra={"files": res.files + ["privacy_report.json"], **ranges_report(ranges_of(args), m.second)})
        compose_report(rep, m)
        if est.privacy_parts_:
            rep["private_choices"] = choices_report(est.privacy_parts_, m.guarantee, bound_budget(choices))
        res.save_json("privacy_report.json", rep)
    if not args.quiet:
        print(est.summary(names, source.name))
        for line in ranges_lines(m.second):
            print(line)
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


def _estimator(args, source, row_norm, choices, d):
    """The decomposition the options ask for (checked; no data read)."""
    # PrivateTensorDecomposition's logic without scikit-learn (whose import costs ~1.2 s)
    from ..estimators.tensor import TensorBudget, TensorDecompositionFit

    budget = TensorBudget(second=args.second_share, third=1.0 - args.second_share)
    if args.model == "mog" and args.center is not None and args.center.strip() == "private":
        raise CliError("--center private is not available for --model mog: the means are recovered only when, "
                       "seen from the centre, they are linearly independent, and seen from the data's mean (what a "
                       "private centre estimates) they are not; give a PUBLIC --center away from the mean, or none")
    center = _center(args.center, source.n_features) if args.model == "mog" else None
    if args.model != "mog" and (categories_of(args) or impute_of(args)):
        raise CliError("--categories and --impute are for --model mog: --model stm reads word ids")
    if args.model != "mog" and ranges_of(args) is not None:
        raise CliError("--ranges is for --model mog: --model stm reads word ids, whose range is --vocabulary-size")
    ranges = positional_ranges(args, [str(c) for c in source.feature_names]) if args.model == "mog" else None
    check_choices(choices)
    n_draws = draws(args, d, auto=True, limit=AUTO_MAX_TENSOR)
    if args.intervals_for == "sample" and n_draws == 0:  # as across sites (_multisite.py): never silently ignored
        raise CliError("--intervals-for has no use with no draws: the tensor's intervals come from its redrawn "
                       f"releases (--draws 0{' by auto at d > %d' % AUTO_MAX_TENSOR if args.draws == 'auto' else ''}); "
                       "give --draws (e.g. --draws 50) or leave it out")
    return TensorDecompositionFit(
        n_components=args.n_components, model=args.model, epsilon=args.epsilon, delta=args.delta,
        row_norm=row_norm, sigma2=args.sigma2, vocabulary_size=args.vocabulary_size, budget=budget,
        neighbours=args.neighbours, calibration=args.calibration, center=center, n_restarts=args.n_restarts,
        n_iter=args.n_iter, rng=args.seed, count_share=args.count_share, bound_budget=bound_budget(choices),
        level=args.level, n_draws=n_draws, ranges=ranges,
        target=args.intervals_for)


def _fit(est, args, source, row_norm, choices):
    """Fit: mog streams the rows (twice with a private bound), stm reads the documents into memory; the names."""
    from ._cluster import ClusterSource
    from ._io import read_in_memory
    from ._progress import Progress
    from ._release import Rereadable

    if isinstance(source, ClusterSource):
        label = f"reading {source.name} on the cluster"
        with source.progress(label, source.total_rows if row_norm != "auto" else None, not args.quiet):
            with too_few_rows_hint(choices, ranges=True):
                est.fit(source.data)
        return source.feature_names
    if args.model == "mog":
        with Progress(f"reading {source.name}", total=source.total_rows, enabled=not args.quiet) as bar:
            with too_few_rows_hint(choices, ranges=True):
                rows = Rereadable(source, args.chunk_size, bar) if row_norm == "auto" else \
                    source.chunks(args.chunk_size, bar)
                est.fit(_Named(rows, source.feature_names) if est.ranges is not None else rows)
        return source.feature_names
    X, _ = read_in_memory(source, args)
    est.fit(_word_ids(X, args.vocabulary_size, source.shown))
    del X
    return [f"w{j}" for j in range(args.vocabulary_size)]


class _Named:
    """The file's chunks with its columns' names, which a ranged fit's line uses (``Source.feature_names``)."""

    def __init__(self, rows, names):
        self.rows, self.feature_names = rows, [str(c) for c in names]

    def __iter__(self):
        return iter(self.rows)


def _analysis(args, est):
    budget = est.budget
    return {"estimator": "PrivateTensorDecomposition", "model": args.model, "n_components": args.n_components,
            "sigma2": args.sigma2, "vocabulary_size": args.vocabulary_size,
            "budget": {"second": budget.second, "third": budget.third},
            "weights": est.weights_.tolist(), "eigenvalues": est.eigenvalues_.tolist(),
            "loaded_into_memory": args.model == "stm", "estimate": "components.npy",
            "weights_se": json_safe(est.weights_se_), "weights_interval": json_safe(est.weights_interval_),
            "standard_errors": None if est.components_se_ is None else "components_se.npy"}
