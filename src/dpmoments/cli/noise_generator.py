"""``dpmoments noise-generator``: the trusted dealer of a deployed run (the plan, built once, and a share file per site).

Writes ``OUT/plan.json`` (public: give it to the aggregator) and ``OUT/<site>.npz`` (the
plan and the site's secret shares: deliver each to its site only, out of band -- never
via the aggregator).
"""

from ..multisite.protocols import PROTOCOLS
from ..privacy.relations import NEIGHBOURS
from ..multisite.columns import takes_response
from ._args import (CliError, _delta, _epsilon, add_uncentred_argument, center_asked, check_uncentred,
                    parse_columns, positive_int)
from ._choices import ROW_NORM_DEFAULT, add_choice_arguments, bound_or_auto, choices_of, too_few_rows_hint
from ._ranges import add_plain_ranges_arguments, check_ranges_across_sites, site_ranges
from ._multisite import (AUTO_ACROSS_SITES, ANALYSES, CENTER_ACROSS_SITES, add_analysis_arguments, add_scale_argument,
                         auto_bounds, check_scale,
                         center_across_sites, check_analysis, plan_options, response_bound_of)

HELP = "build a deployed run's plan and deal each site its share file (the trusted noise generator)"
DESCRIPTION = f"""\
The trusted noise generator of a multi-site run deployed with 'dpmoments site' and 'dpmoments
aggregate' (Flower or gRPC). From public facts only -- site names, row counts N_s, the number of
features, the public row bound and each site's (epsilon, delta) -- it builds the plan once (the
noise of every round solved here, never again) and deals CAPE's zero-sum shares e_s. By default
the noise is calibrated so that the guarantee AGAINST THE AGGREGATOR, which sees every site's
message, meets (epsilon, delta) with --colluders sites helping it; --calibrate-to per-site
calibrates each message alone (the papers' claim, for reproductions). It writes OUT/plan.json
(public) and one secret share file OUT/<site>.npz per site. Deliver each share file to its site
only, over a channel the aggregator does not control: if the aggregator saw e_s it could strip the
noise from that site's message. Analyses: {', '.join(ANALYSES)}. Randomness comes from OS entropy
unless --seed is given (tests only)."""
EXAMPLES = """\
  dpmoments noise-generator --sites north=20000,south=30000,east=25000 --n-features 3 \\
      --epsilon 1 --delta 1e-6 --out shares
  dpmoments noise-generator --sites north=200,south=300,east=250 --n-features 3 \\
      --epsilon 1 --delta 1e-5 --row-norm 1 --uncentred --out shares
  dpmoments noise-generator --sites a=5000,b=4000 --n-features 6 --analysis regress --n-iter 5 \\
      --w-max 10 --response-bound 3 --epsilon 1 --delta 1e-6 --row-norm 3 --out shares

writes: shares/plan.json (public), shares/<site>.npz (secret, mode 600)"""


