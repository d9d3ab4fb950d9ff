r"""Multi-site protocols, each returning a foundation :class:`~dpmoments.Release` and a report.

=========================  =====================================================  ===================
protocol                   what site ``s`` sends                                  aggregate noise std
=========================  =====================================================  ===================
``run_conventional``       :math:`A_s + g_s`, :math:`g_s \sim N(0,\tau_s^2)`       :math:`\sqrt{\sum\mu_s^2\tau_s^2}`
``run_cape``               :math:`A_s + e_s + f_s + g_s` (§2.3, §2.4)             pooled :math:`\max_s\mu_s\tau_s`
``run_secure_aggregation`` :math:`A_s + \frac1{\mu_s}\sum_t\pm m_{st} + g_s`      as CAPE
``run_local``              one site's own release                                  :math:`\tau_s`
``run_dpdispca``           :math:`P_s = U_r\Lambda_r^{1/2}` of :math:`A_s+G_s`    (post-processed)
``run_pooled``             (reference: a trusted curator pools the rows)           pooled
=========================  =====================================================  ===================

:math:`\tau_s` is calibrated to site ``s``'s own :math:`(\varepsilon_s, \delta_s)` and the
sensitivity of its statistic (``moment_sensitivity`` with ``n = N_s``; replace-one
:math:`\sqrt2R^2/N_s` for the second moment; ``neighbours="add-remove"`` gives the paper's
:math:`R^2/N_s`). Weights default to :math:`\mu_s = N_s/N`, so with noise off the aggregate
*is* the pooled statistic.

The release's ``guarantee`` is the **joint-view** guarantee (the aggregator sees all
messages, with ``colluders`` colluding sites; :mod:`.accounting`), the honest one; the
paper's per-site claim is in ``report.claimed``. ``release.noise_scale`` is the
aggregate's per-coordinate noise std; ``release.sensitivity`` the pooled one.

Dropout: a site failing *before the deal* is left out and the run planned for the
others (every guarantee recomputed for them). A site failing *after the deal* leaves its
``e_s`` out of the sum: the aggregate has more noise, never less (reported in
``report.extra_std``); should the output noise still fall short of what every surviving
site's claim needs, the aggregator tops it up. ``on_dropout="abort"`` or fewer than
``min_sites`` survivors raise :class:`~.messages.ProtocolAborted` with no release.
"""

import itertools
import math
import warnings

import numpy as np

from .._rng import as_generator, describe_randomness
from .._validation import check_int, check_option
from ..exceptions import NotPrivateWarning
from ..moments import NEIGHBOURS, Release, moment_sensitivity
from ..privacy import CALIBRATIONS, ApproxDP, PureDP, ZCDP, Uncertified, calibrate_gaussian
from .accounting import NoisePlan, ProtocolReport, SiteReport, guarantee_from_ratio, joint_view
from .engine import InProcessEngine
from .messages import STATISTIC_NDIM, ProtocolAborted
from .roles import Site, unit_noise
from .unequal import check_weights, solve_unequal

__all__ = ["DistributedResult", "run_conventional", "run_cape", "run_cape_unequal", "run_secure_aggregation",
           "run_local", "run_dpdispca", "run_pooled", "TRUST"]

TRUST = {
    "conventional": "No trusted party. Each message alone carries its site's full noise; the aggregator "
                    "(and any colluders) learn nothing beyond (epsilon_s, delta_s) per site.",
    "cape": "A trusted noise generator deals e_s over secure channels to the sites only (e_s never passes "
            "through the aggregator). Honest-but-curious aggregator and sites; at most `colluders` sites "
            "collude with the aggregator (accounted in joint_view). Row counts N_s are public.",
    "secure-aggregation": "No trusted party. Each pair of sites shares a seed (key agreement over an "
                          "authenticated channel, never via the aggregator) and adds +m_st / -m_st; each "
                          "site adds its own g_s. Honest-but-curious aggregator; a colluding site reveals "
                          "every mask it shares (accounted: worse than CAPE once colluders >= 1). Dropout "
                          "breaks cancellation: no mask recovery is implemented; completion keeps the "
                          "uncancelled masks as extra noise, or abort.",
    "local": "One site releases its own statistic; nothing is shared.",
    "dpdispca": "No trusted party; each site sends a rank-r factor of its own Gaussian release.",
    "pooled": "Reference only: a trusted curator sees every row of every site.",
}


