"""``dpmoments regress``: private robust (least absolute deviations) regression by IRLS.

Private IRLS (Park & Welling 2016, corrected) makes ``2 J`` releases, one
pair per iteration, each computed from weights that depend on the previous
private iterate: it needs ``J`` passes over the rows, so this subcommand
(unlike ``covariance`` or ``pca``) loads the selected columns into memory.
``--max-rows`` caps what it will load; the file is still read in chunks.

The helpers :func:`add_memory_arguments`, :func:`open_input`,
:func:`read_in_memory` and :func:`estimator_report` are shared with the
other subcommands whose estimator takes in-memory arrays (``select``,
``tensor --model stm``, ``simulate``).
"""

import datetime
import sys
import types

import numpy as np

from .._rng import secure_randomness
from .._version import __version__
from ..privacy.relations import RELATION_WORDS, describe_relation, n_is_public
from ._args import (CLIPPING_HELP, CliError, _bound, _delta, _epsilon, add_input_arguments,
                    add_output_arguments, positive_int, seed_int)
from ._choices import (add_choice_arguments, bound_budget, bound_or_auto, check_choices,
                       choices_lines, choices_report, too_few_rows_hint)
from ._io import DataSource
from ._noise import Noise, add_uncertainty_arguments, draws, interval_text, json_safe, num, table
from ._output import ResultsDir, check_destination, figures_ahead
from ._progress import Progress
from ._release import epsilon_grid
from ._report import _RANDOMNESS, _input, randomness_text, recorded_arguments

HELP = "private robust (least absolute deviations) regression by IRLS"
DESCRIPTION = """\
Fit a linear model y ~ X by private iteratively reweighted least squares (Park & Welling 2016,
with the corrected accounting): each of --n-iter iterations releases the weighted moments
(1/n) sum s_i x_i y_i and (1/n) sum s_i x_i x_i^T with Gaussian noise, where the weights
s_i = 1/max(1/w_max, |residual_i|^(2-p)) come from the previous private iterate; p = 1 is
median (LAD) regression. The total (epsilon, delta) is split over the 2 J releases (zCDP by
default). Rows are clipped to ||x||_2 <= --row-norm and responses to |y| <= --response-bound.
By default both bounds are 'auto': private 0.95-quantiles of ||x|| and |y| (lowered on small
data to leave the draw's rank error above them, never below the 0.75-quantile), one exponential-
mechanism draw each from --bound-share 0.1 of the budget (split equally, shares of rho under
--accounting zcdp), listed in the report; a public bound costs nothing and is used as given.
Too few rows for the draws (breast cancer's 569 at epsilon below 1.8) are refused in one line
that says from which --epsilon (or --bound-share) the run goes through.

Memory: IRLS needs one pass per iteration, so the selected columns (and the target) are
loaded into memory (8 bytes per value); files with more than --max-rows rows are refused."""
EXAMPLES = """\
  dpmoments regress data.csv --target y --epsilon 1 --delta 1e-6 --n-iter 5 --w-max 10 --out fit
  dpmoments regress data.csv --target y --epsilon 1 --delta 1e-6 --row-norm 2 --response-bound 3 \\
      --n-iter 5 --w-max 10 --out fit
  dpmoments regress data.parquet --columns a,b --target y --fit-intercept --epsilon 1 --delta 1e-6 \\
      --row-norm 2 --response-bound 3 --n-iter 5 --w-max 10 --out fit --epsilon-grid 0.3,1,3

writes: coefficients.csv (with se and interval), coefficients.npy, coefficients_se.npy, privacy_report.json,
        coefficients.png, privacy_utility.png (with --epsilon-grid)

Noise: each coefficient is printed with its standard error and interval (the noise of the final
iteration's two releases); coefficients within their noise are shown with a warning, never hidden:
their intervals say how much of them is noise."""

DEFAULT_MAX_ROWS = 5_000_000


# -- shared helpers (also used by select, tensor and simulate) -------------------------------------
def add_memory_arguments(parser):
    parser.add_argument("--max-rows", type=positive_int, default=DEFAULT_MAX_ROWS, metavar="N",
                        help="this analysis loads the selected columns into memory: refuse inputs with more than "
                             f"N rows (default {DEFAULT_MAX_ROWS:,})")


def open_input(args, path=None, target=None):
    """Check the destination, open the file and validate the column selection (no data read yet)."""
    if getattr(args, "out", None) is not None:
        check_destination(args.out, args.force)
    return DataSource(path or args.data, args.columns, target, meanwhile=figures_ahead(args))


