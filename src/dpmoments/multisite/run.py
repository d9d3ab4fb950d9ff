"""The aggregator's run, written once for every transport: steps out, replies in, one Release per round.

:func:`run_plan` drives a :class:`~.plan.Plan` over any :class:`~.transport.Transport`:
for each step it opens a round, sends each live site its query, admits each reply as it arrives
(:meth:`~.aggregator.Aggregator.receive`: checked, added to the round's sums and dropped), combines them and
finishes each round into a :class:`~dpmoments.Release` and a :class:`~.report.ProtocolReport`. A step's public
parameters may depend on earlier releases (``next_params``: IRLS's iterate).

Dropout: a site that is not up when the run starts, fails, refuses (a fixed code) or
does not answer in time has received its shares, so it is dropped *after the deal*: its
``e_s`` is missing from the sum and the aggregate has more noise, never less (reported in
``extra_std``); should it still fall short of what every survivor's per-site claim needs,
the aggregator tops it up. ``on_dropout="abort"`` or fewer than ``min_sites`` survivors raise
:class:`~.messages.ProtocolAborted` with no release. A dropped site is not asked again.
"""

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .._rng import describe_randomness
from ..exceptions import BoundWarning
from ..mechanisms.laws import GAUSSIAN, NONE
from ..moments import Release
from ..privacy import parallel
from .aggregator import Aggregator
from .bounds import choose_bound, cumulative_estimate
from .column_ranges import column_scales, scales_about
from .location import choose_location
from .site_spreads import site_spreads
from .messages import ProtocolAborted, Reply
from .noise import guarantee_from_ratio, joint_view
from .protocols import PROTOCOLS, TRUST
from .report import ProtocolReport, SiteReport
from .statistics import CROSS, EXCESS

__all__ = ["run_plan", "RunResult", "BoundChoice", "LocationChoice", "abort_if_needed", "worst_guarantee",
           "rows_beyond"]


@dataclass(frozen=True, eq=False)
class RunResult:
    """One Release and one report per moment round of ``plan``; unpacks as ``releases, reports``.

    ``bound``: an ``auto`` plan's :class:`BoundChoice` (``None`` otherwise); ``location``: a
    private centre's :class:`LocationChoice` (``None`` otherwise).
    """

    releases: tuple
    reports: tuple
    plan: object
    bound: object = None
    location: object = None

    def __iter__(self):
        return iter((self.releases, self.reports))


@dataclass(frozen=True, eq=False)
class BoundChoice:
    """What an ``auto`` plan's bound step chose, and what it cost.

    Attributes
    ----------
    values : dict
        Each chosen bound (a grid edge), by name.
    reports : dict
        Name -> the :class:`~.report.ProtocolReport` of its histogram round (per-site guarantees;
        ``aggregate_std`` is the per-bin noise std of the summed histogram).
    details : dict
        Name -> what the report shows: the target, the rows it was taken over, the rank noise, whether
        it fell at an end of the range.
    """

    values: dict
    reports: dict
    details: dict


@dataclass(frozen=True, eq=False)
class LocationChoice:
    """What a private centre's location steps chose, and what they cost.

    Attributes
    ----------
    center : ndarray
        The location after the last step, a private output: the rows are centred at it.
    reports : tuple
        Per location step, its round's :class:`~.report.ProtocolReport` (per-site guarantees;
        ``aggregate_std`` is the per-count noise std of the summed histograms).
    details : tuple
        Per location step, what the report shows: the target, the rows it was taken over, the
        worst rank noise, how many coordinates fell at an end of the range.
    column_scale : ndarray or None
        A plan with ``scale="private"``: the private column scales read off the last step's histograms
        (post-processing, :func:`~dpmoments.multisite.column_ranges.column_scales`); every later step divides
        the rows by them.
    """

    center: np.ndarray
    reports: tuple
    details: tuple
    column_scale: object = None