class DistributedResult(tuple):
    """``(release, report)``: the foundation Release and the :class:`ProtocolReport`."""

    __slots__ = ()

    def __new__(cls, release, report):
        return super().__new__(cls, (release, report))

    @property
    def release(self):
        return self[0]

    @property
    def report(self):
        return self[1]


# -- set-up ------------------------------------------------------------------------------------
def _check_sites(sites, minimum=1):
    if isinstance(sites, Site):
        sites = [sites]
    sites = list(sites)
    if len(sites) < minimum or not all(isinstance(s, Site) for s in sites):
        raise TypeError(f"'sites' must be a sequence of at least {minimum} Site objects; got {sites!r}.")
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
    return sites


def _per_site(value, sites, name):
    if np.ndim(value) == 0:
        return [value] * len(sites)
    value = list(value)
    if len(value) != len(sites):
        raise ValueError(f"'{name}' must be a scalar or one value per site ({len(sites)}); got {len(value)}.")
    return value


def _options(statistic, neighbours, calibration, on_dropout):
    check_option(statistic, "statistic", tuple(STATISTIC_NDIM))
    check_option(neighbours, "neighbours", NEIGHBOURS)
    check_option(calibration, "calibration", CALIBRATIONS)
    check_option(on_dropout, "on_dropout", ("complete", "abort"))


def _calibrate(sites, statistic, epsilons, deltas, neighbours, calibration):
    """Per-site sensitivity, tau and claimed guarantee (the paper's per-site claim)."""
    sens, tau, claimed = [], [], []
    for s, eps, dl in zip(sites, epsilons, deltas):
        sv = moment_sensitivity(statistic, norm="l2", n_samples=s.n, n_features=s.n_features,
                                neighbours=neighbours, row_norm=s.row_norm, response_bound=s.response_bound)
        t, g = calibrate_gaussian(eps, dl, sv, calibration)
        sens.append(sv)
        tau.append(t)
        claimed.append(g)
    exact = [t == 0 for t in tau]
    if any(exact) and not all(exact):
        raise ValueError("either every site has epsilon=inf (noise off) or none has.")
    if all(exact):
        warnings.warn("epsilon=inf: the exact statistic is released, with no privacy.", NotPrivateWarning,
                      stacklevel=4)
    return np.array(sens), np.array(tau), claimed


def _weights(sites, weights):
    n = np.array([s.n for s in sites], dtype=np.float64)
    return n / n.sum() if weights is None else check_weights(weights, len(sites))


# -- noise plans --------------------------------------------------------------------------------
def _plan(sites, mu, tau, sens, deltas, e_factor=None, known=None, g=None, f=None):
    S = len(sites)
    e_factor = np.zeros((S, 1)) if e_factor is None else e_factor
    return NoisePlan(tuple(s.name for s in sites), tuple(s.n for s in sites), mu, tau, sens, deltas, e_factor,
                     np.zeros(e_factor.shape, bool) if known is None else known,
                     tau if g is None else g, np.zeros(S) if f is None else f)


def _plan_cape(sites, mu, tau, sens, deltas):
    if np.all(tau == 0):
        return _plan(sites, mu, tau, sens, deltas), None
    sol = solve_unequal(tau, mu)
    return _plan(sites, mu, tau, sens, deltas, sol.e_factor, g=sol.tau_g, f=sol.tau_f), sol


