"""``dpmoments simulate``: an in-process multi-site run, one input file per site.

Each file is read on its own into its own :class:`~dpmoments.distributed.Site`
(one site's rows never meet another's; the protocol sees only noisy
statistics), the chosen protocol produces a Release, and the chosen analysis
post-processes it. The report states both the per-site guarantee the protocol
*claims* (each message alone) and the *joint-view* guarantee against the
aggregator, which is the one that holds and the one the release carries.
"""

import numpy as np

from ._args import (CliError, add_input_arguments, add_output_arguments, add_privacy_arguments, parse_alpha,
                    privacy_options)
from ._io import DataSource
from ._output import ResultsDir, check_destination
from ._report import privacy_report, privacy_summary
from .regress import add_memory_arguments, fingerprint, read_in_memory

HELP = "an in-process multi-site run (CAPE, conventional, secure aggregation, local, pooled)"
PROTOCOLS = ("cape", "conventional", "secure-aggregation", "local", "pooled")
ANALYSES = ("covariance", "pca", "precision")
DESCRIPTION = """\
Simulate a multi-site study in one process: every DATA file is one site, read separately (its rows
stay in its Site object; only noisy statistics leave it). The sites run --protocol on their
second moments and the chosen --analysis is fitted to the aggregate release (post-processing):

  cape                trusted dealer of zero-sum noise shares; pooled-level noise (Imtiaz & Sarwate)
  conventional        every site adds its own full noise; the aggregate has ~S times CAPE's variance
  secure-aggregation  pairwise masks that cancel; CAPE's utility without a trusted dealer
  local               one site alone (--site, default the first file); nothing is shared
  pooled              reference only: a trusted curator pools every row and releases once

Every site uses the same public --row-norm (and --center) and spends (--epsilon, --delta) on its own rows. The
report gives the per-site CLAIMED guarantee (each message alone, as the papers state it) and the
JOINT-VIEW guarantee against the aggregator seeing every message (with --colluders colluding
sites), which is what actually holds and what the release carries. Each site's rows are loaded
into memory (at most --max-rows per site)."""
EXAMPLES = """\
  dpmoments simulate site1.csv site2.csv site3.csv --protocol cape --analysis covariance \\
      --epsilon 1 --delta 1e-5 --row-norm 3 --out sim
  dpmoments simulate a.npy b.npy --protocol conventional --analysis pca --n-components 2 \\
      --epsilon 1 --delta 1e-5 --row-norm 1 --out sim
  dpmoments simulate a.csv b.csv c.csv d.csv --protocol secure-aggregation --colluders 1 \\
      --analysis precision --epsilon 1 --delta 1e-5 --row-norm 3 --out sim

writes: covariance.npy/.csv | components.npy/.csv + explained_variance.csv | precision.npy/.csv +
        edges.csv; privacy_report.json (with the protocol report); the figure of the analysis"""


def add_arguments(parser):
    add_input_arguments(parser)
    parser.add_argument("more_data", nargs="*", metavar="DATA", help="the other sites' files (one file per site)")
    add_memory_arguments(parser)
    add_privacy_arguments(parser)
    group = parser.add_argument_group("protocol and analysis")
    group.add_argument("--protocol", default="cape", metavar="{" + ",".join(PROTOCOLS) + "}",
                       help="how the sites combine their statistics (default cape)")
    group.add_argument("--colluders", type=int, default=0, metavar="C",
                       help="sites assumed to collude with the aggregator, for the joint-view guarantee (default 0)")
    group.add_argument("--site", metavar="NAME", help="--protocol local: the site (file stem) that releases alone")
    group.add_argument("--analysis", default="covariance", metavar="{" + ",".join(ANALYSES) + "}",
                       help="what is fitted to the aggregate release (default covariance)")
    group.add_argument("--n-components", type=int, metavar="K", help="--analysis pca: number of components")
    group.add_argument("--alpha", default="ebic", metavar="A",
                       help="--analysis precision: the graphical-lasso penalty, a number or 'ebic' (default)")
    add_output_arguments(parser)