def abort_if_needed(protocol, received, dropped, min_sites, on_dropout, notes=()):
    """Raise :class:`ProtocolAborted` on a dropout with ``on_dropout="abort"`` or too few survivors.

    ``notes`` say why sites dropped (fixed codes and phases, never a site's text): they end the message.
    """
    after = [d for d in dropped if d[1] == "after-deal"]
    if after and on_dropout == "abort":
        raise ProtocolAborted(f"{protocol}: site(s) {[d[0] for d in after]} failed after the deal; aborted "
                              "(on_dropout='abort'). No release was made.", {"dropped": list(dropped)})
    if len(received) < min_sites:
        why = f" ({'; '.join(notes)})" if notes else ""
        raise ProtocolAborted(f"{protocol}: only {len(received)} site(s) took part, fewer than min_sites={min_sites}"
                              f"{why}. No release was made.", {"dropped": list(dropped)})


def run_plan(plan, transport, *, rng=None, min_sites=None, on_dropout="complete", wait_s=60.0, timeout_s=120.0,
             next_params=None, dropped_before=(), randomness=None):
    """Run every step of ``plan`` over ``transport``; return a :class:`RunResult`.

    Parameters
    ----------
    plan : Plan
    transport : Transport
    rng : None, int or Generator
        The aggregator's own noise (``f_s``, top-up).
    min_sites : int, optional
        Fewer survivors abort (default: the protocol's minimum).
    on_dropout : {"complete", "abort"}
    wait_s, timeout_s : float
        How long to wait for the sites to be up, and for each step's replies.
    next_params : callable(step, releases) -> ndarray or None, optional
        The public parameters of a step from the releases so far (IRLS).
    dropped_before : sequence of (site, phase)
        Sites planned out before the deal (in process), for the report.
    randomness : str, optional
        How the run's noise was drawn, for the releases (default: from ``rng``).
    """
    proto = PROTOCOLS[plan.protocol]
    min_sites = proto.min_sites if min_sites is None else int(min_sites)
    aggregator = Aggregator(plan, rng)
    dropped, notes = list(dropped_before), []
    live = _connect(plan, transport, wait_s, dropped, notes)
    abort_if_needed(plan.protocol, live, dropped, min_sites, on_dropout, notes)
    releases, reports, bound, location = {}, {}, None, _stepless_location(plan)
    ctx = dict(min_sites=min_sites, on_dropout=on_dropout, notes=notes, transport=transport,
               randomness=randomness or describe_randomness(rng))
    for step in plan.steps:
        at_bound, at_location = step == plan.bound_step, step in plan.location_steps
        params = None if next_params is None or at_bound or at_location else \
            next_params(step, [releases[r] for r in sorted(releases)])
        inbox = _exchange_step(aggregator, transport, step, live, params, timeout_s, dropped, notes)
        abort_if_needed(plan.protocol, live, dropped, min_sites, on_dropout, notes)
        if at_location:  # move the centre (post-processing), then every later step centres there
            location = choose_center(plan, step, aggregator, inbox, tuple(dropped), ctx, location)
            plan = aggregator.resolve(center=location.center, column_scale=location.column_scale)
            continue
        if at_bound:  # choose the bounds (post-processing), then every later step uses them
            bound = choose_bounds(plan, aggregator, inbox, tuple(dropped), ctx)
            plan = aggregator.resolve(bounds=bound.values)
            continue
        for r in plan.rounds_of(step):
            releases[r], reports[r] = finish_round(plan, r, aggregator, inbox, tuple(dropped), ctx)
    if bound is not None:
        _note_bound_dropouts(bound, plan, live)
    return RunResult(tuple(releases[r] for r in sorted(releases)), tuple(reports[r] for r in sorted(reports)), plan,
                     bound, location)


def _stepless_location(plan):
    """A private centre with no location step (the ranges alone, ``Plan.build``): the mean round is about the
    origin of the sites' rows (the midpoints of the ranges), a public start; else None (the steps choose it)."""
    if plan.location is None or plan.location.steps != 0:
        return None
    return LocationChoice(np.zeros(plan.n_features), (), ())


