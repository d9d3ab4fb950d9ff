"""Multi-site releases in one call: plan, deal, run over a transport, return ``(release, report)``.

:func:`run` plans one release of ``statistic`` under ``protocol`` (a row of
:data:`~.protocols.PROTOCOLS`) from the sites' public facts, deals each site its
bundle (out of band: in process, handed to the site object), and drives the aggregator's
round over the transport (in process by default). The release's ``guarantee`` is the one
that holds against the aggregator; by default the noise is calibrated so that it meets
``(epsilon, delta)`` (``target="aggregator"``), with ``colluders`` sites helping the
aggregator. ``target="per-site"`` reproduces the papers' calibration of each message alone.
:func:`run_cape` and its siblings are :func:`run` with the protocol named.
"""

import dataclasses
import itertools
import warnings

import numpy as np

from .._rng import as_generator, describe_randomness, seed_sequence, spawn
from .._validation import check_int, check_option
from ..exceptions import NotPrivateWarning
from ..mechanisms.laws import GAUSSIAN, NONE
from ..moments import Release, moment_sensitivity, release_second_moment
from ..privacy import calibrate_gaussian
from .analyses import ANALYSES, IRLS_DEFAULTS, finish_analysis, next_params, plan_analysis
from .dealer import deal
from .messages import ProtocolAborted
from .statistics import as_statistic
from .plan import NEIGHBOURS, Plan, Round
from .protocols import PROTOCOLS, TRUST
from .report import ProtocolReport, SiteReport
from .run import run_plan
from .site import Site
from .transport import InProcessTransport
from .unequal import check_weights

__all__ = ["analyse", "irls", "release_tensor_moments", "run", "run_rounds", "check_sites", "run_cape",
           "run_cape_unequal", "run_conventional", "run_secure_aggregation", "run_local", "run_dpdispca", "run_pooled",
           "DistributedResult"]

PHASES = ("before-deal", "after-deal")


class DistributedResult(tuple):
    """``(release, report)``: the foundation Release and the :class:`~.report.ProtocolReport`."""

    __slots__ = ()

    def __new__(cls, release, report):
        return super().__new__(cls, (release, report))

    @property
    def release(self):
        return self[0]

    @property
    def report(self):
        return self[1]


def check_sites(sites, minimum=1):
    """A list of at least ``minimum`` :class:`Site` objects with unique names, one width, shared bounds and centre."""
    if isinstance(sites, Site):
        sites = [sites]
    sites = list(sites)
    if len(sites) < minimum or not all(isinstance(s, Site) for s in sites):
        raise TypeError(f"'sites' must be a sequence of at least {minimum} Site objects; got {sites!r}.")
    names = [s.name for s in sites]
    if len(set(names)) != len(names):
        raise ValueError(f"site names must be unique; got {names}.")
    first = sites[0]
    for s in sites[1:]:
        if s.n_features != first.n_features:
            raise ValueError(f"all sites must have the same n_features; {s.name!r} has {s.n_features}, "
                             f"{first.name!r} has {first.n_features}.")
        if s.row_norm != first.row_norm or s.response_bound != first.response_bound:
            raise ValueError("all sites must share the public bounds 'row_norm' and 'response_bound'.")
        if (s.center is None) != (first.center is None) or (s.center is not None
                                                             and not np.array_equal(s.center, first.center)):
            raise ValueError("all sites must share the same public 'center'.")
        if s.ranges != first.ranges:
            raise ValueError("all sites must share the same public 'ranges'.")
    _check_column_names(sites)
    return sites


def _check_column_names(sites):
    """Sites given as frames must name the same columns in the same order: the sums add position by position."""
    named = [s for s in sites if s.feature_names is not None]
    for s in named[1:]:
        if s.feature_names != named[0].feature_names:
            raise ValueError(f"site {s.name!r} names its columns {list(s.feature_names)}, site {named[0].name!r} "
                             f"{list(named[0].feature_names)}: every site's columns must be the same, in the same "
                             "order (select them by name, e.g. X[columns]).")