def _plan_secure(sites, mu, tau, sens, deltas):
    """Pairwise masks with variance ``c_st = lam mu_s tau_s mu_t tau_t``; site s scales its by 1/mu_s."""
    S = len(sites)
    pairs = list(itertools.combinations(range(S), 2))
    if np.all(tau == 0):
        return _plan(sites, mu, tau, sens, deltas, np.zeros((S, len(pairs)))), None
    mt = mu * tau
    kappa = float(np.max(mt) ** 2 / np.sum(mt**2))
    lam = float(np.max((1 - kappa) * mt / (mt.sum() - mt)))
    L = np.zeros((S, len(pairs)))
    known = np.zeros((S, len(pairs)), bool)
    for j, (a, b) in enumerate(pairs):
        c = math.sqrt(lam * mt[a] * mt[b])
        L[a, j], L[b, j] = c / mu[a], -c / mu[b]
        known[a, j] = known[b, j] = True
    plan = _plan(sites, mu, tau, sens, deltas, L, known, g=math.sqrt(kappa) * tau)
    return plan, {"kappa": kappa, "mask_scale": lam, "max_weighted_sum": float(np.max(np.abs(mu @ L)))}


# -- finishing ----------------------------------------------------------------------------------
def _worst(guarantees, keep_uncertified=False):
    unc = [g for g in guarantees if isinstance(g, Uncertified)]
    if keep_uncertified and unc:  # the paper's claim, as the paper states it
        return max(unc, key=lambda g: getattr(g.claimed, "epsilon", math.inf))
    gs = [g.holds if isinstance(g, Uncertified) and g.holds is not None else g for g in guarantees]
    if any(not g.is_private for g in gs):
        return PureDP(math.inf)
    if all(isinstance(g, ZCDP) for g in gs):
        return ZCDP(max(g.rho for g in gs))
    rhos = [getattr(g, "rho", None) for g in gs]
    return ApproxDP(max(g.epsilon for g in gs), max(g.delta for g in gs),
                    rho=None if None in rhos else max(rhos))


def _abort_if_needed(protocol, received, dropped, min_sites, on_dropout):
    after = [d for d in dropped if d[1] == "after-deal"]
    if after and on_dropout == "abort":
        raise ProtocolAborted(f"{protocol}: site(s) {[d[0] for d in after]} failed after the deal; aborted "
                              "(on_dropout='abort'). No release was made.", {"dropped": dropped})
    if len(received) < min_sites:
        raise ProtocolAborted(f"{protocol}: only {len(received)} site(s) took part, fewer than "
                              f"min_sites={min_sites}. No release was made.", {"dropped": dropped})


def _finish(ctx, sites, plan, outcome, dropped_before, claimed, engine, extra=None):
    protocol, statistic, calibration, colluders = ctx["protocol"], ctx["statistic"], ctx["calibration"], \
        ctx["colluders"]
    dropped = tuple(dropped_before) + tuple(outcome.dropped)
    _abort_if_needed(protocol, outcome.received, dropped, ctx["min_sites"], ctx["on_dropout"])
    idx = [plan.index(n) for n in outcome.received]
    mu = plan.weights[idx] / plan.weights[idx].sum()
    agg_var = plan.aggregate_variance(idx)
    needed = float(np.max(mu * plan.tau[idx]))  # every survivor's claim holds on the output
    has_e = bool(np.any(plan.e_factor != 0))
    target = needed if (has_e and outcome.dropped) else math.sqrt(agg_var)
    topup = math.sqrt(max(0.0, needed**2 - agg_var)) if ctx.get("top_up", True) else 0.0
    d = sites[0].n_features
    aggregate = outcome.aggregate + engine.aggregator.top_up(statistic, d, topup * (1 + 1e-12))
    final_std = math.sqrt(agg_var + topup**2)
    c = min(colluders, plan.n_sites - 1)
    reports = _site_reports(plan, idx, dropped, claimed, mu, final_std, c, calibration)
    ok = [r for r in reports if r.status == "ok"]
    report = ProtocolReport(
        protocol, statistic, c, tuple(reports), _worst([r.claimed for r in ok], keep_uncertified=True),
        _worst([r.joint_view for r in ok]), _worst([r.output for r in ok]), final_std, target,
        _excess(final_std, target), dropped, TRUST[protocol],
        tuple(ctx.get("notes", ())) + ((f"aggregator top-up noise std {topup:.4g}",) if topup > 0 else ()),
        extra, plan, tuple(engine.transcript))
    release = _release(sites, outcome.received, aggregate, final_std, report, ctx)
    return DistributedResult(release, report)


