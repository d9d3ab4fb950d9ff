"""``dpmoments simulate``: an in-process multi-site run, one input file per site.

Each file is read on its own into its own :class:`~dpmoments.multisite.Site` (one site's
rows never meet another's; the aggregator sees only what a site's door lets out), the
chosen protocol produces the analysis's releases, and the analysis is fitted to them
(post-processing). The headline guarantee is the one that holds against the aggregator,
and by default the noise is calibrated to meet the budget there.
"""

import hashlib
import re
from pathlib import Path

from ._args import (CliError, add_input_arguments, add_memory_arguments, add_output_arguments, add_privacy_arguments,
                    add_uncentred_argument, center_asked, check_uncentred, privacy_options)
from ._choices import bound_budget, center_budget, choices_of, too_few_rows_hint
from ._multisite import (ANALYSES, AUTO_ACROSS_SITES, CENTER_ACROSS_SITES, add_analysis_arguments, add_scale_argument,
                         auto_bounds, check_scale,
                         center_across_sites, check_analysis, fit_analysis, multisite_report, plan_options,
                         print_guarantees, response_bound_of)
from ._ranges import add_ranges_arguments, check_ranges_across_sites, plan_ranges_report, ranges_lines, site_ranges
from ..mechanisms import laws

from ..multisite.protocols import PROTOCOLS

HELP = "an in-process multi-site run of any analysis (CAPE, conventional, secure aggregation, local, pooled)"
DESCRIPTION = f"""\
Simulate a multi-site study in one process: every DATA file is one site, read separately (its rows
stay in its Site object; only what its door lets out reaches the aggregator). The sites run
--protocol (one of {', '.join(PROTOCOLS)}; trust assumptions below) on the releases --analysis
needs, and the analysis is fitted to them (post-processing). --protocol local uses one site alone
(--site, default the first file); dpdispca (pca only) sends rank-2K factors; pooled is the reference
of a trusted curator pooling every row.

Analyses: {', '.join(ANALYSES)}. Every site uses the same --row-norm (and --center) and
spends (--epsilon, --delta) on its own rows. The defaults are the single-machine commands': the
row bound is chosen across sites (--row-norm auto) and, for covariance, correlation, pca, precision and ridge, the rows
are centred about a private mean (--center private); a PUBLIC --row-norm or --center costs nothing,
and --uncentred gives the second moment about the origin. With --row-norm auto (and, for regress,
--response-bound auto) each site first sends a histogram of its row norms on a coarse public grid
(--search-range) with its own Gaussian noise, from --bound-share of its budget (default 0.1), and
the aggregator takes the highest quantile of their sum that its noise can place (at least the
0.95-quantile) as the bound for the rest of the run (refused in one line when there are too few
rows); for covariance, correlation, pca, precision and ridge each site then also releases what
clipping removed from each variance (0.1 of its budget), so the intervals count the clipping bias
and the report gives the clipped rows, as on one machine. --center C1,C2,... gives a PUBLIC centre and --center
private (the default) chooses one: {CENTER_ACROSS_SITES}. --protocol pooled, the reference,
makes the single-machine release of all the rows with the same choices (private centre and bound
by the single-machine procedure, --center-share and --location-share as there). The headline guarantee is the one that holds against
the aggregator, which sees every site's message (with --colluders colluding sites); by default the
noise is calibrated so that it meets (--epsilon, --delta) (--calibrate-to aggregator).
--calibrate-to per-site calibrates each message alone, as the papers do: the report then shows a
weaker guarantee against the aggregator. Each site's rows are loaded into memory (at most --max-rows
per site); a file given twice (by path or content) is refused.

""" + "\n".join(f"  {name}: {row.trust}" for name, row in PROTOCOLS.items())
EXAMPLES = """\
  dpmoments simulate site1.csv site2.csv site3.csv --epsilon 1 --delta 1e-6 --out sim
  dpmoments simulate site1.csv site2.csv site3.csv --protocol pooled --epsilon 1 --delta 1e-6 --out ref
  dpmoments simulate site1.csv site2.csv site3.csv --protocol cape --analysis covariance \\
      --epsilon 1 --delta 1e-5 --row-norm 3 --center 0 --out sim
  dpmoments simulate a.npy b.npy --analysis pca --n-components 2 --epsilon 1 --delta 1e-5 --row-norm 1 \\
      --uncentred --out sim
  dpmoments simulate a.csv b.csv c.csv --analysis regress --target y --epsilon 1 --delta 1e-5 --out irls

writes: the analysis's estimate (covariance.npy/.csv, components, precision + edges, selected.csv,
        coefficients.csv); privacy_report.json (with the protocol report)"""