def _enrol(sites, failures):
    failures = dict(failures or {})
    for name, phase in failures.items():
        if phase not in PHASES:
            raise ValueError(f"failure phase for site {name!r} must be one of {PHASES}; got {phase!r}.")
    unknown = set(failures) - {s.name for s in sites}
    if unknown:
        raise ValueError(f"failures name unknown sites: {sorted(unknown)}.")
    alive = [s for s in sites if failures.get(s.name) != "before-deal"]
    dropped = tuple((s.name, "before-deal") for s in sites if failures.get(s.name) == "before-deal")
    return alive, dropped, {k: v for k, v in failures.items() if v == "after-deal"}


def run_rounds(sites, rounds=None, *, protocol="cape", epsilon, delta, neighbours="replace-one",
               calibration="analytic", composition="auto", target="aggregator", weights=None, colluders=0,
               failures=None, min_sites=None, on_dropout="complete", rng=None, rank=None, next_params=None,
               transport=None, analysis=None, options=None, bound_budget=None, center_budget=None, columns=None,
               response_column=None, scale=None):
    """Plan ``rounds`` (or ``analysis``, a key of :data:`~.analyses.ANALYSES`) over in-process ``sites``,
    deal, and run; return a :class:`~.run.RunResult`.

    The general form behind :func:`run` and :func:`analyse`. ``transport``: a
    callable ``sites -> Transport`` (default :class:`~.transport.InProcessTransport`);
    ``next_params``: a callable ``plan -> callable(step, releases)`` for adaptive steps.
    Sites built with ``row_norm="auto"`` (or ``response_bound="auto"``) get a bound step paid
    from ``bound_budget`` (:meth:`~.plan.Plan.build`, :mod:`~dpmoments.multisite.bounds`); sites built
    with ``center="private"`` get location steps and a mean round paid from ``center_budget``
    (:mod:`~dpmoments.multisite.location`). ``columns``: the feature columns' public names, for the plan
    (a deployed site selects its columns by them; a ranged release's line names them; ``response_column`` the
    response's, for select and regress). ``scale="private"``:
    private column scales from the location steps' histograms (sites with ``center="private"``; with ranges,
    the default: :func:`~dpmoments.multisite.column_ranges.plan_scale`).
    """
    check_option(protocol, "protocol", tuple(k for k in PROTOCOLS if k != "pooled"))
    check_option(on_dropout, "on_dropout", ("complete", "abort"))
    sites = check_sites(sites)
    alive, dropped_before, after = _enrol(sites, failures)
    need = max(PROTOCOLS[protocol].min_sites, 1 if min_sites is None else check_int(min_sites, "min_sites"))
    if len(alive) < need:
        raise ProtocolAborted(f"{protocol}: {len(alive)} site(s) joined; at least {need} are needed. No release "
                              "was made.", {"dropped": list(dropped_before)})
    first = alive[0]
    facts = dict(row_norm=first.row_norm, response_bound=first.response_bound, center=first.center,
                 ranges=first.ranges, neighbours=neighbours, calibration=calibration, target=target, colluders=colluders,
                 weights=_weights_of(weights, sites, alive), rank=rank, bound_budget=bound_budget,
                 center_budget=center_budget, columns=None if columns is None else tuple(columns), scale=scale,
                 response_column=response_column,
                 **_budgets(epsilon, delta, sites, alive))
    names, n = [s.name for s in alive], [s.n for s in alive]
    if analysis is not None:
        plan = plan_analysis(analysis, protocol, names, n, n_features=first.n_features, options=options,
                             composition=composition, **facts)
    else:
        plan = Plan.build(protocol, names, n, n_features=first.n_features, rounds=rounds, composition=composition,
                          **facts)
    dealer_rng, agg_rng, site_root, pair_root = spawn(as_generator(rng), 4)
    pairs = {(a, b): seed_sequence(pair_root)
             for a, b in itertools.combinations(plan.sites, 2)} if plan.masking == "pairwise" else None
    link = InProcessTransport(alive, failures=after) if transport is None else transport(alive)
    for (name, bundle), gen in zip(deal(plan, dealer_rng, pairs).items(), spawn(site_root, len(alive))):
        next(s for s in alive if s.name == name).accept(bundle, rng=gen)
        if bundle.shares:  # the out-of-band hop, for the spy: never through the aggregator
            link.transcript.append({"type": "Bundle", "from": "noise-generator", "to": name, "shapes": [
                tuple(e.shape) for e in bundle.shares.values()], "finite": True,
                "shape": tuple(next(iter(bundle.shares.values())).shape)})
    try:
        return run_plan(plan, link, rng=agg_rng, min_sites=min_sites, on_dropout=on_dropout,
                        next_params=None if next_params is None else next_params(plan),
                        dropped_before=dropped_before, randomness=describe_randomness(rng))
    finally:
        link.close()