def _excess(final_std, target):
    gap = final_std**2 - target**2
    return math.sqrt(gap) if gap > 1e-9 * target**2 else 0.0


def _site_reports(plan, idx, dropped, claimed, mu, final_std, c, calibration):
    status = {n: f"failed-{p}" for n, p in dropped}
    reports = []
    for s, name in enumerate(plan.sites):
        common = dict(site=name, n=plan.n[s], weight=float(plan.weights[s]), tau=float(plan.tau[s]),
                      tau_e=float(plan.e_std[s]), tau_g=float(plan.g_std[s]), tau_f=float(plan.f_std[s]),
                      sensitivity=float(plan.sensitivity[s]), claimed=claimed[s])
        if s not in idx:
            reports.append(SiteReport(status=status.get(name, "failed-after-deal"), **common))
            continue
        jv = joint_view(plan, name, c, calibration=calibration, survivors=idx)
        w = float(mu[idx.index(s)])
        ratio = math.inf if final_std == 0 else w * plan.sensitivity[s] / final_std
        reports.append(SiteReport(status="ok", joint_view=jv.guarantee, joint_delta_m=jv.delta_m,
                                  joint_colluders=jv.colluders,
                                  output=guarantee_from_ratio(ratio, float(plan.deltas[s]), calibration), **common))
    for name, phase in dropped:
        if name not in plan.sites:
            reports.append(SiteReport(site=name, n=0, status=f"failed-{phase}", weight=0.0))
    return reports


def _release(sites, received, aggregate, final_std, report, ctx):
    by_name = {s.name: s for s in sites}
    first = sites[0]
    n = sum(by_name[r].n for r in received)
    exact = final_std == 0
    stat = ctx["statistic"]
    sens = moment_sensitivity(stat, norm="l2", n_samples=n, n_features=first.n_features, neighbours=ctx["neighbours"],
                              row_norm=first.row_norm, response_bound=first.response_bound)
    tag = f"distributed(protocol={report.protocol}, sites={len(received)}, colluders={report.colluders})"
    return Release(
        n=n, n_features=first.n_features, row_norm=first.row_norm, mechanism="none" if exact else "gaussian",
        noise_scale=float(final_std), neighbours=ctx["neighbours"], guarantee=report.joint_view,
        randomness="none" if exact else describe_randomness(ctx["rng"]), response_bound=first.response_bound,
        center=first.center, calibration=None if exact else ctx["calibration"], sensitivity=None if exact else sens,
        sensitivity_norm=None if exact else "l2", postprocessing=(tag,) + tuple(ctx.get("postprocessing", ())),
        **{f"{stat}_moment": aggregate},
    )


# -- protocols ----------------------------------------------------------------------------------
def _additive(protocol, sites, epsilon, delta, statistic, neighbours, calibration, weights, colluders, failures,
              min_sites, on_dropout, rng, minimum_sites):
    _options(statistic, neighbours, calibration, on_dropout)
    sites = _check_sites(sites)
    colluders = check_int(colluders, "colluders", minimum=0)
    if colluders > len(sites) - 1:
        raise ValueError(f"'colluders' must be in [0, {len(sites) - 1}] (other sites); got {colluders}.")
    min_sites = check_int(min_sites, "min_sites", minimum=1)
    engine = InProcessEngine(rng, failures)
    alive, dropped_before = engine.enrol(sites)
    if len(alive) < max(min_sites, minimum_sites):
        raise ProtocolAborted(f"{protocol}: {len(alive)} site(s) joined; at least {max(min_sites, minimum_sites)} "
                              "are needed. No release was made.", {"dropped": dropped_before})
    index = {s.name: i for i, s in enumerate(sites)}
    eps = [_per_site(epsilon, sites, "epsilon")[index[s.name]] for s in alive]
    dls = [_per_site(delta, sites, "delta")[index[s.name]] for s in alive]
    sens, tau, claimed = _calibrate(alive, statistic, eps, dls, neighbours, calibration)
    mu = _weights(sites, weights)[[index[s.name] for s in alive]] if weights is not None else _weights(alive, None)
    mu = mu / mu.sum()
    builder = {"cape": _plan_cape, "secure-aggregation": _plan_secure}.get(protocol)
    if builder is None:
        plan, extra = _plan(alive, mu, tau, sens, np.array(dls)), None
    else:
        plan, extra = builder(alive, mu, tau, sens, np.array(dls))
        if protocol == "cape" and extra is not None:
            extra = dict(extra.constraints, exact=extra.exact, kappa=extra.kappa, tau_pool=extra.tau_pool)
    masking = {"cape": "dealer", "secure-aggregation": "pairwise"}.get(protocol, "none")
    outcome = engine.run_additive(alive, plan, statistic, masking=masking)
    ctx = dict(protocol=protocol, statistic=statistic, calibration=calibration, colluders=colluders,
               min_sites=min_sites, on_dropout=on_dropout, neighbours=neighbours, rng=rng)
    return _finish(ctx, alive, plan, outcome, dropped_before, claimed, engine, extra)


