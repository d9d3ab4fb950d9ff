r"""The one table of multi-site protocols, and the noise each one plans.

=======================  ====================================================  =====================================
protocol                 what site ``s`` sends                                 aggregate noise std
=======================  ====================================================  =====================================
``cape``                 :math:`A_s + e_s + f_s + g_s` (zero-sum ``e``)        pooled :math:`\max_s\mu_s\tau_s`
``conventional``         :math:`A_s + g_s`, full noise each                    :math:`\sqrt{\sum_s\mu_s^2\tau_s^2}`
``secure-aggregation``   :math:`A_s + \frac1{\mu_s}\sum_t\pm m_{st} + g_s`     as CAPE
``local``                one site's own release                                :math:`\tau_s`
``dpdispca``             a rank-``r`` factor of :math:`A_s + G_s`              (post-processed)
``pooled``               reference: a trusted curator pools the rows           pooled
=======================  ====================================================  =====================================

The API (:func:`dpmoments.multisite.run`), ``dpmoments simulate`` and the deployments
(``dpmoments noise-generator | site | aggregate``) all read :data:`PROTOCOLS`. Every
noise plan is linear in the per-site stds :math:`\tau_s`, which is what lets a plan be
rescaled to meet a guarantee against the aggregator (:mod:`.plan`).
"""

import itertools
import math
from dataclasses import dataclass
from typing import Optional

# NumPy and the noise plan are imported by noise_for: the command line reads PROTOCOLS to build its options, and
# '--help' imports no NumPy (tests/test_import_cost.py).

__all__ = ["Protocol", "PROTOCOLS", "TRUST", "noise_for"]


@dataclass(frozen=True)
class Protocol:
    """One row of the table: how the noise is split, how many sites, where it runs, whom it trusts."""

    name: str
    masking: str       # "dealer" (CAPE's shares), "pairwise" (seeded masks), "none"
    min_sites: int
    max_sites: Optional[int]  # None: no limit
    deployable: bool   # runs across machines (its secrets come from a dealer's files, or none are needed)
    factor: bool       # the sites send a low-rank factor instead of the statistic
    trust: str


_ROWS = (
    Protocol("cape", "dealer", 2, None, True, False,
             "A trusted noise generator deals e_s over secure channels to the sites only (e_s never passes "
             "through the aggregator). Honest-but-curious aggregator; at most `colluders` sites collude with it "
             "(accounted in the joint view). Each site answers each step of a plan once (its own ledger). Row "
             "counts N_s are public."),
    Protocol("conventional", "none", 1, None, True, False,
             "No trusted party. Each message alone carries its site's full noise; the aggregator (and any "
             "colluders) learn nothing beyond each site's own guarantee."),
    Protocol("secure-aggregation", "pairwise", 2, None, False, False,
             "No trusted party. Each pair of sites shares a seed (key agreement over an authenticated channel, "
             "never via the aggregator; simulated in process) and adds +m_st / -m_st; each site adds its own "
             "g_s. Honest-but-curious aggregator; a colluding site reveals every mask it shares (accounted: "
             "worse than CAPE once colluders >= 1). Dropout breaks cancellation: no mask recovery is "
             "implemented; completion keeps the uncancelled masks as extra noise, or aborts."),
    Protocol("local", "none", 1, 1, True, False, "One site releases its own statistic; nothing is shared."),
    Protocol("dpdispca", "none", 1, None, True, True,
             "No trusted party; each site sends a rank-r factor of its own Gaussian release."),
    Protocol("pooled", "none", 1, None, False, False,
             "Reference only: a trusted curator sees every row of every site."),
)
#: name -> :class:`Protocol`.
PROTOCOLS = {p.name: p for p in _ROWS}
#: name -> the protocol's trust assumptions, in words.
TRUST = {p.name: p.trust for p in _ROWS}


def noise_for(masking, names, n, mu, tau, sens, deltas):
    """The :class:`NoisePlan` of one round and the solution's record (``None`` without masks).

    ``"dealer"``: CAPE's ``e``, ``f``, ``g`` (:func:`~.unequal.solve_unequal`); ``"pairwise"``: masks of
    variance ``lam mu_s tau_s mu_t tau_t`` per pair, which site ``s`` scales by ``1/mu_s``;
    ``"none"``: each site its own ``g_s`` of std ``tau_s``.
    """
    import numpy as np

    from .noise import NoisePlan
    from .unequal import solve_unequal

    S = len(names)
    args = (tuple(names), tuple(int(v) for v in n), mu, tau, sens, deltas)
    if masking == "none" or np.all(tau == 0):
        m = 1 if masking != "pairwise" else max(1, S * (S - 1) // 2)
        return NoisePlan(*args, np.zeros((S, m)), np.zeros((S, m), bool), tau, np.zeros(S)), None
    if masking == "dealer":
        sol = solve_unequal(tau, mu)
        extra = dict(sol.constraints, exact=sol.exact, kappa=sol.kappa, tau_pool=sol.tau_pool)
        return NoisePlan(*args, sol.e_factor, np.zeros(sol.e_factor.shape, bool), sol.tau_g, sol.tau_f), extra
    pairs = list(itertools.combinations(range(S), 2))
    mt = mu * tau
    kappa = float(np.max(mt) ** 2 / np.sum(mt**2))
    lam = float(np.max((1 - kappa) * mt / (mt.sum() - mt)))
    L, known = np.zeros((S, len(pairs))), np.zeros((S, len(pairs)), bool)
    for j, (a, b) in enumerate(pairs):
        c = math.sqrt(lam * mt[a] * mt[b])
        L[a, j], L[b, j] = c / mu[a], -c / mu[b]
        known[a, j] = known[b, j] = True
    extra = {"kappa": kappa, "mask_scale": lam, "max_weighted_sum": float(np.max(np.abs(mu @ L)))}
    return NoisePlan(*args, L, known, math.sqrt(kappa) * tau, np.zeros(S)), extra