def _connect(plan, transport, wait_s, dropped, notes):
    """The sites that joined, in plan order; each that did not is dropped (after the deal), with why."""
    present = set(transport.connect(plan, wait_s))
    dropped += [(s, "after-deal") for s in plan.sites if s not in present]
    notes += [f"site {s!r} did not join: {transport.reasons.get(s, 'not reachable')}" for s in plan.sites
              if s not in present]
    return [s for s in plan.sites if s in present]


def _exchange_step(aggregator, transport, step, live, params, timeout_s, dropped, notes):
    """Ask the ``live`` sites for ``step``, add each reply to the running sums as it arrives, and close the step:
    its inbox. A site that failed leaves ``live`` and joins ``dropped``, with a note, in plan order (the same report
    on every transport)."""
    failed = {}
    for site, answer in transport.ask_each(aggregator.open_step(step, live, params), timeout_s):
        if isinstance(answer, Reply):
            aggregator.receive(answer)  # checked, added to the sums and dropped: O(d^2) whatever S
        else:
            failed[site] = answer
    for site in [s for s in live if s in failed]:
        live.remove(site)
        dropped.append((site, "after-deal"))
        notes.append(f"site {site!r} dropped at step {step}: {failed[site]}")
    return aggregator.close_step()


def choose_center(plan, step, aggregator, inbox, dropped, ctx, before=None):
    """Sum a location step's noisy per-coordinate counts over the sites that answered; move the centre by each median.

    ``before``: the :class:`LocationChoice` of the earlier location steps (the rows were counted
    centred at its centre). Post-processing of the noisy counts and the public row counts
    (:mod:`~dpmoments.multisite.location`).
    """
    received = [s for s in plan.sites if s in inbox]
    n_total = sum(plan.n[plan.index(s)] for s in received)
    r = plan.rounds_of(step)[0]
    move, at_end = choose_location(aggregator.sum_histograms(r, inbox), n_total, plan.location)
    center = move if before is None else before.center + move
    per_bin = math.sqrt(float(np.sum(plan.noise[r].g_std[[plan.index(s) for s in received]] ** 2)))
    rank_sd = per_bin * math.sqrt(plan.location.n_bins) / 2.0  # the worst cumulative count's (bounds.cumulative_estimate)
    details = {"target": "the location moves by the median per column of the summed noisy histograms, rounded up "
                         "to a grid edge",
               "rows": n_total, "sites": len(received), "rank_noise_sd_at_most": rank_sd,
               "coordinates_at_range_end": int(np.sum(at_end))}
    notes = (f"location step {step + 1} of {plan.location.steps}: per-coordinate medians of {n_total} rows at "
             f"{len(received)} site(s) (rank noise sd at most {rank_sd:.3g} rows); the rows are then centred at the "
             "location, and the mean round moves the centre to the private mean",)
    scale = None
    if plan.scale is not None and step == plan.location_steps[-1]:  # the scales: free, from these counts
        spreads = site_spreads(aggregator.sum_histograms(r, inbox), plan.location.edges(), move, per_bin,
                               n_total)
        scale = column_scales(spreads, plan.ranges, plan.location.low, plan.columns,
                              about=scales_about(center, move, plan.location.edges(), plan.ranges))
        details["column_scales"] = "per column, the median distance from the median in these summed noisy " \
                                   "histograms (the median's bin at 0), at least half their upper quartile, the " \
                                   "gap to the nearest bin over 4 noise sds and the median bin's width " \
                                   "(post-processing, no share of its own), within the ranges' limits"
        notes += ("private column scales: the median distance from each column's median in these histograms, at "
                  "least the gap to its next values; every later step divides the rows by them",)
    if np.any(at_end):
        notes += (f"{int(np.sum(at_end))} coordinate(s) of the location fell at an end of the search range "
                  f"[{-plan.location.high:g}, {plan.location.high:g}]: widen the range or rescale the data",)
        warnings.warn(notes[-1], BoundWarning, stacklevel=3)
    report = _histogram_report(plan, r, received, dropped, per_bin, ctx, notes)
    return LocationChoice(center, (() if before is None else before.reports) + (report,),
                          (() if before is None else before.details) + (details,), scale)