def _budgets(epsilon, delta, sites, alive):
    """Each alive site's (epsilon, delta), from a scalar or one value per site."""
    index = {s.name: i for i, s in enumerate(sites)}
    out = {}
    for key, value in (("epsilon", epsilon), ("delta", delta)):
        if np.ndim(value) == 0:
            out[key] = value
            continue
        if len(value) != len(sites):
            raise ValueError(f"'{key}' must be a scalar or one value per site ({len(sites)}); got {len(value)}.")
        out[key] = [float(value[index[s.name]]) for s in alive]
    return out


def _weights_of(weights, sites, alive):
    if weights is None:
        return None
    index = {s.name: i for i, s in enumerate(sites)}
    w = check_weights(weights, len(sites))[[index[s.name] for s in alive]]
    return w / w.sum()


def run(sites, *, protocol="cape", epsilon, delta, statistic="second", neighbours="replace-one",
        calibration="analytic", target="aggregator", weights=None, colluders=0, failures=None, min_sites=None,
        on_dropout="complete", rng=None, rank=None, transport=None, bound_budget=None, center_budget=None):
    """One release of ``statistic`` across ``sites``: ``(release, report)``.

    Parameters
    ----------
    sites : sequence of Site
    protocol : str
        A key of :data:`~.protocols.PROTOCOLS` (``"pooled"`` is the reference :func:`run_pooled`).
    epsilon, delta : float, or one per site
        Each site's budget.
    statistic : {"second", "cross", "third"}
    neighbours : {"replace-one", "zero-out"}
    calibration : {"analytic", "classic", "zcdp"}
    target : {"aggregator", "per-site"}, default="aggregator"
        Calibrate so that the guarantee against the aggregator (with ``colluders``) meets the
        budget, or (the papers') so that each message alone does.
    weights : array-like of shape (S,), optional
        The aggregator's weights, > 0, sum 1; default ``N_s / N``.
    colluders : int
        Sites assumed to collude with the aggregator.
    failures : dict of str -> {"before-deal", "after-deal"}, optional
        Injected site failures (tests, drills).
    min_sites : int, optional
    on_dropout : {"complete", "abort"}
    rng : None, int or Generator
    rank : int, optional
        ``protocol="dpdispca"``: the factors' rank.
    transport : callable(sites) -> Transport, optional
    bound_budget : float in (0, 1), BoundBudget or AutoBounds, optional
        Sites with ``row_norm="auto"``: the share of each site's budget that chooses the
        bound from noisy histograms (default 0.1, the highest quantile their noise can place and at
        least the 0.95-quantile, on the grid 1e-6 to 1e8 with steps of a factor sqrt 2); the release
        then carries the composed guarantee and its ``parts``, and the report is an
        :class:`~.report.AnalysisReport` with the bound step. With ``statistic="second"`` the sites
        also release what clipping removed from each variance (``AutoBounds.bias``, default 0.1 of
        each site's budget), which the intervals read.
    center_budget : float in (0, 1), CenterBudget or AutoLocation, optional
        Sites with ``center="private"`` (``statistic="second"``): the mean round's share of
        each site's budget (default 0.2; a ``CenterBudget`` also gives the location steps',
        default 0.1 otherwise; an ``AutoLocation`` gives both and may fix the number of steps).
        The plan starts with location steps, as many as the rows allow up to four (each site's
        noisy per-coordinate counts on a public signed grid; the aggregator moves the location
        ``m`` by their medians), and the
        second moment ``S`` and mean ``a`` of the rows clipped about ``m`` give the covariance
        ``S - a a^T`` about the private mean ``m + a``; the report lists every share.

    Returns
    -------
    DistributedResult
    """
    if protocol == "pooled":
        return run_pooled(sites, epsilon=epsilon, delta=delta, statistic=statistic, neighbours=neighbours,
                          calibration=calibration, rng=rng)
    check_option(statistic, "statistic", ("second", "cross", "third"))
    result = run_rounds(sites, (Round(statistic),), protocol=protocol, epsilon=epsilon, delta=delta,
                        neighbours=neighbours, calibration=calibration, target=target, weights=weights,
                        colluders=colluders, failures=failures, min_sites=min_sites, on_dropout=on_dropout, rng=rng,
                        rank=rank, transport=transport, bound_budget=bound_budget, center_budget=center_budget)
    return DistributedResult(*finish_analysis(result.plan, result))


