"""``dpmoments select``: epsilon-DP choice of a linear model's columns (Lei et al. 2018).

The estimator's criterion comes from the sufficient statistics X^T X, X^T y,
y^T y of the clipped data; :class:`~dpmoments.estimators.PrivateModelSelection`
takes arrays, so this subcommand loads the selected columns into memory
(``--max-rows`` caps it).

Noise: the console prints how likely the noisy choice is the exact one
(``selection_probability``, ``tie_probability`` from the noisy gap to the
runner-up). A choice within the noise is withheld: the console says the
choice is not distinguishable from noise instead of naming a model, and
``selected.csv`` (still written) is marked as noise in the report.
"""

import math

from ._args import (CliError, _bound, _epsilon, add_input_arguments, add_memory_arguments, add_output_arguments,
                    seed_int)
from ._choices import (add_choice_arguments, bound_budget, bound_or_auto, check_choices, choices_lines, choices_of,
                       choices_report, too_few_rows_hint)
from ._noise import json_safe
from ._numbers import radius_or_private
from ._ranges import add_model_ranges_arguments, bound_or_ranges, model_ranges, select_bounds
from ..privacy.relations import describe_relation
from ..estimators.model_defaults import R_SHARE

HELP = "epsilon-DP selection of a linear model's columns (penalised L1-constrained least squares)"
DESCRIPTION = """\
Choose the columns of a linear model y ~ X privately (Lei, Charest, Slavkovic, Smith & Fienberg
2018): for every candidate model M (all subsets of at most --max-size columns, fixed before seeing
the data) compute Q(M) = min ||y - X b||^2 over b supported on M with ||b||_1 <= --R (by default
chosen privately from a tenth of epsilon), add the
penalty phi |M| (by default phi = 8 log|M| (r + B R)^2 / epsilon, 'theorem': Lei et al.'s
consistency scale, in units of y^2, well above the selection noise) and report the noisy argmin
(Laplace report-noisy-min, or the exponential mechanism). Pure epsilon-DP, replace-one.

Clipping: every entry of X is clipped to [-B, B] (--bounds) and y to [-r, r] (--response-bound),
so each squared residual lies in [0, (r + B R)^2], the sensitivity of every Q(M). By default both
bounds are 'auto': private 0.95-quantiles of max_j |x_ij| and |y| (lowered on small data to leave
the draw's rank error above them, never below the 0.75-quantile), one exponential-mechanism draw
each from --bound-share 0.1 of epsilon (split equally; on a small table the default share grows,
at most to 0.7, to what the draws need; a share typed is kept), listed in the report; a PUBLIC
bound, chosen before seeing the data, costs nothing and is used as given. Only the chosen model is
released, never the scores. Too few rows for the draws (about 193/n: 150 rows below epsilon 1.3)
are refused in one line that says from which --epsilon (or --bound-share) the run goes through.

Memory: the selected columns and the target are loaded into memory (at most --max-rows rows)."""
EXAMPLES = """\
  dpmoments select data.csv --target y --epsilon 1 --out sel
  dpmoments select data.csv --target y --epsilon 1 --ranges age=0:120,smoker=0:1,y=0:400 --out sel
  dpmoments select data.csv --target y --epsilon 1 --bounds 1 --response-bound 4 --R 2 --out sel
  dpmoments select data.parquet --target y --max-size 2 --mechanism exponential --epsilon 1 --bounds 1 \\
      --response-bound 4 --R 2 --phi 500 --out sel

writes: selected.csv, privacy_report.json, privacy_utility.png (with --epsilon-grid)"""