def choose_bounds(plan, aggregator, inbox, dropped, ctx):
    """Sum each histogram round's noisy counts over the sites that answered; choose each bound.

    Post-processing of the noisy counts and the public row counts (:mod:`~dpmoments.multisite.bounds`).
    """
    received = [s for s in plan.sites if s in inbox]
    n_total = sum(plan.n[plan.index(s)] for s in received)
    values, reports, details = {}, {}, {}
    for r in plan.rounds_of(plan.bound_step):
        name = plan.rounds[r].bound
        summed = aggregator.sum_histograms(r, inbox)
        noise, idx = plan.noise[r], [plan.index(s) for s in received]
        per_bin = math.sqrt(float(np.sum(noise.g_std[idx] ** 2)))
        value, k, at_end = choose_bound(summed, n_total, plan.auto, per_bin)
        q = plan.auto.target_quantile(n_total, per_bin)
        _, unit_var = cumulative_estimate(summed, n_total)
        rank_sd = per_bin * math.sqrt(float(unit_var[k]))
        values[name] = value
        details[name] = {name: value, "target": f"{q:.4g}-quantile of the summed noisy histograms, rounded up to a "
                                              "grid edge" + (" (the highest their noise can place)"
                                                             if plan.auto.quantile == "auto" else ""),
                         "rows": n_total, "sites": len(received), "rank_noise_sd": rank_sd, "at_range_end": at_end}
        if name == "row_norm":
            details[name].update(rows_beyond(summed, n_total, plan.auto, k, per_bin))
        notes = (f"bound step: {name} = {value:.4g} (the {q:.4g}-quantile of {n_total} rows at "
                 f"{len(received)} site(s), rank noise sd {rank_sd:.3g} rows)",)
        if at_end:
            notes += (f"the chosen {name} fell at an end of the search range [{plan.auto.low:g}, {plan.auto.high:g}]: "
                      "widen the range or give a larger budget share",)
            warnings.warn(notes[-1], BoundWarning, stacklevel=3)
        reports[name] = _histogram_report(plan, r, received, dropped, per_bin, ctx, notes)
    return BoundChoice(values, reports, details)


def rows_beyond(summed, n_total, auto, k, per_bin):
    """The clipped rows and the rows beyond twice the bound, from the bound step's summed noisy histograms.

    Post-processing of counts already released (no share of its own): the rows above the chosen edge
    ``t_k`` (the bound), as a fraction of ``n_total`` with its noise sd (the single machine's
    ``clipped_fraction``), and the rows above the highest edge at or below ``2 t_k``, with their noise sd
    (the single machine's ``rows_beyond_outer``: what clipping removed beyond twice the bound is not
    seen; the edge is at most a grid step below ``2 t_k``, so these rows are at least those beyond it).
    """
    estimate, unit_var = cumulative_estimate(summed, n_total)
    edges = auto.edges()
    outer = max(int(np.searchsorted(edges, 2.0 * edges[k] * (1 + 1e-12), side="right")) - 1, k)
    outer = min(outer, estimate.size - 1)
    beyond, beyond_sd = n_total - estimate[k], per_bin * math.sqrt(float(unit_var[k]))
    far, far_sd = n_total - estimate[outer], per_bin * math.sqrt(float(unit_var[outer]))
    return {"clipped_fraction": float(beyond / n_total), "clipped_fraction_noise_sd": float(beyond_sd / n_total),
            "rows_beyond_outer": float(far), "rows_beyond_noise_sd": float(far_sd),
            "outer_edge": float(edges[outer])}