def _check(args):
    if args.protocol not in PROTOCOLS:
        raise CliError(f"unknown --protocol {args.protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    if args.analysis not in ANALYSES:
        raise CliError(f"unknown --analysis {args.analysis!r}; choose one of {', '.join(ANALYSES)}")
    if args.mechanism != "gaussian":
        raise CliError("the multi-site protocols use Gaussian noise only: drop --mechanism laplace")
    if args.epsilon_grid is not None:
        raise CliError("--epsilon-grid is not supported by 'simulate'")
    if args.colluders < 0:
        raise CliError(f"--colluders must be >= 0; got {args.colluders}")
    if args.site is not None and args.protocol != "local":
        raise CliError("--site is for --protocol local")
    if args.analysis != "pca" and args.n_components is not None:
        raise CliError("--n-components is for --analysis pca")


def _site_names(paths):
    from pathlib import Path

    stems = [Path(p).stem for p in paths]
    if len(set(stems)) == len(stems):
        return stems
    return [f"{s}-{k + 1}" for k, s in enumerate(stems)]


def run(args):
    from ..distributed import Site

    _check(args)
    check_destination(args.out, args.force)
    paths = [args.data] + list(args.more_data)
    names = _site_names(paths)
    if len(set(map(str, paths))) != len(paths):
        raise CliError("a site file is given twice: each file is one site")
    if args.protocol in ("cape", "secure-aggregation") and len(paths) < 2:
        raise CliError(f"--protocol {args.protocol} needs at least 2 site files; got {len(paths)}")
    if args.protocol == "local":
        pick = names[0] if args.site is None else args.site
        if pick not in names:
            raise CliError(f"--site {pick!r} is not one of the sites: {', '.join(names)}")
        paths, names = [paths[names.index(pick)]], [pick]
    sources = [DataSource(p, args.columns) for p in paths]  # every header and column selection checked now
    features = sources[0].feature_names
    for s in sources[1:]:
        if s.feature_names != features:
            raise CliError(f"site '{s.path}' has columns {s.feature_names}; site '{sources[0].path}' has {features}: "
                           "every site must give the same columns (use --columns)")
    kwargs = privacy_options(args, len(features))
    alpha = _alpha(args)
    if args.analysis == "pca":
        from .pca import check_components

        check_components(args.n_components, len(features))
    fingerprints, sites = [], []
    for name, source in zip(names, sources):  # one site at a time: its rows go into its own Site
        fingerprints.append(fingerprint(source, args))
        X, _ = read_in_memory(source, args)
        sites.append(Site(name, X, row_norm=kwargs["row_norm"], center=kwargs["center"]))
        del X
    result = _protocol(args, sites, kwargs)
    release, protocol_report = result.release, result.report
    est, analysis, save = _analysis(args, release, features, alpha)
    analysis.update(protocol=args.protocol, sites=names)
    with ResultsDir(args.out, args.force) as res:
        save(res)
        rep = privacy_report("simulate", release, analysis=analysis, argv=args.argv,
                             extra={"files": res.files + ["privacy_report.json"]})
        rep["privacy"]["guarantee_is"] = ("joint view against the aggregator (the guarantee that holds; the "
                                          "per-site claim is in protocol.claimed)")
        rep["protocol"] = protocol_report.to_dict()
        rep["input"] = {"sites": [dict(s.describe(), name=nm, rows=site.n,
                                       fingerprint=None if fp is None else dict(fp, note=(
                                           "a deterministic hash of the site's file for provenance; not "
                                           "differentially private")))
                                  for nm, s, site, fp in zip(names, sources, sites, fingerprints)],
                        "shape": [release.n, release.n_features]}
        res.save_json("privacy_report.json", rep)
    if not args.quiet:
        print(f"{args.protocol}: {len(sites)} site(s) ({', '.join(f'{s.name}: {s.n} rows' for s in sites)}), "
              f"{len(features)} columns; analysis {args.analysis}")
        print(f"claimed per site (each message alone): {protocol_report.claimed}")
        print(f"joint view against the aggregator ({protocol_report.colluders} colluder(s)): "
              f"{protocol_report.joint_view}  <- the guarantee that holds")
        print(f"aggregate noise std {protocol_report.aggregate_std:.3g} (target {protocol_report.target_std:.3g})")
        print(privacy_summary(release))
        print(f"results in {args.out}/ ({', '.join(sorted(res.files))})")
    return 0


def _alpha(args):
    return "ebic" if args.analysis != "precision" else parse_alpha(args.alpha)


def _protocol(args, sites, kwargs):
    from .. import distributed as dist

    common = dict(epsilon=kwargs["epsilon"], delta=kwargs["delta"], neighbours=kwargs["neighbours"],
                  calibration=kwargs["calibration"], rng=kwargs["rng"])
    if args.colluders and args.protocol in ("local", "pooled"):
        raise CliError(f"--colluders has no meaning for --protocol {args.protocol}")
    if args.protocol == "local":
        return dist.run_local(sites[0], **common)
    if args.protocol == "pooled":
        return dist.run_pooled(sites, **common)
    run = {"cape": dist.run_cape, "conventional": dist.run_conventional,
           "secure-aggregation": dist.run_secure_aggregation}[args.protocol]
    return run(sites, colluders=args.colluders, **common)


def _analysis(args, release, names, alpha):
    """Fit the analysis to the aggregate release; returns (estimator, analysis dict, save(res))."""
    from .. import plots

    figures = not args.no_figures
    if args.analysis == "covariance":
        from ..estimators import PrivateCovariance

        est = PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=1.0, psd_floor=0.0).fit_release(release)

        def save(res):
            res.save_matrix("covariance", est.covariance_, names)
            if figures:
                res.save_figure("covariance", plots.plot_matrix(
                    est.covariance_, names, title=f"{args.protocol} covariance ({release.guarantee}, joint view)"))

        return est, {"estimator": "PrivateCovariance", "postprocessing": list(est.release_.postprocessing),
                     "estimate": "covariance.npy"}, save
    if args.analysis == "pca":
        from ..estimators import PrivatePCA
        from .pca import noise_floor, pca_analysis, save_pca, spectrum

        est = PrivatePCA(n_components=args.n_components, epsilon=1.0, delta=1e-6, row_norm=1.0).fit_release(release)
        floor, eig = noise_floor(release), spectrum(release, args.n_components)

        def save(res):
            save_pca(res, est, names, floor)
            if figures:
                res.save_figure("spectrum", plots.plot_spectrum(
                    eig, floor, title=f"{args.protocol} spectrum ({release.guarantee}) against the noise floor"))

        return est, pca_analysis(est, floor, eig), save
    from .precision import _edge_rows, edge_matrix, glasso, partial_correlations

    est, _ = glasso(release, alpha, None, 20)
    E = edge_matrix(est.precision_, None)

    def save(res):
        res.save_matrix("precision", est.precision_, names)
        res.save_table("edges.csv", ["feature_a", "feature_b", "partial_correlation", "in_truth"],
                       _edge_rows(est.precision_, E, names, None))
        if figures:
            res.save_figure("network", plots.plot_network(
                np.where(E, partial_correlations(est.precision_), 0.0), names,
                title=f"{args.protocol} glasso ({release.guarantee}, joint view): {int(E.sum() // 2)} edges"))

    return est, {"estimator": "PrivateGraphicalLasso", "alpha": float(getattr(est, "alpha_", est.alpha)),
                 "alpha_rule": str(alpha), "n_edges": int(E.sum() // 2),
                 "postprocessing": list(est.release_.postprocessing), "estimate": "precision.npy"}, save