def add_arguments(parser):
    add_input_arguments(parser, target=True)
    parser.add_argument("more_data", nargs="*", metavar="DATA", help="the other sites' files (one file per site)")
    add_memory_arguments(parser)
    add_privacy_arguments(parser, private=("row_norm", "center"), auto_default=True, auto_help=AUTO_ACROSS_SITES)
    add_uncentred_argument(parser, "the centred analyses (covariance, pca, precision, ridge)")
    add_ranges_arguments(parser.add_argument_group(
        "public ranges (covariance, correlation, pca, precision, ridge, select, regress, tensor-mog: part of "
        "the plan; each site clips and standardises its own rows; with the private centre the columns get private "
        "scales as on one machine)"))
    add_scale_argument(parser)
    group = parser.add_argument_group("protocol")
    group.add_argument("--protocol", default="cape", metavar="{" + ",".join(PROTOCOLS) + "}",
                       help="how the sites combine their statistics (default cape)")
    group.add_argument("--colluders", type=int, default=0, metavar="C",
                       help="sites assumed to collude with the aggregator (default 0)")
    group.add_argument("--calibrate-to", choices=("aggregator", "per-site"), default="aggregator",
                       help="meet the budget against the aggregator (default) or per message (the papers')")
    group.add_argument("--site", metavar="NAME", help="--protocol local: the site (file stem) that releases alone")
    add_analysis_arguments(parser)
    add_output_arguments(parser)


