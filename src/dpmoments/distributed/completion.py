"""Finishing a multi-site round: dropout rules, top-up noise, the report and the Release.

Transport-agnostic: the in-process engine and the Flower ServerApp hand :func:`finish` the
same :class:`~.engine.Outcome` (the combined messages, who answered, who dropped), so a
deployment reports exactly what the in-process protocol reports.
"""

import math

import numpy as np

from .._rng import describe_randomness
from ..moments import Release, moment_sensitivity
from ..privacy import ApproxDP, PureDP, ZCDP, Uncertified
from .accounting import ProtocolReport, SiteReport, guarantee_from_ratio, joint_view
from .messages import ProtocolAborted

__all__ = ["TRUST", "DistributedResult", "worst_guarantee", "abort_if_needed", "finish", "distributed_release"]

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


def worst_guarantee(guarantees, keep_uncertified=False):
    """The weakest of the sites' guarantees (what holds for all); ``keep_uncertified``: the paper's claim as stated."""
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


def abort_if_needed(protocol, received, dropped, min_sites, on_dropout):
    """Raise :class:`ProtocolAborted` (no release) on a dropout after the deal with ``on_dropout="abort"``,
    or when fewer than ``min_sites`` sites answered. ``dropped`` holds ``(site, phase)`` pairs."""
    after = [d for d in dropped if d[1] == "after-deal"]
    if after and on_dropout == "abort":
        raise ProtocolAborted(f"{protocol}: site(s) {[d[0] for d in after]} failed after the deal; aborted "
                              "(on_dropout='abort'). No release was made.", {"dropped": dropped})
    if len(received) < min_sites:
        raise ProtocolAborted(f"{protocol}: only {len(received)} site(s) took part, fewer than "
                              f"min_sites={min_sites}. No release was made.", {"dropped": dropped})


def finish(ctx, sites, plan, outcome, dropped_before, claimed, engine, extra=None):
    """Close a round: apply the dropout rules, top up the noise every survivor's claim needs, and return
    :class:`DistributedResult` (the Release, guaranteed by the joint view, and the :class:`ProtocolReport`).

    ``ctx``: ``protocol``, ``statistic``, ``calibration``, ``colluders``, ``min_sites``, ``on_dropout``,
    ``neighbours``, ``rng`` (and optionally ``notes``, ``top_up``, ``postprocessing``); ``engine`` has the
    ``aggregator`` (for the top-up) and the message ``transcript``.
    """
    protocol, statistic, calibration, colluders = ctx["protocol"], ctx["statistic"], ctx["calibration"], \
        ctx["colluders"]
    dropped = tuple(dropped_before) + tuple(outcome.dropped)
    abort_if_needed(protocol, outcome.received, dropped, ctx["min_sites"], ctx["on_dropout"])
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
        protocol, statistic, c, tuple(reports), worst_guarantee([r.claimed for r in ok], keep_uncertified=True),
        worst_guarantee([r.joint_view for r in ok]), worst_guarantee([r.output for r in ok]), final_std, target,
        _excess(final_std, target), dropped, TRUST[protocol],
        tuple(ctx.get("notes", ())) + ((f"aggregator top-up noise std {topup:.4g}",) if topup > 0 else ()),
        extra, plan, tuple(engine.transcript))
    release = distributed_release(sites, outcome.received, aggregate, final_std, report, ctx)
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


def distributed_release(sites, received, aggregate, final_std, report, ctx):
    """The foundation :class:`Release` of an aggregate over the ``received`` sites (pooled sensitivity)."""
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