def add_arguments(parser):
    add_input_arguments(parser, target=True, several=True)
    add_memory_arguments(parser)
    group = parser.add_argument_group("privacy (required: --epsilon; pure epsilon-DP)")
    group.add_argument("--epsilon", type=_epsilon, metavar="EPS", help="epsilon > 0 of the selection (required)")
    group.add_argument("--bounds", action="append", type=bound_or_ranges(bound_or_auto),
                       metavar="B|auto|COL=LOW:HIGH,...",
                       help="the entrywise bound (default auto): every X_ij is clipped to [-B, B]; a PUBLIC number, or "
                            "'auto', a private 0.95-quantile of max_j |x_ij| paid from --bound-share. Given as "
                            "COL=LOW:HIGH,... it is --ranges (the option may be given twice, once each way)")
    group.add_argument("--response-bound", type=bound_or_auto, metavar="r|auto", default="auto",
                       help="the bound on |y| (default auto): responses are clipped to [-r, r]; a PUBLIC number, or "
                            "'auto', a private 0.95-quantile of |y| paid from --bound-share (the auto bounds share "
                            "it equally: one exponential-mechanism draw each on the public --search-range)")
    add_choice_arguments(group, center=False, scale=False)
    add_model_ranges_arguments(group, entrywise=True)
    group.add_argument("--R", type=radius_or_private, metavar="RADIUS|private", dest="R", default="private",
                       help="the L1 radius of the coefficients: the sensitivity is (r + B R)^2. A PUBLIC number, or "
                            f"'private' (default): the L1 norm of the full model's least-squares fit to Laplace-noised "
                            f"moments, paid from {R_SHARE:g} of --epsilon (listed in the report)")
    group.add_argument("--mechanism", choices=("noisy-min", "exponential"), default="noisy-min",
                       help="Laplace report-noisy-min or the exponential mechanism (default noisy-min)")
    group.add_argument("--seed", type=seed_int, metavar="INT",
                       help="seed the noise: reproducible but NOT secure (default: fresh OS entropy)")
    est = parser.add_argument_group("candidates and penalty (public, fixed before the data are read)")
    est.add_argument("--candidates", choices=("all", "nested"), default="all",
                     help="all subsets of at most --max-size columns, or the nested {1}, {1,2}, ... (default all)")
    est.add_argument("--max-size", type=int, metavar="K", help="largest model size (default: every column)")
    est.add_argument("--phi", default="theorem", metavar="PHI",
                     help="penalty per column, in units of y^2: a number >= 0, 'theorem' = 8 log|M| (r + B R)^2 / "
                          "epsilon (default), or 'bic' = sigma2 log n")
    est.add_argument("--sigma2", type=_bound, default=1.0, metavar="S",
                     help="the public noise variance of y (units of y^2) used by phi='bic' (default 1)")
    add_output_arguments(parser)


def _phi(text):
    if text in ("bic", "theorem"):
        return text
    try:
        value = float(text)
    except ValueError:
        raise CliError(f"--phi must be a number >= 0, 'theorem' or 'bic'; got {text!r}") from None
    if not value >= 0 or math.isinf(value):
        raise CliError(f"--phi must be a finite number >= 0, 'theorem' or 'bic'; got {text}")
    return value


def _check(args):
    from ._io import require_target

    require_target(args)
    if args.epsilon is None:
        raise CliError("--epsilon is required: the privacy parameter epsilon > 0 of the selection")
    bounds = select_bounds(args)[0]  # the entrywise bound (--bounds COL=LOW:HIGH,... are ranges)
    choices = choices_of(args, [k for k, v in (("bounds", bounds), ("response_bound", args.response_bound))
                                if v == "auto"])
    check_choices(choices)
    if args.max_size is not None and args.max_size < 1:
        raise CliError(f"--max-size must be >= 1; got {args.max_size}")
    return _phi(args.phi), choices


def run(args):
    from ..estimators import PrivateModelSelection
    from ..estimators.model_selection import candidate_family
    from ._io import fingerprint, open_input, read_in_memory
    from ._output import ResultsDir
    from ._release import epsilon_grid
    from ._report import estimator_report
    from .present.select import privacy_parts, select_noise

    phi, choices = _check(args)
    source = open_input(args, target=args.target)
    grid = epsilon_grid(args)
    try:
        family = candidate_family(args.candidates, args.max_size, source.n_features)  # refuses too many, now
    except ValueError as exc:  # the estimator's words name its parameters; these are the command's options
        raise CliError(str(exc).replace("candidates='all'", "--candidates all").replace("'max_size'", "--max-size")
                       .rstrip(".")) from None
    ranges, response_range = model_ranges(args, source.feature_names)
    est = PrivateModelSelection(epsilon=args.epsilon, bounds=select_bounds(args)[0], response_bound=args.response_bound,
                                R=args.R, ranges=ranges, response_range=response_range, candidates=args.candidates,
                                max_size=args.max_size, phi=phi,
                                sigma2=args.sigma2, mechanism=args.mechanism, rng=args.seed,
                                bound_budget=bound_budget(choices))
    fp = fingerprint(source, args)
    X, y = read_in_memory(source, args)
    with too_few_rows_hint(choices, ranges=True):  # every column's range (the target's too) draws nothing
        est.fit(X, y)
    n, d = X.shape
    del X, y
    names = source.feature_names
    rep = est.privacy_report_
    chosen = [names[j] for j in est.selected_]
    parts = privacy_parts(est, rep)
    chose = bool(est.bound_parts_) or args.R == "private"  # a private choice was paid for: list every share
    noise = select_noise(est)
    analysis = noise.analysis(_analysis(est, rep, chosen, len(family), args))
    privacy = _privacy(est, rep, args)
    with ResultsDir(args.out, args.force) as res:
        res.save_table("selected.csv", ["feature", "index"], [[names[j], j] for j in est.selected_])
        if grid and not args.no_figures:
            _save_figure(res, est, rep, grid, choices, args)
        res.save_json("privacy_report.json", estimator_report(
            "select", est.privacy_, privacy=privacy, source=source, fingerprint=fp, n=n, d=d, analysis=analysis,
            argv=args.argv, randomness=rep["randomness"], files=res.files,
            extra={"private_choices": choices_report(parts, est.privacy_, _budget_taken(est, choices))} if chose
            else None))
    if not args.quiet:
        where = f"{d} columns of {source.name} ({n} rows, {len(family)} candidate models)"
        _print_result(est, rep, privacy, noise, chosen, where, parts if chose else None, res.files, args)
    return 0


