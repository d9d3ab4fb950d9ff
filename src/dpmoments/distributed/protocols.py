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

import warnings

import numpy as np

from .._rng import as_generator
from .._validation import check_int
from ..exceptions import NotPrivateWarning
from ..moments import moment_sensitivity
from ..privacy import calibrate_gaussian
from .accounting import ProtocolReport, SiteReport
from .completion import TRUST, DistributedResult, distributed_release, finish
from .engine import InProcessEngine
from .messages import ProtocolAborted
from .planning import (calibrate_sites, check_options, check_sites, noise_plan, per_site, plan_cape, plan_secure,
                       site_weights)
from .roles import Site, unit_noise

__all__ = ["DistributedResult", "run_conventional", "run_cape", "run_cape_unequal", "run_secure_aggregation",
           "run_local", "run_dpdispca", "run_pooled", "TRUST"]


# -- protocols ----------------------------------------------------------------------------------
def _additive(protocol, sites, epsilon, delta, statistic, neighbours, calibration, weights, colluders, failures,
              min_sites, on_dropout, rng, minimum_sites):
    check_options(statistic, neighbours, calibration, on_dropout)
    sites = check_sites(sites)
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
    eps = [per_site(epsilon, sites, "epsilon")[index[s.name]] for s in alive]
    dls = [per_site(delta, sites, "delta")[index[s.name]] for s in alive]
    sens, tau, claimed = calibrate_sites(alive, statistic, eps, dls, neighbours, calibration)
    if weights is None:
        mu = site_weights(alive, None)
    else:
        mu = site_weights(sites, weights)[[index[s.name] for s in alive]]
    mu = mu / mu.sum()
    builder = {"cape": plan_cape, "secure-aggregation": plan_secure}.get(protocol)
    if builder is None:
        plan, extra = noise_plan(alive, mu, tau, sens, np.array(dls)), None
    else:
        plan, extra = builder(alive, mu, tau, sens, np.array(dls))
        if protocol == "cape" and extra is not None:
            extra = dict(extra.constraints, exact=extra.exact, kappa=extra.kappa, tau_pool=extra.tau_pool)
    masking = {"cape": "dealer", "secure-aggregation": "pairwise"}.get(protocol, "none")
    outcome = engine.run_additive(alive, plan, statistic, masking=masking)
    ctx = dict(protocol=protocol, statistic=statistic, calibration=calibration, colluders=colluders,
               min_sites=min_sites, on_dropout=on_dropout, neighbours=neighbours, rng=rng)
    return finish(ctx, alive, plan, outcome, dropped_before, claimed, engine, extra)


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
    check_options("second", neighbours, calibration, "complete")
    sites = check_sites(sites)
    rank = check_int(rank, "rank", minimum=1)
    if rank > sites[0].n_features:
        raise ValueError(f"'rank' must be <= n_features={sites[0].n_features}; got {rank}.")
    engine = InProcessEngine(rng, failures)
    alive, dropped_before = engine.enrol(sites)
    if len(alive) < min_sites:
        raise ProtocolAborted(f"dpdispca: {len(alive)} site(s) joined; at least {min_sites} are needed.")
    index = {s.name: i for i, s in enumerate(sites)}
    eps = [per_site(epsilon, sites, "epsilon")[index[s.name]] for s in alive]
    dls = [per_site(delta, sites, "delta")[index[s.name]] for s in alive]
    sens, tau, claimed = calibrate_sites(alive, "second", eps, dls, neighbours, calibration)
    mu = site_weights(sites, weights)[[index[s.name] for s in alive]]
    plan = noise_plan(alive, mu / mu.sum(), tau, sens, np.array(dls))
    outcome = engine.run_factors(alive, plan, rank)
    ctx = dict(protocol="dpdispca", statistic="second", calibration=calibration, colluders=0, min_sites=min_sites,
               on_dropout="complete", neighbours=neighbours, rng=rng, top_up=False,
               postprocessing=(f"dpdispca-factors(rank={rank})",))
    return finish(ctx, alive, plan, outcome, dropped_before, claimed, engine)


def run_pooled(sites, *, epsilon, delta, statistic="second", neighbours="replace-one", calibration="analytic",
               rng=None):
    """Reference: a trusted curator pools every site's rows and releases once (CAPE's target)."""
    check_options(statistic, neighbours, calibration, "complete")
    sites = check_sites(sites)
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
    release = distributed_release(sites, [s.name for s in sites], exact + noise, tau, report, ctx)
    return DistributedResult(release, report)