def _named(protocol, doc):
    def runner(sites, *, epsilon, delta, **kwargs):
        return run(sites, protocol=protocol, epsilon=epsilon, delta=delta, **kwargs)

    runner.__name__ = runner.__qualname__ = f"run_{protocol.replace('-', '_')}"
    runner.__doc__ = doc + "\n\n    Parameters and returns as :func:`run`.\n\n    Privacy\n    -------\n    " + \
        TRUST[protocol]
    return runner


run_cape = _named("cape", "CAPE (Imtiaz & Sarwate): zero-sum shares from a trusted dealer, pooled-level noise.")
run_conventional = _named("conventional", "Conventional averaging: every site adds its own full noise.")
run_secure_aggregation = _named("secure-aggregation", "CAPE's utility without a trusted dealer: pairwise masks.")


def run_cape_unequal(sites, *, epsilons, deltas, weights=None, **kwargs):
    """CAPE with per-site ``(epsilon_s, delta_s)``, sizes ``N_s`` and weights ``mu_s``."""
    return run_cape(sites, epsilon=epsilons, delta=deltas, weights=weights, **kwargs)


def run_local(site, *, epsilon, delta, **kwargs):
    """One site alone: its own Gaussian release (the papers' "local" baseline)."""
    if not isinstance(site, Site):
        raise TypeError(f"'site' must be a Site; got {type(site).__name__}.")
    return run([site], protocol="local", epsilon=epsilon, delta=delta, **kwargs)


def run_dpdispca(sites, *, epsilon, delta, rank, **kwargs):
    """DPdisPCA baseline: each site sends a rank-``rank`` factor of its own Gaussian release.

    The release's second moment is ``sum_s mu_s P_s P_s^T`` (rank <= S * rank, PSD); its
    ``noise_scale`` is the conventional aggregate's before truncation.
    """
    sites = check_sites(sites)
    rank = check_int(rank, "rank", minimum=1)
    if rank > sites[0].n_features:
        raise ValueError(f"'rank' must be <= n_features={sites[0].n_features}; got {rank}.")
    return run(sites, protocol="dpdispca", epsilon=epsilon, delta=delta, rank=rank, **kwargs)