def fingerprint(source, args):
    """The input's SHA-256 and size, only with ``--fingerprint`` (it is not private)."""
    if not getattr(args, "fingerprint", False):
        return None
    with Progress("fingerprint", total=source.nbytes(), unit="bytes", enabled=not args.quiet) as bar:
        return source.fingerprint(bar)


def read_in_memory(source, args):
    """Read the selected columns (and target) chunk by chunk into arrays; at most ``args.max_rows`` rows."""
    limit = args.max_rows
    if source.total_rows is not None and source.total_rows > limit:
        raise CliError(f"'{source.path.name}' has {source.total_rows} rows, more than --max-rows {limit}; this "
                       "analysis loads the selected columns into memory: raise --max-rows if they fit")
    Xs, ys, n = [], [], 0
    with Progress(f"reading {source.path.name}", total=source.total_rows, enabled=not args.quiet) as bar:
        for chunk in source.chunks(args.chunk_size, bar):
            X, y = chunk if isinstance(chunk, tuple) else (chunk, None)
            n += X.shape[0]
            if n > limit:
                raise CliError(f"'{source.path.name}' has more than --max-rows {limit} rows; this analysis loads "
                               "the selected columns into memory: raise --max-rows if they fit")
            Xs.append(np.asarray(X, dtype=np.float64))
            ys.append(y)
    if not Xs:
        raise CliError(f"'{source.path.name}' has no data rows")
    X = np.concatenate(Xs, axis=0)
    y = None if ys[0] is None else np.concatenate([np.asarray(v, dtype=np.float64) for v in ys])
    return X, y


def require_target(args):
    if args.target is None:
        raise CliError(f"--target is required: the response column (a name or a 0-based position) of "
                       f"'{args.data}'")


def estimator_report(command, guarantee, *, privacy, source, fingerprint, n, d, analysis, argv, randomness,
                     files, extra=None, neighbours="replace-one"):
    """A privacy report with the layout of :func:`._report.privacy_report`, for estimators without a Release.

    Their noise is float noise from numpy, never exact discrete noise, so it
    is never reported secure (:func:`dpmoments._rng.secure_randomness`).
    """
    block = {
        "guarantee": str(guarantee),
        "guarantee_detail": guarantee.to_dict(),
        "certified": guarantee.certified,
        "neighbouring_relation": neighbours,
        "neighbouring_relation_meaning": RELATION_WORDS[neighbours],
        "mechanism": None, "sensitivity": None, "sensitivity_norm": None, "calibration": None,
        "noise_scale": None, "row_norm": None, "center": None,
        "clipping": CLIPPING_HELP,
        "randomness": randomness,
        "secure_randomness": secure_randomness(randomness, exact_discrete=False),
        "randomness_note": _RANDOMNESS.get(randomness, randomness),
        "n_public": n_is_public(neighbours),
        "n_note": f"n = {n} rows, public under {neighbours} (the relation fixes it)",
    }
    block.update(privacy)
    report = {
        "dpmoments_version": __version__,
        "command": command,
        "arguments": recorded_arguments(sys.argv[1:] if argv is None else argv),
        "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "privacy": block,
        "release": None,
        "input": _input(source, types.SimpleNamespace(n=n, n_features=d), fingerprint),
        "analysis": analysis,
        "files": list(files) + ["privacy_report.json"],
    }
    if extra:
        report.update(extra)
    return report


def randomness_of(seed):
    return "os-entropy" if seed is None else "seeded"


