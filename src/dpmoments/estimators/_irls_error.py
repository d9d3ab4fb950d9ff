r"""The error budget behind an IRLS coefficient's interval, from the releases alone.

The private IRLS iterate :math:`\theta_j = \tilde B_j^{-1}\tilde A_j` carries the noise of its own
two releases, and, through the weights, that of every earlier iteration. Near the fixed point
:math:`\theta^*` of the IRLS map :math:`T` (``docs/algorithms.md`` §3.4),

.. math::

    \theta_j - \theta^* \approx M(\theta_{j-1} - \theta^*) + e_j, \qquad M = I - B^{-1} H,

where :math:`e_j` is iteration :math:`j`'s noise passed through its solve (first order:
:math:`\mathrm{Cov}\,e_j = \tilde B_j^{-1}(\Sigma_A + \mathrm{Cov}(E_B\theta_j))\tilde B_j^{-1}`),
:math:`B` the weighted second moment and :math:`H = w_{\max}\frac1n\sum_i 1\{|r_i| < 1/w_{\max}\}
x_i x_i^\top` the derivative of :math:`\sum_i x_i\psi(r_i)`, :math:`\psi(r) = \operatorname{clip}
(w_{\max} r, -1, 1)`. Every weight is at least :math:`w_{\max} 1\{|r| < 1/w_{\max}\}`, so
:math:`B \succeq H \succeq 0` and :math:`M` has its eigenvalues in :math:`[0, 1]`. The parts:

- **noise of every iteration**: :math:`\sum_{j=1}^J M^{J-j}\,\mathrm{Cov}(e_j)\,M^{J-j\top}`;
  without an estimate of :math:`H` (``sampling_budget=0``, across sites) :math:`M = I` (each
  iteration's noise passed undamped, the largest its eigenvalues allow);
- **the iterations not run**: :math:`\theta^* - \theta_J \approx M^J\theta^*` from the start at 0;
  the interval is stretched by :math:`M^J\theta_J` on that side (first order);
- **sampling** (``target="population"``): the sandwich :math:`H^{-1} V H^{-1}/n`,
  :math:`V = \frac1n\sum_i\psi(r_i)^2 x_ix_i^\top`, both released privately at the final iterate
  (:mod:`dpmoments.estimators._irls_sampling`); :math:`H` by the kernel count of residuals within a
  bandwidth :math:`h \ge 1/w_{\max}` (Powell's estimator), :math:`H \approx K_h / h`.

- **the floor**: where the final :math:`\tilde B` had eigenvalues raised to the floor (noise above
  the signal there), the solve shrinks the coefficients along those directions by an unknown
  factor: a coefficient with more than ``FLOORED_SHARE`` of its square loading on them is marked
  *biased* and its interval withheld (NaN), never printed as if complete.
- **the floor of H**: where some eigenvalues of the released :math:`H` are at or below its noise floor
  (others not), the floor stands in for the rows along those directions in the sandwich and the
  contraction, so sampling is not measured there: a coefficient with more than ``FLOORED_SHARE`` of its
  square loading on them (the same measure as B's) is marked *unsampled*: its interval is the noise-only
  one of a run without sampling releases (:math:`M = I`, no stretch for the iterations not run) and
  says so, as every coefficient's is when all of them are floored (``sampling-within-noise``).

- **the w_max knot's smoothing**: LAD's score, released at the final iterate, checks whether the knot moved the
  fit away from LAD's; not covered, the entry says so either way (:mod:`dpmoments.estimators._irls_knot`).

Not covered: the clipping bias of the rows and responses, which the entry's ``covers`` says.
Everything here reads released numbers and public values only: no rows.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..mechanisms.laws import NONE
from ..solvers.irls import solve_weighted
from ._irls_knot import KNOT_TEST, knot_check, knot_lines
from .diagnostics import Diagnostics
from .uncertainty import NoiseLaw, bootstrap_generator, check_draws, check_level, fewest_draws, z_value

__all__ = ["ErrorBudget", "irls_error_budget", "irls_laws", "solve_se", "noise_cov", "FLOORED_SHARE"]

#: A coefficient whose unit vector has more than this share of its square on the floored eigenvectors of
#: the final B~ is marked biased (its shrinkage there is unknown).
FLOORED_SHARE = 0.05


def irls_laws(first, second, scales, d):
    """The noise laws of the first- and second-moment releases of one IRLS iteration."""
    if scales["A"] == 0.0:
        return NoiseLaw(NONE, 0.0), NoiseLaw(NONE, 0.0)
    return NoiseLaw(first, scales["A"]), NoiseLaw(second, scales["B"], d + 1 if not second.additive else None)


def _product_cov(law, theta):
    r"""Covariance of :math:`E\theta` for symmetric noise ``E`` of this law (entries independent up to symmetry)."""
    var_o, var_d = law.sd**2, law.diagonal_sd**2
    spread = var_o * (theta @ theta * np.eye(theta.size) + np.outer(theta, theta))
    return spread + np.diag((var_d - 2 * var_o) * theta**2)


def _sampling_within_noise(sampling):
    """Whether every eigenvalue of the released ``H`` is at or below its noise floor ``H_floor`` (the noise's
    spectral norm): ``H``'s inverse is then the floor's along every direction, so the sandwich ``H^-1 V H^-1`` and
    the contraction ``I - B^-1 H`` are the noise's, not the rows' (a sampling share of 1e-9 gave intervals labelled
    'noise + sampling' narrower than the noise-only ones). Some directions floored, others not: the coefficients
    along them get the noise-only intervals (:func:`_unsampled`)."""
    floor = sampling.get("H_floor")
    H = np.asarray(sampling["H"], dtype=float)
    return floor is not None and float(np.linalg.eigvalsh(0.5 * (H + H.T))[-1]) <= float(floor)


def _floored_inverse(B, floor):
    lam, Q = np.linalg.eigh(0.5 * (B + B.T))
    return (Q / np.maximum(lam, floor)) @ Q.T if floor is not None and floor > 0 else np.linalg.pinv(B)


def noise_cov(A, B, floor, law_a, law_b):
    """``theta`` of one floored solve and the first-order covariance its two releases' noise gives it."""
    theta, _ = solve_weighted(B, A, floor)
    Binv = _floored_inverse(B, floor)
    return theta, Binv @ (law_a.sd**2 * np.eye(theta.size) + _product_cov(law_b, theta)) @ Binv