_DOC_COMMON = """
    Parameters
    ----------
    sites : sequence of Site
    epsilon, delta : float, or one per site
    statistic : {"second", "cross", "third"}, default="second"
    neighbours : {"replace-one", "add-remove"}, default="replace-one"
    calibration : {"analytic", "classic", "zcdp"}, default="analytic"
    weights : array-like of shape (S,), optional
        The aggregator's weights, > 0, sum 1; default N_s / N.
    colluders : int, default=0
        Sites assumed to collude with the aggregator, for the joint-view guarantee.
    failures : dict of str -> {"before-deal", "after-deal"}, optional
        Injected site failures (tests, drills).
    min_sites : int, default=2
        Fewer surviving sites abort the run (ProtocolAborted, no release).
    on_dropout : {"complete", "abort"}, default="complete"
    rng : None, int or numpy.random.Generator

    Returns
    -------
    DistributedResult
        ``(release, report)``.
"""


def run_cape(sites, *, epsilon, delta, statistic="second", neighbours="replace-one", calibration="analytic",
             weights=None, colluders=0, failures=None, min_sites=2, on_dropout="complete", rng=None):
    """CAPE (Imtiaz & Sarwate §2.3/§2.4): zero-sum shares from a trusted dealer, pooled-level utility.

    Privacy
    -------
    Claimed per site: (epsilon_s, delta_s) for each message alone. Held against the
    aggregator: the joint-view guarantee (``release.guarantee``), about
    ``epsilon * sqrt(2S/(S+1))`` for equal sites without colluders, worse with them.
    """
    return _additive("cape", sites, epsilon, delta, statistic, neighbours, calibration, weights, colluders,
                     failures, min_sites, on_dropout, rng, 2)


def run_cape_unequal(sites, *, epsilons, deltas, weights=None, **kwargs):
    """CAPE with per-site (epsilon_s, delta_s), sizes N_s and weights mu_s (§2.4; see :mod:`.unequal`)."""
    return run_cape(sites, epsilon=epsilons, delta=deltas, weights=weights, **kwargs)


def run_conventional(sites, *, epsilon, delta, statistic="second", neighbours="replace-one",
                     calibration="analytic", weights=None, colluders=0, failures=None, min_sites=1,
                     on_dropout="complete", rng=None):
    """Conventional averaging (§2.2): every site adds its own full noise; about S times CAPE's variance."""
    return _additive("conventional", sites, epsilon, delta, statistic, neighbours, calibration, weights,
                     colluders, failures, min_sites, on_dropout, rng, 1)


def run_secure_aggregation(sites, *, epsilon, delta, statistic="second", neighbours="replace-one",
                           calibration="analytic", weights=None, colluders=0, failures=None, min_sites=2,
                           on_dropout="complete", rng=None):
    """CAPE's utility without a trusted dealer: pairwise-seeded masks that cancel in the weighted sum.

    With equal sites the aggregator's view has exactly CAPE's distribution
    (mask variance ``tau^2/S^3`` per pair). Trust assumptions: :data:`TRUST`.
    """
    return _additive("secure-aggregation", sites, epsilon, delta, statistic, neighbours, calibration, weights,
                     colluders, failures, min_sites, on_dropout, rng, 2)