def add_arguments(parser):
    parser.add_argument("--sites", required=True, metavar="NAME=N,...",
                        help="every site and its (public) row count, e.g. north=200,south=300")
    parser.add_argument("--n-features", type=positive_int, metavar="D",
                        help="columns of each site's data (without the response; word ids: 3); "
                             "default: the number of --columns")
    parser.add_argument("--columns", metavar="A,B,...",
                        help="the names of the feature columns every site gives, in order (public schema): each site "
                             "then selects them by name, so a file with its columns in another order or missing one "
                             "cannot join mixed up. Without them a site can check only their number")
    parser.add_argument("--target", metavar="COL", help="with --columns, for select and regress: the response "
                                                        "column's name")
    parser.add_argument("--epsilon", type=_epsilon, required=True, help="each site's epsilon ('inf': no noise)")
    parser.add_argument("--delta", type=_delta, required=True, help="each site's delta")
    parser.add_argument("--row-norm", type=bound_or_auto, metavar="R|auto", default=ROW_NORM_DEFAULT,
                        help="the L2 bound on each row: 'auto' (the default; none for tensor-stm): the plan starts "
                             f"with a bound step; {AUTO_ACROSS_SITES}; or a PUBLIC number, free")
    parser.add_argument("--center", choices=("private",),
                        help="the centre subtracted from every row before clipping (default for covariance, "
                             f"correlation, pca, precision and ridge: private): {CENTER_ACROSS_SITES}. The sites "
                             "read it from the plan")
    add_uncentred_argument(parser, "the centred analyses (covariance, pca, precision, ridge)")
    add_choice_arguments(parser, center=True, scale=False, sites=True)
    add_plain_ranges_arguments(parser, (
        "PUBLIC per-column ranges (covariance, correlation, pca, precision, ridge, select, regress, tensor-"
        "mog; the --target's too), by a name of --columns or a 0-based position: written into the plan, every site "
        "clips its ranged columns to them and standardises them by the midpoint and half-width before anything "
        "else (free); the result is mapped back to the columns' units. With the private centre the columns get "
        "private scales as on one machine (a 0/1 column its range's); with --uncentred a column without a range "
        "keeps its units"))
    add_scale_argument(parser)
    parser.add_argument("--protocol", default="cape", choices=[n for n, p in PROTOCOLS.items() if p.deployable],
                        help="default cape (the protocols that run across machines)")
    parser.add_argument("--rank", type=positive_int, metavar="R", help="--protocol dpdispca: the factors' rank")
    parser.add_argument("--colluders", type=int, default=0, metavar="C",
                        help="sites assumed to collude with the aggregator (default 0)")
    parser.add_argument("--calibrate-to", choices=("aggregator", "per-site"), default="aggregator",
                        help="meet the budget against the aggregator (default) or per message (the papers')")
    parser.add_argument("--neighbours", default="replace-one", choices=NEIGHBOURS,
                        help="replace-one (default) or zero-out; add-remove is refused across sites (each site's "
                             "row count is public in the plan)")
    parser.add_argument("--calibration", default="analytic", choices=("analytic", "classic", "zcdp"))
    add_analysis_arguments(parser, fit=False)
    parser.add_argument("--seed", type=int, help="reproducible shares (tests only; NOT secure)")
    parser.add_argument("--out", required=True, metavar="DIR", help="a new directory for plan.json and the share "
                                                                     "files, written atomically")
    parser.add_argument("--force", action="store_true", help="replace an earlier dealing in --out (every share in it "
                                                             "is then void: the sites must get the new ones)")


def parse_sites(text):
    sites, sizes = [], []
    for item in text.split(","):
        name, sep, n = item.strip().partition("=")
        if not sep or not name:
            raise CliError(f"--sites: expected NAME=N, got {item!r}")
        try:
            sizes.append(int(n))
        except ValueError:
            raise CliError(f"--sites: row count of {name!r} must be an integer; got {n!r}") from None
        if sizes[-1] < 1:
            raise CliError(f"--sites: row count of {name!r} must be at least 1; got {n!r}")
        if name in sites:
            raise CliError(f"--sites gives site {name!r} twice; give each site once")
        sites.append(name)
    return tuple(sites), tuple(sizes)


def run(args):
    from ..multisite import deal, write_bundle
    from ..multisite.dealer import plan_json
    from ..multisite.analyses import plan_analysis
    from ._output import ResultsDir, check_destination

    check_analysis(args, fit=False)
    check_uncentred(args)
    if center_asked(args) == "private" and args.protocol == "dpdispca":
        raise CliError("--center private (the default) cannot be used with --protocol dpdispca: its sites send "
                       "factors of the second moment, and the mean round has none; give --uncentred")
    if args.neighbours == "add-remove":
        raise CliError("--neighbours add-remove is not supported across sites (each site's row count is public in "
                       "the plan); use replace-one or zero-out")
    check_ranges_across_sites(args)
    check_scale(args)
    _, budget = auto_bounds(args)
    columns = plan_columns(args)
    ranges = site_ranges(args, columns.get("columns") or [f"x{j}" for j in range(columns["n_features"])])
    check_destination(args.out, args.force)
    sites, sizes = parse_sites(args.sites)
    with too_few_rows_hint(choices_of(args)):
        plan = plan_analysis(args.analysis, args.protocol, sites, sizes, **columns,
                             options=plan_options(args), epsilon=args.epsilon,
                             row_norm=1.0 if args.analysis == "tensor-stm" else args.row_norm,
                             delta=args.delta, response_bound=response_bound_of(args), neighbours=args.neighbours,
                             calibration=args.calibration, target=args.calibrate_to, colluders=args.colluders,
                             rank=args.rank, bound_budget=budget, center=center_asked(args),
                             center_budget=center_across_sites(args), ranges=ranges, scale=args.scale)
    _check_memory(plan, args)
    with ResultsDir(args.out, args.force) as res:  # all the shares of one plan, or none: never a mix of two dealings
        for site, bundle in deal(plan, args.seed).items():
            write_bundle(bundle, res.path(f"{site}.npz"))
        res.save_text("plan.json", plan_json(plan))
    if not args.quiet:
        _print(args, plan, sites)
    return 0