def solve_se(A, B, floor, law_a, law_b):
    """``theta`` of the floored solve and its first-order standard errors under the noise of ``A`` and ``B``."""
    theta, cov = noise_cov(A, B, floor, law_a, law_b)
    return theta, np.sqrt(np.maximum(np.diag(cov), 0.0))


def _contraction(B, floor, H):
    """``M = I - B^-1 H`` with the eigenvalues of ``B^-1/2 H B^-1/2`` held in [0, 1]; ``I`` without ``H``."""
    d = B.shape[0]
    if H is None:
        return np.eye(d)
    lam, Q = np.linalg.eigh(0.5 * (B + B.T))
    lam = np.maximum(lam, floor if floor else 1e-12 * max(1.0, lam.max()))
    root, inv_root = (Q * np.sqrt(lam)) @ Q.T, (Q / np.sqrt(lam)) @ Q.T
    nu, P = np.linalg.eigh(inv_root @ (0.5 * (H + H.T)) @ inv_root)
    return inv_root @ ((P * (1.0 - np.clip(nu, 0.0, 1.0))) @ P.T) @ root


def _bootstrap_cov(A, B, floor, laws, n_draws, rng):
    """The final solve's covariance by redrawing its two releases (the earlier ones enter through ``M``)."""
    gen = bootstrap_generator(rng)
    law_a, law_b = laws
    draws = np.array([solve_weighted(B + law_b.matrix(B.shape[0], gen), A + law_a.vector(A.size, gen), floor)[0]
                      for _ in range(n_draws)])
    return np.atleast_2d(np.cov(draws, rowvar=False))