def _check(args):
    if args.protocol not in PROTOCOLS:
        raise CliError(f"unknown --protocol {args.protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    check_analysis(args)
    if laws.named(args.mechanism) is not laws.GAUSSIAN:
        raise CliError("the multi-site protocols use Gaussian noise only: drop --mechanism laplace")
    if args.neighbours == "add-remove":
        raise CliError("--neighbours add-remove is not supported across sites (each site's row count is public); "
                       "use replace-one or zero-out")
    if args.epsilon_grid is not None:
        raise CliError("--epsilon-grid is not supported by 'simulate'")
    if args.colluders < 0:
        raise CliError(f"--colluders must be >= 0; got {args.colluders}")
    if args.site is not None and args.protocol != "local":
        raise CliError("--site is for --protocol local")
    if args.protocol == "dpdispca" and args.analysis != "pca":
        raise CliError("--protocol dpdispca is PCA's baseline: use it with --analysis pca")
    if args.protocol == "pooled" and args.analysis not in ("covariance", "correlation", "pca", "precision", "ridge"):
        raise CliError("--protocol pooled is the second-moment reference: use it with covariance, correlation, pca, "
                       "precision or ridge")
    if args.analysis in ("select", "regress") and args.target is None:
        raise CliError(f"--target is required for --analysis {args.analysis}: each site's response column")
    check_uncentred(args)
    check_ranges_across_sites(args)
    check_scale(args)
    names, _ = auto_bounds(args)
    if "response_bound" in names and args.protocol == "pooled":
        raise CliError("--protocol pooled takes a PUBLIC --response-bound (the pooled reference of a second moment)")
    if center_asked(args) == "private" and args.protocol == "dpdispca":
        raise CliError("--center private (the default) cannot be used with --protocol dpdispca: its sites send "
                       "factors of the second moment, and the mean round has none; give --uncentred or a PUBLIC "
                       "--center")


def _site_names(paths):
    stems = [re.sub(r"[^A-Za-z0-9._-]", "-", Path(p).stem).lstrip(".-_") or "site" for p in paths]
    if len(set(stems)) == len(stems):
        return stems
    return [f"{s}-{k + 1}" for k, s in enumerate(stems)]


def _refuse_twice(sources):
    """Two sites holding the same rows would break every guarantee: refuse a file given twice (path or content)."""
    seen, digests = {}, {}
    for s in sources:
        path = s.path.resolve()
        if path in seen:
            raise CliError(f"'{s.path}' and '{seen[path]}' are the same file: each file is one site")
        seen[path] = s.path
        if not path.is_file():  # a Zarr directory: by path only
            continue
        h = hashlib.sha256()  # kept in memory for this check only, never written
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        if h.digest() in digests:
            raise CliError(f"'{s.path}' has the same content as '{digests[h.digest()]}': two sites cannot hold "
                           "the same rows")
        digests[h.digest()] = s.path


def run(args):
    from ._io import fingerprint
    from ._output import check_destination, ResultsDir

    _check(args)
    check_destination(args.out, args.force)
    paths = [args.data] + list(args.more_data)
    names = _site_names(paths)
    if len(paths) < PROTOCOLS[args.protocol].min_sites:
        raise CliError(f"--protocol {args.protocol} needs at least {PROTOCOLS[args.protocol].min_sites} site files; "
                       f"got {len(paths)}")
    target = args.target if args.analysis in ("select", "regress") else None
    sources, names = _site_sources(args, paths, names, target)
    features = sources[0].feature_names
    request = privacy_options(args, len(features))
    kwargs = request.release_kwargs()
    ranges = site_ranges(args, features)
    fingerprints, sites = [], []
    for name, source in zip(names, sources):  # one site at a time: its rows go into its own Site
        fingerprints.append(fingerprint(source, args))
        sites.append(_site(name, source, args, kwargs, ranges))
    with too_few_rows_hint(request.choices):
        output, report = _release(args, sites, kwargs, None if ranges is None else [str(c) for c in features])
    labels = features + ([target] if args.analysis == "select" else [])
    analysis, save, summary, noise_lines = fit_analysis(args, args.analysis, output, labels)
    analysis.update(protocol=args.protocol, sites=names)
    with ResultsDir(args.out, args.force) as res:
        save(res)
        rep = multisite_report("simulate", output, report, analysis, args.argv, res.files + ["privacy_report.json"],
                               plan_ranges_report(ranges, features, output))
        rep["input"] = _input_report(names, sources, sites, fingerprints, len(labels))
        res.save_json("privacy_report.json", rep)
    if not args.quiet:
        print(f"{args.protocol}: {len(sites)} site(s) ({', '.join(f'{s.name}: {s.n} rows' for s in sites)}), "
              f"{len(features)} columns; analysis {args.analysis}: {summary}")
        for line in noise_lines + (ranges_lines(output) if ranges is not None else []):
            print(line)
        print_guarantees(report)
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


def _site_sources(args, paths, names, target):
    """Each site's opened file (headers and column selections checked, none given twice), the one site of
    ``--protocol local``, and their names; refused unless every site gives the same columns."""
    from ._io import DataSource

    sources = [DataSource(p, args.columns, target) for p in paths]  # every header and column selection checked now
    _refuse_twice(sources)
    if args.protocol == "local":
        pick = names[0] if args.site is None else args.site
        if pick not in names:
            raise CliError(f"--site {pick!r} is not one of the sites: {', '.join(names)}")
        sources, names = [sources[names.index(pick)]], [pick]
    features = sources[0].feature_names
    for s in sources[1:]:
        if s.feature_names != features:
            raise CliError(f"site '{s.path}' has columns {s.feature_names}; site '{sources[0].path}' has {features}: "
                           "every site must give the same columns (use --columns)")
    return sources, names


def _input_report(names, sources, sites, fingerprints, n_columns):
    """The report's ``input``: each site's file, rows and provenance hash, and the pooled shape."""
    return {"sites": [dict(s.describe(), name=nm, rows=site.n, fingerprint=None if fp is None else dict(
        fp, note="a deterministic hash of the site's file for provenance; not differentially private"))
        for nm, s, site, fp in zip(names, sources, sites, fingerprints)],
            "shape": [sum(site.n for site in sites), n_columns]}


def _site(name, source, args, kwargs, ranges):
    from ..multisite import Site
    from ._io import read_in_memory

    X, y = read_in_memory(source, args)
    bound = response_bound_of(args) if args.analysis == "regress" else None
    row_norm = None if args.analysis == "tensor-stm" else kwargs["row_norm"]
    return Site(name, X, y, row_norm=row_norm, response_bound=bound, center=kwargs["center"], ranges=ranges)


def _release(args, sites, kwargs, columns):
    """The run's output and report; ``columns``: the public column names the plan carries (or ``None``)."""
    from ..multisite import run_pooled
    from ..multisite.api import analyse

    common = dict(epsilon=kwargs["epsilon"], delta=kwargs["delta"], neighbours=kwargs["neighbours"],
                  calibration=kwargs["calibration"], rng=kwargs["rng"])
    if args.protocol == "pooled":
        if args.colluders:
            raise CliError("--colluders has no meaning for --protocol pooled")
        choices = choices_of(args)  # the single-machine shares: the pooled reference is one machine's release
        return run_pooled(sites, center_budget=center_budget(choices), bound_budget=bound_budget(choices),
                          scale=args.scale, **common)
    if args.colluders and args.protocol == "local":
        raise CliError("--colluders has no meaning for --protocol local")
    rank = min(2 * args.n_components, sites[0].n_features) if args.protocol == "dpdispca" else None
    response = str(args.target) if columns is not None and args.analysis in ("select", "regress") else None
    return analyse(sites, args.analysis, protocol=args.protocol, options=plan_options(args), columns=columns,
                   response_column=response, scale=args.scale,
                   target=args.calibrate_to, colluders=args.colluders, rank=rank, bound_budget=auto_bounds(args)[1],
                   center_budget=center_across_sites(args), **common)
