"""Planning a multi-site release from public facts: checks, per-site calibration, noise plans.

Transport-agnostic: the in-process protocols (:mod:`.protocols`) and the Flower apps
(:mod:`dpmoments.flower`) build the same :class:`~.accounting.NoisePlan` from the same public
inputs (row counts, bounds, each site's ``(epsilon_s, delta_s)``), never from data.
"""

import itertools
import math
import warnings

import numpy as np

from .._validation import check_option
from ..exceptions import NotPrivateWarning
from ..moments import NEIGHBOURS, moment_sensitivity
from ..privacy import CALIBRATIONS, calibrate_gaussian
from .accounting import NoisePlan
from .messages import STATISTIC_NDIM
from .roles import Site
from .unequal import check_weights, solve_unequal

__all__ = ["check_sites", "per_site", "check_options", "calibrate_sites", "site_weights", "noise_plan", "plan_cape",
           "plan_secure"]


def check_sites(sites, minimum=1):
    """A list of at least ``minimum`` :class:`Site` objects sharing ``n_features``, bounds and centre."""
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


def per_site(value, sites, name):
    """A scalar broadcast to every site, or one value per site."""
    if np.ndim(value) == 0:
        return [value] * len(sites)
    value = list(value)
    if len(value) != len(sites):
        raise ValueError(f"'{name}' must be a scalar or one value per site ({len(sites)}); got {len(value)}.")
    return value


def check_options(statistic, neighbours, calibration, on_dropout):
    """Validate the string options shared by every protocol."""
    check_option(statistic, "statistic", tuple(STATISTIC_NDIM))
    check_option(neighbours, "neighbours", NEIGHBOURS)
    check_option(calibration, "calibration", CALIBRATIONS)
    check_option(on_dropout, "on_dropout", ("complete", "abort"))


def calibrate_sites(sites, statistic, epsilons, deltas, neighbours, calibration):
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


def site_weights(sites, weights):
    """``mu_s = N_s / N`` by default, else the checked public ``weights``."""
    n = np.array([s.n for s in sites], dtype=np.float64)
    return n / n.sum() if weights is None else check_weights(weights, len(sites))


# -- noise plans --------------------------------------------------------------------------------
def noise_plan(sites, mu, tau, sens, deltas, e_factor=None, known=None, g=None, f=None):
    """A :class:`NoisePlan`; by default no correlated noise and each site's own ``g_s`` of std ``tau_s``."""
    S = len(sites)
    e_factor = np.zeros((S, 1)) if e_factor is None else e_factor
    return NoisePlan(tuple(s.name for s in sites), tuple(s.n for s in sites), mu, tau, sens, deltas, e_factor,
                     np.zeros(e_factor.shape, bool) if known is None else known,
                     tau if g is None else g, np.zeros(S) if f is None else f)


def plan_cape(sites, mu, tau, sens, deltas):
    """CAPE's plan (``e_s``, ``f_s``, ``g_s`` by :func:`~.unequal.solve_unequal`) and the solution (``None``: noise off)."""
    if np.all(tau == 0):
        return noise_plan(sites, mu, tau, sens, deltas), None
    sol = solve_unequal(tau, mu)
    return noise_plan(sites, mu, tau, sens, deltas, sol.e_factor, g=sol.tau_g, f=sol.tau_f), sol


def plan_secure(sites, mu, tau, sens, deltas):
    """Pairwise masks with variance ``c_st = lam mu_s tau_s mu_t tau_t``; site s scales its by 1/mu_s."""
    S = len(sites)
    pairs = list(itertools.combinations(range(S), 2))
    if np.all(tau == 0):
        return noise_plan(sites, mu, tau, sens, deltas, np.zeros((S, len(pairs)))), None
    mt = mu * tau
    kappa = float(np.max(mt) ** 2 / np.sum(mt**2))
    lam = float(np.max((1 - kappa) * mt / (mt.sum() - mt)))
    L = np.zeros((S, len(pairs)))
    known = np.zeros((S, len(pairs)), bool)
    for j, (a, b) in enumerate(pairs):
        c = math.sqrt(lam * mt[a] * mt[b])
        L[a, j], L[b, j] = c / mu[a], -c / mu[b]
        known[a, j] = known[b, j] = True
    plan = noise_plan(sites, mu, tau, sens, deltas, L, known, g=math.sqrt(kappa) * tau)
    return plan, {"kappa": kappa, "mask_scale": lam, "max_weighted_sum": float(np.max(np.abs(mu @ L)))}