def irls_error_budget(iterations, floor, laws, sampling, n, *, n_draws=0, level=0.9, rng=None,
                      owner="PrivateIRLS"):
    r"""The coefficients' covariance and interval: every iteration's noise, the iterations not run, sampling.

    Parameters
    ----------
    iterations : list of (A, B)
        Every iteration's released moments, in order.
    floor : float or None
        The eigenvalue floor every solve used.
    laws : (NoiseLaw, NoiseLaw)
        The noise laws of each iteration's A and B releases.
    sampling : dict or None
        The sampling releases at the final iterate (``H``, ``V``, already divided as in the module
        docstring, with their noise floors ``H_floor``); ``None``: the parts that need them are
        left out (and said so).
    n : int
        The public number of rows.

    Returns
    -------
    ErrorBudget
    """
    level, n_draws = check_level(level), check_draws(n_draws)
    drawn = n_draws >= fewest_draws(level)  # fewer: a covariance too rough for the level's tails (warned)
    A, B = iterations[-1]
    theta = solve_weighted(B, A, floor)[0]
    diag = Diagnostics(owner)
    if sampling is not None and _sampling_within_noise(sampling):
        sampling = None  # its H is the floor's, not the rows': neither the sandwich nor the contraction is measured
        diag.flag("sampling-within-noise", "the sampling releases are within their noise (every eigenvalue of the "
                                           "bread K_h at or below its noise floor): the intervals count the "
                                           "iterations' noise only, not sampling; give a larger sampling share.")
    H = None if sampling is None else sampling["H"]
    M = _contraction(B, floor, H)
    d, J = theta.size, len(iterations)
    cov, power = _propagated(iterations, floor, laws, M, n_draws if drawn else 0, rng)
    noise = cov.copy()
    stretch = _not_run(theta, power, H is not None)  # power = M^J now
    if sampling is not None and sampling.get("V") is not None:
        Hinv = _floored_inverse(H, sampling["H_floor"])
        cov = cov + Hinv @ sampling["V"] @ Hinv / n
    biased = _floored_loading(B, floor) > FLOORED_SHARE
    noiseless = all(law.mechanism is NONE for law in laws)  # epsilon = inf: H's floor is numerical, not noise
    unsampled = _unsampled(None if noiseless else sampling, biased, diag)
    # where the floor stands in for the rows, the noise-only budget of a run without sampling releases (M = I)
    undamped = _propagated(iterations, floor, laws, np.eye(d), n_draws if drawn else 0, rng)[0] if unsampled.any() \
        else None
    total_noise = math.sqrt(max(float(np.trace(noise)), 0.0))
    snr = math.inf if total_noise == 0 else float(np.linalg.norm(theta)) / total_noise
    if snr < 1.0:
        diag.flag("coefficients-within-noise", f"the coefficients are within their noise (signal-to-noise {snr:.2g}"
                                               " < 1): at this budget and sample size they are mostly noise.")
    if biased.any():
        diag.flag("coefficients-floored", f"{int(biased.sum())} of {d} coefficients lie along directions where the "
                                          "noise of B hid the signal (eigenvalues raised to the floor): their "
                                          "intervals are withheld (biased); a larger epsilon, fewer columns or more "
                                          "rows lift the signal above that noise.")
    found, ratio = knot_check(sampling, noise)
    if found:
        diag.flag("knot-smoothing", "LAD's score at the fit (a private release) is far from 0: many residuals lie "
                                    "within the w_max knot (a response with few distinct values), so the IRLS fit "
                                    "is a smoothed one and LAD's own fit can lie outside the intervals; a larger "
                                    "w_max shrinks the knot.")
    summary = _summary(level, n_draws, drawn, snr, laws, sampling, H is not None, J, float(np.abs(stretch).max()),
                       knot_lines(found, ratio))
    summary["withheld"] = f"{int(biased.sum())} of {d} (floored directions)"
    if ratio is not None:  # post-processing of the sign-score release
        summary["w_max_knot"] = {"found": bool(found), "score_over_its_size_at_lad": ratio, "threshold": KNOT_TEST}
    if unsampled.any():
        summary["noise_only"] = f"{int(unsampled.sum())} of {d} (floored directions of the sampling release K_h)"
    return ErrorBudget(theta, cov, noise, stretch, biased, snr, diag.as_list(), summary, unsampled, undamped)


def _propagated(iterations, floor, laws, M, n_draws, rng):
    """Every iteration's noise passed through the contraction ``M`` to the end, and ``M^J``; the final solve's by
    ``n_draws`` redraws when given."""
    law_a, law_b = laws
    d, J = M.shape[0], len(iterations)
    cov, power = np.zeros((d, d)), np.eye(d)
    if law_a.mechanism is NONE and law_b.mechanism is NONE:  # no noise (epsilon = inf): nothing to propagate
        return cov, np.linalg.matrix_power(M, J)
    A, B = iterations[-1]
    for j, (Aj, Bj) in enumerate(reversed(iterations)):  # the final iteration first: M^0, M^1, ...
        cj = _bootstrap_cov(A, B, floor, laws, n_draws, rng) if j == 0 and n_draws else \
            noise_cov(Aj, Bj, floor, law_a, law_b)[1]
        cov += power @ cj @ power.T
        power = M @ power
    return cov, power


def _unsampled(sampling, biased, diag):
    """The coefficients loading on floored directions of the released ``H`` (some at or below its noise floor,
    not all: :func:`_sampling_within_noise`): there the floor, not the rows, gives the sandwich and the
    contraction, so their sampling part is unmeasured: their intervals are the noise-only ones of a run without
    sampling releases (``M = I``, no stretch), and say so, as when every direction is floored."""
    d = biased.size
    if sampling is None or sampling.get("V") is None:
        return np.zeros(d, bool)
    unsampled = (_floored_loading(sampling["H"], sampling["H_floor"]) > FLOORED_SHARE) & ~biased  # B's rule first
    if unsampled.any():
        diag.flag("sampling-floored", f"{int(unsampled.sum())} of {d} coefficients lie along directions where the "
                                      "sampling release K_h is at or below its noise floor: their sampling part "
                                      "is not measured, so their intervals count the iterations' noise only; more "
                                      "rows or a larger sampling share lift K_h above its noise.")
    return unsampled