def _histogram_report(plan, r, received, dropped, per_bin, ctx, notes):
    """A choosing step's report (bound or location): each site's own noise is its guarantee against the aggregator,
    with any colluders."""
    idx = [plan.index(s) for s in received]
    c = min(plan.colluders, plan.n_sites - 1)
    # the output is the plain sum of the histograms: weight 1 per site, noise std per_bin
    sites = _site_reports(plan, r, idx, dropped, np.ones(len(idx)), per_bin, c, plan._round_calibration)
    ok = [s for s in sites if s.status == "ok"]
    return ProtocolReport(plan.protocol, plan.rounds[r].statistic, c, tuple(sites),
                          worst_guarantee([s.claimed for s in ok], True),
                          worst_guarantee([s.joint_view for s in ok]), worst_guarantee([s.output for s in ok]),
                          per_bin, per_bin, 0.0, dropped, "Each site adds its own Gaussian noise to its histogram "
                          "(no shares): its guarantee against the aggregator holds with any colluders.",
                          tuple(ctx["notes"]) + notes, None, plan.target, plan.noise[r],
                          tuple(ctx["transport"].transcript), plan.neighbours)


def _note_bound_dropouts(bound, plan, live):
    """A site that sent its histogram and then dropped out: the bound stands (post-processing of noisy counts)."""
    sent = {s.site for rep in bound.reports.values() for s in rep.sites if s.status == "ok"}
    gone = [s for s in plan.sites if s in sent and s not in live]
    for name, detail in bound.details.items():
        if gone:
            detail["dropped_after_bound_step"] = gone
            detail["note"] = (f"site(s) {gone} sent their histogram and then dropped out: the bound stands (it is "
                              "post-processing of noisy counts) and their histogram share is spent; the moment "
                              "releases cover the other sites")


def worst_guarantee(guarantees, keep_uncertified=False):
    """What holds for every site (their rows are disjoint: parallel composition); ``keep_uncertified``: the
    papers' claim as stated, else what holds."""
    return parallel(guarantees if keep_uncertified else [g.holding or g for g in guarantees])


def finish_round(plan, r, aggregator, inbox, dropped, ctx):
    """Top up the noise every survivor's claim needs; the round's Release (joint-view guarantee) and report."""
    noise, rnd = plan.noise[r], plan.rounds[r]
    received = [s for s in plan.sites if s in inbox]
    idx = [plan.index(s) for s in received]
    mu = noise.weights[idx] / noise.weights[idx].sum()
    agg_var = noise.aggregate_variance(idx)
    needed = float(np.max(mu * noise.tau[idx]))  # every survivor's claim holds on the output
    lost = any(p == "after-deal" and s in plan.sites for s, p in dropped)
    has_e = bool(np.any(noise.e_factor != 0))
    target = needed if (has_e and lost) else math.sqrt(agg_var)
    topup = 0.0 if plan.rank is not None else math.sqrt(max(0.0, needed**2 - agg_var))
    aggregate = aggregator.combine(r, inbox)
    if plan.rank is None:
        aggregate = aggregate + aggregator.top_up(rnd.statistic, topup * (1 + 1e-12))
    final_std = math.sqrt(agg_var + topup**2)
    c = min(plan.colluders, plan.n_sites - 1)
    cal = plan._round_calibration
    sites = _site_reports(plan, r, idx, dropped, mu, final_std, c, cal)
    ok = [s for s in sites if s.status == "ok"]
    notes = tuple(ctx["notes"]) + ((f"aggregator top-up noise std {topup:.4g}",) if topup > 0 else ())
    report = ProtocolReport(
        plan.protocol, rnd.statistic, c, tuple(sites), worst_guarantee([s.claimed for s in ok], keep_uncertified=True),
        worst_guarantee([s.joint_view for s in ok]), worst_guarantee([s.output for s in ok]), final_std, target,
        _excess(final_std, target), dropped, TRUST[plan.protocol], notes, plan.solutions[r], plan.target, noise,
        tuple(ctx["transport"].transcript), plan.neighbours, plan.collusion)
    return round_release(plan, r, received, aggregate, final_std, report.joint_view, ctx["randomness"]), report