for _f in (run_cape, run_conventional, run_secure_aggregation):
    _f.__doc__ += _DOC_COMMON


def run_local(site, *, epsilon, delta, statistic="second", neighbours="replace-one", calibration="analytic",
              rng=None):
    """One site alone: its own Gaussian release (the paper's "local" baseline)."""
    if not isinstance(site, Site):
        raise TypeError(f"'site' must be a Site; got {type(site).__name__}.")
    return _additive("local", [site], epsilon, delta, statistic, neighbours, calibration, None, 0, None, 1,
                     "complete", rng, 1)


def run_dpdispca(sites, *, epsilon, delta, rank, neighbours="replace-one", calibration="analytic", weights=None,
                 failures=None, min_sites=1, rng=None):
    """DPdisPCA baseline: sites send rank-``rank`` factors of their own AG releases (§2.5).

    The release's second moment is ``sum_s mu_s P_s P_s^T`` (rank <= S * rank, PSD);
    its ``noise_scale`` is the conventional aggregate's before truncation.
    """
    _options("second", neighbours, calibration, "complete")
    sites = _check_sites(sites)
    rank = check_int(rank, "rank", minimum=1)
    if rank > sites[0].n_features:
        raise ValueError(f"'rank' must be <= n_features={sites[0].n_features}; got {rank}.")
    engine = InProcessEngine(rng, failures)
    alive, dropped_before = engine.enrol(sites)
    if len(alive) < min_sites:
        raise ProtocolAborted(f"dpdispca: {len(alive)} site(s) joined; at least {min_sites} are needed.")
    index = {s.name: i for i, s in enumerate(sites)}
    eps = [_per_site(epsilon, sites, "epsilon")[index[s.name]] for s in alive]
    dls = [_per_site(delta, sites, "delta")[index[s.name]] for s in alive]
    sens, tau, claimed = _calibrate(alive, "second", eps, dls, neighbours, calibration)
    mu = _weights(sites, weights)[[index[s.name] for s in alive]]
    plan = _plan(alive, mu / mu.sum(), tau, sens, np.array(dls))
    outcome = engine.run_factors(alive, plan, rank)
    ctx = dict(protocol="dpdispca", statistic="second", calibration=calibration, colluders=0, min_sites=min_sites,
               on_dropout="complete", neighbours=neighbours, rng=rng, top_up=False,
               postprocessing=(f"dpdispca-factors(rank={rank})",))
    return _finish(ctx, alive, plan, outcome, dropped_before, claimed, engine)


def run_pooled(sites, *, epsilon, delta, statistic="second", neighbours="replace-one", calibration="analytic",
               rng=None):
    """Reference: a trusted curator pools every site's rows and releases once (CAPE's target)."""
    _options(statistic, neighbours, calibration, "complete")
    sites = _check_sites(sites)
    n = sum(s.n for s in sites)
    first = sites[0]
    sens = moment_sensitivity(statistic, norm="l2", n_samples=n, n_features=first.n_features, neighbours=neighbours,
                              row_norm=first.row_norm, response_bound=first.response_bound)
    tau, guarantee = calibrate_gaussian(epsilon, delta, sens, calibration)
    if tau == 0:
        warnings.warn("epsilon=inf: the exact statistic is released, with no privacy.", NotPrivateWarning, stacklevel=2)
    exact = sum((s.n / n) * s._exact(statistic) for s in sites)
    noise = tau * unit_noise(statistic, first.n_features, as_generator(rng)) if tau > 0 else 0.0
    reports = tuple(SiteReport(site=s.name, n=s.n, status="ok", weight=s.n / n, claimed=guarantee,
                               joint_view=guarantee, output=guarantee) for s in sites)
    report = ProtocolReport("pooled", statistic, 0, reports, guarantee, guarantee, guarantee, tau, tau,
                            trust=TRUST["pooled"])
    ctx = dict(statistic=statistic, neighbours=neighbours, calibration=calibration, rng=rng)
    return DistributedResult(_release(sites, [s.name for s in sites], exact + noise, tau, report, ctx), report)