@dataclass(frozen=True)
class ErrorBudget:
    """The coefficients' error budget in the fit's coordinates; ``mapped`` takes it to the user's."""

    theta: np.ndarray
    cov: np.ndarray  # every part
    noise_cov: np.ndarray  # the iterations' noise only
    stretch: np.ndarray  # the iterations not run: added on its side of the interval
    biased: np.ndarray  # withheld: floored directions of B
    snr: float
    diagnostics: list
    summary: dict
    unsampled: np.ndarray = None  # floored directions of the sampling release H: noise-only (None: none)
    undamped: np.ndarray = None  # their noise-only covariance, M = I (None: none unsampled)

    def mapped(self, T, offset):
        """The same budget of ``T theta + offset``; a coordinate touching a marked one is marked (same reason)."""
        undamped = None if self.undamped is None else T @ self.undamped @ T.T
        return ErrorBudget(T @ self.theta + offset, T @ self.cov @ T.T, T @ self.noise_cov @ T.T, T @ self.stretch,
                           _touched(T, self.biased), self.snr, self.diagnostics, self.summary,
                           _touched(T, self.unsampled), undamped)

    def _marked(self):
        return np.zeros(self.theta.size, bool) if self.unsampled is None else self.unsampled

    def se(self):
        """Every part; the noise-only one where the sampling release is floored (``unsampled``)."""
        se = np.sqrt(np.maximum(np.diag(self.cov), 0.0))
        return se if not self._marked().any() else np.where(self._marked(), _diag_se(self.undamped), se)

    def noise_se(self):
        se = np.sqrt(np.maximum(np.diag(self.noise_cov), 0.0))
        return se if not self._marked().any() else np.where(self._marked(), _diag_se(self.undamped), se)

    def interval(self, level):
        """``theta -+ z se``, stretched by the iterations not run on their side (not where ``unsampled``: that
        stretch needs the contraction the floor stands in for); NaN where biased."""
        half = z_value(level) * self.se()
        stretch = np.where(self._marked(), 0.0, self.stretch)
        out = np.stack([self.theta - half + np.minimum(stretch, 0.0), self.theta + half + np.maximum(stretch, 0.0)])
        out[:, self.biased] = np.nan
        return out


def _diag_se(cov):
    return np.sqrt(np.maximum(np.diag(cov), 0.0))


def _touched(T, marked):
    """The coordinates of ``T theta`` that take any part of a marked coordinate of ``theta``."""
    if marked is None or not marked.any():
        return np.zeros(T.shape[0], bool)
    return (np.abs(T[:, marked]) > 0).any(axis=1)


def _floored_loading(B, floor):
    """Each coordinate's squared loading on the eigenvectors of ``B`` below ``floor`` (0 without a floor)."""
    if not floor:
        return np.zeros(B.shape[0])
    lam, Q = np.linalg.eigh(0.5 * (B + B.T))
    return (Q[:, lam < floor] ** 2).sum(axis=1)


def _not_run(theta, power, known):
    """``M^J theta``: how far the iterations not run would move the coefficients (``theta* - theta_J =
    M^J theta*`` from the start at 0, ``theta*`` estimated by ``theta_J``: first order)."""
    return power @ theta if known else np.zeros_like(theta)


def _summary(level, n_draws, drawn, snr, laws, sampling, known_m, J, stretch, knot):
    covered = [f"the noise of all {J} iterations (propagated through the weights, first order)"]
    missing = ["clipping bias (rows beyond row_norm, responses beyond response_bound)"]
    missing += [knot] if knot else []
    if known_m:
        covered.append("the iterations not run (the interval reaches where they would go)")
    else:
        missing.append("the iterations not run (no sampling release to estimate the IRLS map's contraction; "
                       "each iteration's noise is passed on undamped instead)")
    if sampling is not None:
        covered.append("sampling variability of the rows (the LAD sandwich, from private releases)")
    else:
        missing.append("sampling variability of the rows")
    return {"method": "closed-form (first order)" + (", final iteration by parametric bootstrap" if drawn else ""),
            "level": level, "n_draws": n_draws, "signal_to_noise": snr,
            "signal_to_noise_definition": "||theta|| / sqrt(sum of the coefficients' noise variances)",
            "noise": {"first_moment": laws[0].to_dict(), "second_moment": laws[1].to_dict()},
            "iterations_not_run": stretch, "covers": "; ".join(covered), "not_covered": "; ".join(missing),
            "scope": ("for the population coefficients" if sampling is not None else
                      "for the coefficients of these rows (no sampling part)") + ": " + "; ".join(covered)
                     + "; not covered: " + "; ".join(missing)}  # the console's line says what it leaves out too