# -- the subcommand ---------------------------------------------------------------------------------
def add_arguments(parser):
    add_input_arguments(parser, target=True)
    add_memory_arguments(parser)
    group = parser.add_argument_group("privacy (required: --epsilon, --delta)")
    group.add_argument("--epsilon", type=_epsilon, metavar="EPS", help="total epsilon > 0 of the 2 J releases (required)")
    group.add_argument("--delta", type=_delta, metavar="DELTA", help="total delta in (0, 1) (required), e.g. 1e-6 < 1/n")
    group.add_argument("--row-norm", type=bound_or_auto, metavar="R|auto", default="auto",
                       help="the L2 bound R on each feature row (default auto): a PUBLIC number, or 'auto', a private "
                            "0.95-quantile of ||x|| (lowered on small data) paid from --bound-share. Clipping: " + CLIPPING_HELP)
    group.add_argument("--response-bound", type=bound_or_auto, metavar="B|auto", default="auto",
                       help="the bound on |y| (default auto): responses are clipped to [-B, B]; a PUBLIC number, or "
                            "'auto', a private 0.95-quantile of |y| paid from --bound-share (the two auto bounds share it "
                            "equally, one exponential-mechanism draw each on the public --search-range)")
    add_choice_arguments(group, center=False, scale=False)
    group.add_argument("--accounting", choices=("zcdp", "basic", "advanced"), default="zcdp",
                       help="how the budget is split over the 2 J releases (default zcdp)")
    group.add_argument("--first-moment", choices=("gaussian", "laplace"), default="gaussian",
                       help="noise on the weighted cross moment (default gaussian)")
    group.add_argument("--split", type=float, default=0.5, metavar="F",
                       help="share of each iteration's budget for the cross moment (default 0.5)")
    group.add_argument("--seed", type=seed_int, metavar="INT",
                       help="seed the noise: reproducible but NOT secure (default: fresh OS entropy)")
    est = parser.add_argument_group("estimator")
    est.add_argument("--n-iter", type=positive_int, metavar="J", help="IRLS iterations, each two releases (required)")
    est.add_argument("--w-max", type=_bound, metavar="W",
                     help="the largest IRLS weight (required): residuals below 1/W count as 1/W; the "
                          "sensitivities grow linearly in W")
    est.add_argument("--p", type=float, default=1.0, metavar="P", help="the loss sum |r_i|^p, p in [1, 2] (default 1: LAD)")
    est.add_argument("--fit-intercept", action="store_true",
                     help="append a public constant column (the row bound grows to sqrt(R^2 + R^2))")
    add_uncertainty_arguments(parser, closed_form="every coefficient's standard error (first order)")
    add_output_arguments(parser)


def _check(args):
    require_target(args)
    missing = [f for f, v in (("--epsilon", args.epsilon), ("--delta", args.delta), ("--n-iter", args.n_iter),
                              ("--w-max", args.w_max)) if v is None]
    check_choices(args, [k for k in ("row_norm", "response_bound") if getattr(args, k) == "auto"])
    if missing:
        raise CliError(f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} required")
    if not 1.0 <= args.p <= 2.0:
        raise CliError(f"--p must be in [1, 2]; got {args.p:g}")
    if not 0.0 < args.split < 1.0:
        raise CliError(f"--split must be in (0, 1); got {args.split:g}")


def run(args):
    from sklearn.base import clone

    from ..estimators import PrivateIRLS

    _check(args)
    source = open_input(args, target=args.target)
    args.epsilon_grid_values = epsilon_grid(args)
    est = PrivateIRLS(epsilon=args.epsilon, delta=args.delta, row_norm=args.row_norm,
                      response_bound=args.response_bound, n_iter=args.n_iter, w_max=args.w_max, p=args.p,
                      first_moment=args.first_moment, accounting=args.accounting, split=args.split,
                      fit_intercept=args.fit_intercept, rng=args.seed, bound_budget=bound_budget(args),
                      level=args.level)
    fp = fingerprint(source, args)
    X, y = read_in_memory(source, args)
    est.set_params(n_draws=draws(args, X.shape[1], auto=False))
    with too_few_rows_hint(args):
        est.fit(X, y)
    n, d = X.shape
    del X, y
    noise = Noise(est)
    names = source.feature_names
    rep = est.privacy_report_
    choices = {"private_choices": choices_report(est.privacy_parts_, est.privacy_, bound_budget(args))} \
        if est.privacy_parts_ else {}
    analysis = {"estimator": "PrivateIRLS", "n_iter": est.n_iter_, "w_max": args.w_max, "p": args.p,
                "fit_intercept": args.fit_intercept, "accounting": args.accounting,
                "budget_split": rep["budget"], "psd_floor_clipped": list(est.n_psd_clipped_),
                "loaded_into_memory": True, "estimate": "coefficients.csv", "standard_errors": "coefficients_se.npy",
                **coefficient_fields(est, names), **noise.fields()}
    privacy = {"mechanism": f"{args.first_moment} (cross moment) + gaussian (second moment), 2 x {est.n_iter_} releases",
               "sensitivity": rep["sensitivity"], "sensitivity_norm": "l2 (l1 for a laplace cross moment)",
               "calibration": args.accounting, "noise_scale": rep["noise"], "row_norm": est.row_norm_,
               "response_bound": est.response_bound_}
    with ResultsDir(args.out, args.force) as res:
        save_coefficients(res, est, names)
        grid = args.epsilon_grid_values
        if not args.no_figures:
            res.save_figure("coefficients", coefficient_figure(est, names))
        if grid and not args.no_figures:
            d_aug = d + bool(args.fit_intercept)
            scales = [_at(clone(est).set_params(epsilon=e), est)._plan(n, d_aug)[3] for e in grid]
            _grid_figure(res, grid, scales, args)
        res.save_json("privacy_report.json", estimator_report(
            "regress", est.privacy_, privacy=privacy, source=source, fingerprint=fp, n=n, d=d, analysis=analysis,
            argv=args.argv, randomness=rep["randomness"], files=res.files, extra=choices))
    if not args.quiet:
        print(f"IRLS (p={args.p:g}, {est.n_iter_} iterations) on {n} rows x {d} columns of {source.path.name}:")
        for line in coefficient_lines(est, names):
            print(line)
        noise.print()
        b = est.budget_
        print(f"privacy: guarantee {est.privacy_}, neighbouring_relation {describe_relation(est.neighbours_)}; "
              f"calibration {args.accounting} over {2 * est.n_iter_} releases (per iteration {b.first_moment} + "
              f"{b.second_moment}); row_norm {est.row_norm_:g}, response_bound {est.response_bound_:g} (rows and "
              "responses clipped); " + randomness_text(rep["randomness"], False))
        for line in choices_lines(est.privacy_parts_, est.privacy_) if est.privacy_parts_ else ():
            print(line)
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