def _check_memory(plan, args):
    """Refuse a deal larger than this machine's memory at once, naming --n-features (not after minutes of drawing)."""
    import os

    from ..multisite.dealer import deal_bytes

    need = deal_bytes(plan)
    try:
        have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows): let the deal try
        return
    if need > have:
        raise CliError(f"--n-features {plan.n_features}: dealing the shares of {len(plan.sites)} site(s) needs about "
                       f"{need / 2**30:.3g} GiB, more than this machine's memory; lower --n-features")


def plan_columns(args):
    """``--columns``/``--target`` checked, as the plan's ``columns``/``response_column`` and ``n_features``."""
    if args.columns is None:
        if args.target is not None:
            raise CliError("--target names the response column beside --columns: give --columns too")
        if args.n_features is None:
            raise CliError("--n-features (or --columns) is required: the number of columns of each site's data")
        return {"n_features": args.n_features}
    names = parse_columns(args.columns)
    if any(isinstance(c, int) for c in names) or len(set(names)) != len(names):
        raise CliError(f"--columns must be distinct column names (each site's header holds them), not positions; "
                       f"got {args.columns!r}")
    if args.n_features is not None and args.n_features != len(names):
        raise CliError(f"--n-features {args.n_features} differs from the {len(names)} names of --columns")
    from ..multisite.analyses import ANALYSES as ANALYSIS_ROWS  # here: the rows load the solvers; --help needs none

    rows = ANALYSIS_ROWS[args.analysis].rows
    if rows == "stm":
        raise CliError("--columns names a table's columns; --analysis tensor-stm reads word ids: leave it out")
    if takes_response(rows, args.analysis) != (args.target is not None):
        raise CliError(f"--target (the response column's name) is {'required' if args.target is None else 'not taken'}"
                       f" with --columns for --analysis {args.analysis}")
    if args.target in names:
        raise CliError("--target must not be one of --columns")
    return {"columns": names, "response_column": args.target, "n_features": len(names)}


def _print(args, plan, sites):
    from pathlib import Path

    from ..multisite.report import collusion_line

    out = Path(args.out)
    worst = max((plan.cost(s) for s in sites), key=lambda g: g.epsilon)
    print(f"plan {plan.digest[:12]} ({args.analysis}, {args.protocol}) for {len(sites)} sites: {out / 'plan.json'} "
          "(public)")
    print(f"guarantee against the aggregator ({plan.colluders} colluder(s)), worst site: {worst}  <- holds")
    print(f"collusion: {collusion_line(plan.collusion)} (--colluders C calibrates for C)")
    if plan.location is not None:
        print(f"location steps first: {plan.location.steps} rounds of the sites' noisy per-coordinate histograms "
              f"({plan.location.n_bins} bins on +-[{plan.location.low:g}, {plan.location.high:g}]), share "
              f"{plan.location.share:g}, then a mean round, share {plan.location.mean:g}, of each site's budget, "
              "included above")
    if plan.auto is not None:
        print(f"bound step {'next' if plan.location is not None else 'first'}: {', '.join(plan.auto.names)} chosen "
              "from the sites' noisy histograms "
              f"({plan.auto.n_bins} bins on [{plan.auto.low:g}, {plan.auto.high:g}]), share {plan.auto.share:g} of "
              "each site's budget, included above")
    if plan.excess_round is not None:
        print(f"clipping excess with the moments: what clipping at the chosen row_norm removes from each variance, "
              f"share {plan.rounds[plan.excess_round].share:g} of each site's budget, included above (the intervals "
              "count the clipping bias)")
    if plan.columns is None and plan.rows != "stm":
        print(f"columns: not named, so each site can check only that it gives {plan.feature_width} columns; give "
              "--columns to have every site select them by name")
    for s in sites:
        print(f"  {s}: {out / f'{s}.npz'} (secret: deliver to site {s!r} only)")
    print("each share answers once where it is used; a copy kept elsewhere before its first use is out of the site's "
          f"sight: delete the share files in {out} once delivered")