def _analysis(est, rep, chosen, n_candidates, args):
    """The report's ``analysis``: the model chosen, the criterion's parts and how sure the choice is."""
    return {"estimator": "PrivateModelSelection", "selected": chosen, "selected_index": list(est.selected_),
            "n_candidates": n_candidates, "candidates": args.candidates, "max_size": args.max_size,
            "R": est.R_, "phi": est.phi_, "sigma2": est.sigma2_, "budget_parts": rep["budget_parts"],
            "scores_released": False, "loaded_into_memory": True, "estimate": "selected.csv",
            **json_safe({"selection_probability": est.selection_probability_, "selection_gap": est.selection_gap_,
                         "tie_probability": est.tie_probability_})}


def _privacy(est, rep, args):
    """The report's ``privacy``: the selection's mechanism, its sensitivity and the bounds that fix it."""
    return {"mechanism": ("laplace report-noisy-min" if args.mechanism == "noisy-min" else "exponential"),
            "sensitivity": rep["sensitivity_Q"], "sensitivity_norm": "criterion (every Q(M) at once)",
            "sensitivity_exact_minimum": rep["sensitivity_Q_exact_minimum"],
            "certified_gap": rep["certified_gap"],
            "noise_scale": rep["selection_noise_scale"], "entry_bound": est.bounds_,
            "response_bound": est.response_bound_, "l1_radius": est.R_,
            "clipping": "every entry X_ij is clipped to [-B, B] (--bounds) and y to [-r, r] (--response-bound); "
                        + ("the bounds were drawn privately (private_choices)" if est.bound_parts_
                           else "the bounds are PUBLIC, chosen before seeing the data")
                        + "; (r + B R)^2 bounds every squared residual and so the sensitivity of every "
                        "candidate's exact minimum; each Q(M) is certified to within certified_gap of it for every "
                        "input (a duality gap, or the ellipsoid method's bound after a "
                        "number of steps fixed by n and the model's size), which the sensitivity adds"}


def _budget_taken(est, choices):
    """The bounds' budget as the fit spent it: on a small table the default share widens (_selection_share.py)."""
    import dataclasses

    budget = bound_budget(choices)
    taken = sum(p.share for p in est.bound_parts_ if p.share)
    return dataclasses.replace(budget, share=taken) if taken else budget


def _save_figure(res, est, rep, grid, choices, args):
    """The selection's noise against epsilon over the --epsilon-grid (its calibration only: no data)."""
    from .. import plots

    # the selection's share of epsilon, as the fit took it (on a small table its bounds may take more than given)
    kept = next(p.guarantee.epsilon for p in est.privacy_parts_ if p.label == "selection") / args.epsilon
    scale = [2.0 * rep["sensitivity_Q"] / (kept * e) for e in grid]
    ax = plots.plot_privacy_utility(grid, scale, label="Laplace scale of each criterion (2 Delta / epsilon)",
                                    chosen=args.epsilon, title="selection noise against epsilon "
                                                               "(calibration only)")
    res.save_figure("privacy_utility", ax)


def _print_result(est, rep, privacy, noise, chosen, where, parts, files, args):
    """The console: the model chosen (or none, within the noise), its margin, the noise and privacy lines and, when a
    private choice was paid for (``parts``), every share."""
    from ._report import randomness_text
    from .present.select import margin_lines

    if noise.withholds:
        print(f"no model selected from {where}: the choice is not distinguishable from noise")
    else:
        print(f"selected {len(chosen)} of {where}: {', '.join(chosen) if chosen else '(none)'}")
    for line in margin_lines(est):
        print(line)
    noise.print()
    print(f"privacy: guarantee {est.privacy_}, neighbouring_relation {describe_relation(est.neighbours_)}; "
          f"mechanism {privacy['mechanism']}, sensitivity {rep['sensitivity_Q']:.3g} (criterion); entry_bound "
          f"{est.bounds_:g}, response_bound {est.response_bound_:g}, l1_radius {est.R_:.4g}"
          + (" (private)" if args.R == "private" else "") + "; "
          + randomness_text(rep["randomness"], False))
    for line in choices_lines(parts, est.privacy_) if parts is not None else ():
        print(line)
    print(f"results in {args.out}/ ({', '.join(sorted(files))})")


