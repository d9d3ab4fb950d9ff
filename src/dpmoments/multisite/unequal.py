r"""CAPE noise levels for unequal sites: the feasibility problem of docs/algorithms.md §2.4, solved numerically.

Site ``s`` needs per-site noise :math:`\tau_s` (from its own :math:`\varepsilon_s,
\delta_s, N_s`); the aggregator outputs :math:`\sum_s \mu_s(\hat a_s - f_s)` with
public weights :math:`\mu_s > 0`, :math:`\sum_s \mu_s = 1`. The paper's constraints:

(a) :math:`\tau_{e_s}^2 + \tau_{f_s}^2 + \tau_{g_s}^2 \ge \tau_s^2` for every ``s``;
(b) :math:`\sum_s \mu_s^2 \tau_{g_s}^2 = \tau_{pool}^2`;
(c) :math:`\sum_s \mu_s e_s = 0` (exactly, every draw);

and, for the final output to give every site its own guarantee,
(d) :math:`\tau_{pool} \ge \mu_s \tau_s` for every ``s``.

Our solution (the paper's closed form was not recovered):

* :math:`\tau_{pool} = \max_s \mu_s\tau_s` (the least output noise that (d) allows);
* :math:`\tau_{g_s}^2 = \kappa\tau_s^2` with :math:`\kappa = \tau_{pool}^2/\sum_t\mu_t^2\tau_t^2 \le 1`,
  so (b) holds and every site gets the same share of its noise from ``g``;
* ``e`` is the law of independent :math:`\tilde e_s \sim N(0, \tilde\sigma_s^2)` conditioned
  on :math:`\mu^\top\tilde e = 0`, i.e. :math:`e = (I - w\mu^\top)\tilde e` with
  :math:`w_s = \mu_s\tilde\sigma_s^2 / \sum_t \mu_t^2\tilde\sigma_t^2` (so (c) holds for every
  draw), and the :math:`\tilde\sigma_s` are found numerically (``scipy.optimize.least_squares``)
  so that :math:`\tau_{e_s}^2 = (1-\kappa)\tau_s^2`. Then :math:`e_s + g_s` alone has variance
  :math:`\tau_s^2`. When no such ``e`` exists (one site's :math:`\mu_s\tau_s` exceeds the
  sum of the others': a "polygon" condition), ``e`` is made larger than needed for
  every site instead, which costs no utility (it cancels);
* :math:`\tau_{f_s}^2 = \max(\kappa\tau_s^2, \tau_s^2 - \tau_{e_s}^2 - \tau_{g_s}^2)`.

With :math:`\mu_s = 1/S` and equal :math:`\tau_s = \tau` this is exactly equal-site
CAPE: :math:`\kappa = 1/S`, :math:`\tau_e^2 = (1-1/S)\tau^2`, :math:`\tau_g^2 = \tau_f^2 = \tau^2/S`.
With :math:`\mu_s = N_s/N` and a common (epsilon, delta) it gives the pooled noise for any
:math:`N_s`. Constraints (a)-(d) are checked after solving; a violation raises.
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["UnequalSolution", "solve_unequal", "check_weights"]

_TOL = 1e-9


@dataclass(frozen=True, eq=False)
class UnequalSolution:
    """Noise levels of an unequal-site CAPE run (per coordinate of the statistic).

    Attributes
    ----------
    tau_pool : float
        Standard deviation of the aggregate's noise.
    kappa : float
        Share of each site's variance carried by its local ``g``.
    tau_e, tau_g, tau_f : ndarray of shape (S,)
    e_factor : ndarray of shape (S, S)
        ``e = e_factor @ z`` with ``z ~ N(0, I)``; ``weights @ e_factor == 0``.
    exact : bool
        False when the polygon condition failed and ``e`` was enlarged.
    constraints : dict
        The residual of each constraint (a)-(d), all checked.
    """

    tau_pool: float
    kappa: float
    tau_e: np.ndarray
    tau_g: np.ndarray
    tau_f: np.ndarray
    e_factor: np.ndarray
    exact: bool
    constraints: dict


def check_weights(weights, n_sites):
    """Positive weights summing to one (renormalised if they sum to one up to 1e-9)."""
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n_sites,):
        raise ValueError(f"'weights' must have one entry per site ({n_sites}); got shape {w.shape}.")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"'weights' must be finite and > 0; got {w.tolist()}.")
    if abs(w.sum() - 1.0) > 1e-9:
        raise ValueError(f"'weights' must sum to 1; got sum {w.sum()!r}.")
    return w / w.sum()


def _e_factor(a, mu):
    """``(I - w mu^T) diag(sigma~)`` for weighted variances ``a = mu^2 sigma~^2``."""
    sig = np.sqrt(a) / mu
    w = a / (mu * a.sum())
    return (np.eye(mu.size) - np.outer(w, mu)) * sig


def _variances(a, mu):
    return (a - a**2 / a.sum()) / mu**2


def _solve_e(target, mu):
    """Weighted variances ``a`` with ``Var(e_s) = target_s``, or the safe enlarged fallback."""
    S = mu.size
    t = mu**2 * target
    a0 = t * S / (S - 1.0)  # exact in the equal case
    from scipy.optimize import least_squares  # here: keeps the Flower apps' start-up fast

    res = least_squares(lambda la: _variances(np.exp(la), mu) / target - 1.0, np.log(a0),
                        xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=2000)
    a = np.exp(res.x)
    if np.max(np.abs(_variances(a, mu) / target - 1.0)) <= _TOL:
        return a, True
    # Polygon condition failed: equal weighted shares p_s = 1/S with a total V large enough
    # that every Var(e_s) = V (1/S)(1 - 1/S) / mu_s^2 >= target_s.
    V = np.max(t) * S * S / (S - 1.0)
    return np.full(S, V / S), False


def solve_unequal(tau, weights):
    """Solve the feasibility problem of unequal sites; see the module docstring.

    Parameters
    ----------
    tau : array-like of shape (S,)
        Per-site noise standard deviations, > 0 (each calibrated to the site's
        own epsilon, delta and sensitivity).
    weights : array-like of shape (S,)
        The aggregator's weights mu, > 0, summing to 1.

    Returns
    -------
    UnequalSolution

    Examples
    --------
    >>> sol = solve_unequal([1.0, 1.0, 1.0, 1.0], [0.25] * 4)
    >>> round(sol.kappa, 12), [round(float(x), 12) for x in sol.tau_e ** 2]
    (0.25, [0.75, 0.75, 0.75, 0.75])
    """
    tau = np.asarray(tau, dtype=np.float64)
    S = tau.size
    if S < 2:
        raise ValueError(f"CAPE needs at least 2 sites; got {S}.")
    if not np.all(np.isfinite(tau)) or np.any(tau <= 0):
        raise ValueError(f"'tau' must be finite and > 0; got {tau.tolist()}.")
    mu = check_weights(weights, S)
    tau_pool = float(np.max(mu * tau))
    kappa = tau_pool**2 / float(np.sum(mu**2 * tau**2))
    tau_g = np.sqrt(kappa) * tau
    a, exact = _solve_e((1.0 - kappa) * tau**2, mu)
    L = _e_factor(a, mu)
    tau_e = np.sqrt(np.sum(L**2, axis=1))
    tau_f = np.sqrt(np.maximum(kappa * tau**2, tau**2 - tau_e**2 - tau_g**2))
    constraints = _check(tau, mu, tau_pool, tau_e, tau_g, tau_f, L)
    return UnequalSolution(tau_pool, kappa, tau_e, tau_g, tau_f, L, exact, constraints)


def _check(tau, mu, tau_pool, tau_e, tau_g, tau_f, L):
    """Residuals of (a)-(d); raise if any is violated beyond rounding."""
    scale = float(np.max(tau**2))
    a = float(np.min(tau_e**2 + tau_f**2 + tau_g**2 - tau**2)) / scale
    b = float(np.sum(mu**2 * tau_g**2) - tau_pool**2) / tau_pool**2
    c = float(np.max(np.abs(mu @ L))) / float(np.max(np.abs(L)))
    d = float(np.min(tau_pool - mu * tau)) / tau_pool
    if a < -_TOL or abs(b) > _TOL or c > 1e-12 or d < -_TOL:
        raise RuntimeError(f"internal error: the CAPE noise levels violate a constraint: a={a}, b={b}, c={c}, d={d}.")
    return {"a_min_slack": a, "b_relative_error": b, "c_max_weighted_sum": c, "d_min_slack": d}