def _at(copy, est):
    """A clone that plans with the bounds ``est`` used (drawn privately or public): no data access."""
    copy.row_norm_, copy.response_bound_ = est.row_norm_, est.response_bound_
    return copy


def coefficients(est, names):
    """(labels, estimates, standard errors, (2, m) intervals), the intercept last when fitted."""
    from ..estimators.uncertainty import z_value

    labels, values, se, interval = list(names), list(est.coef_), list(est.coef_se_), est.coef_interval_
    if est.fit_intercept:
        half = z_value(est.level) * est.intercept_se_
        labels.append("(intercept)")
        values.append(est.intercept_)
        se.append(est.intercept_se_)
        interval = np.column_stack([interval, [est.intercept_ - half, est.intercept_ + half]])
    return labels, np.array(values, dtype=float), np.array(se, dtype=float), interval


def coefficient_fields(est, names):
    labels, values, se, interval = coefficients(est, names)
    return json_safe({"coefficients": dict(zip(labels, values.tolist())),
                      "coefficients_se": dict(zip(labels, se.tolist())),
                      "coefficients_interval": {k: iv for k, iv in zip(labels, interval.T.tolist())}})


def save_coefficients(res, est, names):
    labels, values, se, (lo, hi) = coefficients(est, names)
    res.save_table("coefficients.csv", ["feature", "coefficient", "se", "lower", "upper"],
                   [[k, repr(float(v)), repr(float(s)), repr(float(a)), repr(float(b))]
                    for k, v, s, a, b in zip(labels, values, se, lo, hi)])
    res.save_array("coefficients.npy", values)
    res.save_array("coefficients_se.npy", se)


def coefficient_lines(est, names):
    labels, values, se, (lo, hi) = coefficients(est, names)
    zero = (lo <= 0) & (hi >= 0)
    rows = [[k, num(v, 4), num(s), interval_text(a, b), "contains 0" if z else ""]
            for k, v, s, a, b, z in zip(labels, values, se, lo, hi, zero)]
    out = table(["coefficient", "estimate", "se", f"{100 * est.level:g}% interval", ""], rows)
    if zero.any():
        out.append(f"{int(zero.sum())} of {zero.size} intervals contain 0: those coefficients cannot be told from 0 "
                   "at this noise")
    return out


def coefficient_figure(est, names):
    from .. import plots

    labels, values, _, interval = coefficients(est, names)
    return plots.plot_estimates(values, interval, labels, level=est.level, value_name="coefficient",
                                title=f"IRLS coefficients ({est.privacy_}); signal_to_noise {num(est.snr_, 2)}")


def _grid_figure(res, grid, scales, args):
    from .. import plots

    curves = {"cross-moment noise scale": [s["A"] for s in scales],
              "second-moment noise scale": [s["B"] for s in scales]}
    ax = plots.plot_privacy_utility(grid, curves, label="per-iteration noise scale", chosen=args.epsilon,
                                    title="IRLS noise against epsilon (calibration only; no data access)")
    res.save_figure("privacy_utility", ax)