def run_pooled(sites, *, epsilon, delta, statistic="second", neighbours="replace-one", calibration="analytic",
               rng=None, center_budget=None, bound_budget=0.1, scale=None):
    """Reference: a trusted curator pools every site's rows and releases once (CAPE's target).

    With a private centre or bound (``center="private"``, ``row_norm="auto"``
    on the sites, the library's defaults) the curator makes the release one
    machine makes of all the rows (:func:`~dpmoments.moments.release_second_moment`,
    its centre and bound chosen by the single-machine procedure, paid from
    ``center_budget`` and ``bound_budget``): the like-for-like reference of a
    multi-site run with the same defaults (``scale="private"``: with private column scales too).
    """
    sites = check_sites(sites)
    check_option(statistic, "statistic", ("second", "cross", "third"))
    check_option(neighbours, "neighbours", NEIGHBOURS)
    first = sites[0]
    if first.response_bound == "auto":
        raise ValueError("the pooled reference takes a public response_bound, not 'auto'.")
    if first.row_norm == "auto" or isinstance(first.center, str) or first.ranges is not None or scale is not None:
        if statistic != "second":
            raise ValueError("the pooled reference with a private centre or bound, or ranges, is of the second "
                             "moment: give the sites a public row_norm (and centre) for a cross or third moment.")
        return _pooled_private(sites, epsilon=epsilon, delta=delta, neighbours=neighbours, calibration=calibration,
                               rng=rng, center_budget=center_budget, bound_budget=bound_budget, scale=scale)
    n = sum(s.n for s in sites)
    first = sites[0]
    sens = moment_sensitivity(statistic, norm="l2", n_samples=n, n_features=first.n_features, neighbours=neighbours,
                              row_norm=first.row_norm, response_bound=first.response_bound)
    tau, guarantee = calibrate_gaussian(epsilon, delta, sens, calibration)
    if tau == 0:
        warnings.warn("epsilon=inf: the exact statistic is released, with no privacy.", NotPrivateWarning, stacklevel=2)
    exact = sum((s.n / n) * s._exact(statistic) for s in sites)
    noise = tau * as_statistic(statistic).unit_noise(first.n_features, as_generator(rng)) if tau > 0 else 0.0
    reports = tuple(SiteReport(site=s.name, n=s.n, status="ok", weight=s.n / n, claimed=guarantee,
                               joint_view=guarantee, output=guarantee) for s in sites)
    report = ProtocolReport("pooled", statistic, 0, reports, guarantee, guarantee, guarantee, tau, tau,
                            trust=TRUST["pooled"], target="per-site", neighbours=neighbours)
    return DistributedResult(_pooled_release(sites, exact + noise, tau, guarantee, statistic, neighbours,
                                             calibration, sens, rng), report)


def _pooled_private(sites, *, epsilon, delta, neighbours, calibration, rng, center_budget, bound_budget, scale=None):
    """The pooled reference with the single-machine private choices: one release of every site's rows."""
    first = sites[0]
    rows = np.vstack([s._pooled_rows() for s in sites])
    ranges = None if first.ranges is None else {j: r for j, r in enumerate(first.ranges) if r is not None}
    release = release_second_moment(rows, epsilon=epsilon, delta=delta, row_norm=first.row_norm,
                                    center=first.center, center_budget=center_budget, bound_budget=bound_budget,
                                    neighbours=neighbours, calibration=calibration, rng=rng, ranges=ranges,
                                    **({} if scale is None else {"scale": scale}))
    release = dataclasses.replace(release, postprocessing=release.postprocessing + (f"pooled(sites={len(sites)})",))
    n, guarantee, tau = release.n, release.guarantee, float(release.noise_scale)
    reports = tuple(SiteReport(site=s.name, n=s.n, status="ok", weight=s.n / n, claimed=guarantee,
                               joint_view=guarantee, output=guarantee) for s in sites)
    report = ProtocolReport("pooled", "second", 0, reports, guarantee, guarantee, guarantee, tau, tau,
                            trust=TRUST["pooled"], target="per-site", neighbours=neighbours)
    return DistributedResult(release, report)


def _pooled_release(sites, value, tau, guarantee, statistic, neighbours, calibration, sens, rng):
    first, exact = sites[0], tau == 0
    return Release(n=sum(s.n for s in sites), n_features=first.n_features, row_norm=first.row_norm,
                   mechanism=(NONE if exact else GAUSSIAN).name, noise_scale=float(tau), neighbours=neighbours,
                   guarantee=guarantee, randomness="none" if exact else describe_randomness(rng),
                   response_bound=first.response_bound, center=first.center,
                   calibration=None if exact else calibration, sensitivity=None if exact else sens,
                   sensitivity_norm=None if exact else "l2", postprocessing=(f"pooled(sites={len(sites)})",),
                   **{f"{statistic}_moment": value})