def _excess(final_std, target):
    gap = final_std**2 - target**2
    return math.sqrt(gap) if gap > 1e-9 * target**2 else 0.0


def _site_reports(plan, r, idx, dropped, mu, final_std, c, calibration):
    noise = plan.noise[r]
    status = {n: f"failed-{p}" for n, p in dropped}
    reports = []
    for s, name in enumerate(plan.sites):
        common = dict(site=name, n=plan.n[s], weight=float(noise.weights[s]), tau=float(noise.tau[s]),
                      tau_e=float(noise.e_std[s]), tau_g=float(noise.g_std[s]), tau_f=float(noise.f_std[s]),
                      sensitivity=float(noise.sensitivity[s]), claimed=plan.claimed(r, name))
        if s not in idx:
            reports.append(SiteReport(status=status.get(name, "failed-after-deal"), **common))
            continue
        jv = joint_view(noise, name, c, calibration=calibration, survivors=idx)
        ratio = math.inf if final_std == 0 else float(mu[idx.index(s)]) * noise.sensitivity[s] / final_std
        reports.append(SiteReport(status="ok", joint_view=jv.guarantee, joint_delta_m=jv.delta_m,
                                  joint_colluders=jv.colluders, output=guarantee_from_ratio(
                                      ratio, float(noise.deltas[s]), calibration), **common))
    for name, phase in dropped:
        if name not in plan.sites:
            reports.append(SiteReport(site=name, n=0, status=f"failed-{phase}", weight=0.0))
    return reports


def round_release(plan, r, received, aggregate, final_std, guarantee, randomness):
    """The foundation :class:`Release` of round ``r`` over the ``received`` sites (pooled sensitivity)."""
    rnd, stat = plan.rounds[r], plan.rounds[r].stat
    n = sum(plan.n[plan.index(s)] for s in received)
    exact = final_std == 0
    bound = (1.0 if rnd.response == "ones" else plan.response_bound) if stat is CROSS or stat.sampling else None
    sens = stat.sensitivity(n, n_features=plan.n_features, row_norm=plan.row_norm, response_bound=bound,
                            neighbours=plan.neighbours)
    sens *= rnd.weight
    steps = [f"multisite(protocol={plan.protocol}, sites={len(received)}, colluders={plan.colluders}, "
             f"target={plan.target}, plan={plan.digest[:12]}, round={r})"]
    if plan.rank is not None:
        steps.append(f"dpdispca-factors(rank={plan.rank})")
    if stat is EXCESS:
        steps.append("clipping excess: cross_moment holds what clipping at row_norm removed from each variance, "
                     "up to twice row_norm (not a cross moment)")
    if stat.sampling:
        steps.append(f"irls-sampling({stat.name}, w_max={rnd.w_max:g}, at the final public iterate)")
    elif rnd.w_max is not None:
        steps.append(f"irls-weighted(w_max={rnd.w_max:g}, p={rnd.p:g}, at the public iterate of step {rnd.step})")
    return Release(
        n=n, n_features=plan.n_features, row_norm=plan.row_norm, mechanism=(NONE if exact else GAUSSIAN).name,
        noise_scale=float(final_std), neighbours=plan.neighbours, guarantee=guarantee,
        randomness="none" if exact else randomness,
        response_bound=bound,
        center=None if plan.center is None else np.asarray(plan.center),
        calibration=None if exact else ("zcdp" if plan.composition == "zcdp" else plan.calibration),
        sensitivity=None if exact else sens, sensitivity_norm=None if exact else "l2",
        postprocessing=tuple(steps), **{stat.slot: aggregate})