# -- in process -------------------------------------------------------------------------------------------------
def analyse(sites, analysis, *, protocol="cape", epsilon, delta, options=None, composition=None, **kwargs):
    """Run ``analysis`` (a key of :data:`ANALYSES`) across in-process ``sites``: ``(output, report)``.

    ``kwargs`` as :func:`~.api.run` (``neighbours``, ``calibration``, ``target``, ``colluders``,
    ``weights``, ``failures``, ``min_sites``, ``on_dropout``, ``rng``, ``transport``, ``bound_budget``,
    ``center_budget``). Sites built with ``center="private"`` centre privately (covariance,
    pca, precision, ridge; the other analyses refuse it in one line).
    """
    if analysis not in ANALYSES:
        raise ValueError(f"'analysis' must be one of {sorted(ANALYSES)}; got {analysis!r}.")
    result = run_rounds(sites, protocol=protocol, epsilon=epsilon, delta=delta, analysis=analysis, options=options,
                        composition=composition or ANALYSES[analysis].composition, next_params=next_params,
                        **kwargs)
    return finish_analysis(result.plan, result)


def release_tensor_moments(sites, *, model, epsilon, delta, sigma2=None, vocabulary_size=None, shares=None,
                           **kwargs):
    """The moments of a tensor decomposition across sites: ``(TensorMoments, AnalysisReport)``.

    ``model="mog"``: sites hold rows and the public ``sigma2``; ``"stm"``: sites hold word ids
    ``(n, 3)`` of a public ``vocabulary_size``. ``shares``: of each site's budget per round.
    """
    options = {"sigma2": sigma2} if model == "mog" else {"vocabulary_size": vocabulary_size}
    if shares is not None:
        options["shares"] = tuple(shares)
    return analyse(sites, f"tensor-{model}", epsilon=epsilon, delta=delta, options=options, **kwargs)


def irls(sites, *, epsilon, delta, n_iter=IRLS_DEFAULTS["n_iter"], w_max=None, p=1.0, split=0.5, fit_intercept=True,
         sampling_budget=IRLS_DEFAULTS["sampling_budget"], **kwargs):
    """Private IRLS (least absolute deviations by default) across sites: ``(IRLSFit, AnalysisReport)``.

    The defaults are ``PrivateIRLS``'s: ``n_iter`` 10; ``w_max`` 5 / the response bound (public, or chosen
    across sites with ``response_bound="auto"`` on the sites); an intercept (each site appends the public
    constant ``0.5 R / sqrt(1.25)`` to its rows clipped to ``R / sqrt(1.25)``, ``R`` the plan's row bound).
    ``sampling_budget``: a share of every site's budget (as ``PrivateIRLS``'s) for the residual scale and the LAD
    sandwich's two matrices and LAD's score at the final iterate (:mod:`~dpmoments.multisite.irls_sampling`), so that
    ``PrivateIRLS.fit_release`` gives intervals for the population coefficients (noise and sampling); default 0.1,
    as ``PrivateIRLS``'s, for LAD (``p = 1``); ``None`` or 0: no such rounds, the intervals count the noise only.
    """
    options = {"n_iter": n_iter, "w_max": w_max, "p": p, "split": split}
    if sampling_budget and p == 1.0:  # only then in the plan's options (and digest); LAD's sandwich only, as fit
        options["sampling_budget"] = sampling_budget
    if w_max is None:
        options["w_max_per_bound"] = IRLS_DEFAULTS["w_max_per_bound"]
    if fit_intercept:
        options["intercept"] = IRLS_DEFAULTS["intercept"]
    return analyse(sites, "regress", epsilon=epsilon, delta=delta, options=options, **kwargs)
