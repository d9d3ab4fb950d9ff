r"""The ``w_max`` knot's smoothing: where the IRLS fit is not LAD's, and a bound on how far, from releases alone.

IRLS with the largest weight :math:`w_{\max}` solves :math:`\frac1n\sum_i z_i\psi(r_i) = 0`,
:math:`\psi(r) = \operatorname{clip}(w_{\max} r, -1, 1)`, not LAD's :math:`\frac1n\sum_i z_i\operatorname{sign}(r_i)
\ni 0`. The two differ only on the rows with :math:`|r_i| < 1/w_{\max}`, by at most 1 each. Where the response
has a density at the fit, the difference is second order and the intervals hold LAD's value (the simulations).
Where many residuals sit within the knot (a response with a few distinct values, such as RAND HIE's ``lncoins``,
five of them: 69% of the residuals within the knot), the IRLS fit is a smoothed one, its intervals are about
it, and LAD's own fit (a vertex: exact zeros) lies outside them.

The check: LAD's score :math:`S` at the final iterate is released (:mod:`dpmoments.estimators._irls_sampling`).
At the rows' own LAD fit it is 0 but for the terms of the zero residuals (:math:`d` of them at a vertex, norm
at most :math:`R` each: :math:`dR/n`) and its noise (``sign_null_sd``); the private iterate's own noise
(covariance :math:`C`, the iterations' noise) moves it by about :math:`H` times that error,
:math:`\operatorname{tr}(HCH^\top)` more in square. A released norm over ``KNOT_TEST`` times the root of the
sum says the knot moved the fit: the entries then take the allowance below on both sides, and say so.

The allowance (first order, worst case over the signs): with :math:`D = \frac1n\sum_{|r_i| < 1/w_{\max}} z_i
(\operatorname{sign}(r_i) - \psi(r_i))` and the IRLS map's derivative :math:`H \approx K_h/h` (the sandwich's
bread, :math:`h \ge 1/w_{\max}`), :math:`\theta_{LAD} - \theta \approx -H^{-1}D`; by Cauchy-Schwarz,
:math:`|e_j^\top H^{-1}D| \le \sqrt{u^\top K_h u}` with :math:`u = H^{-1}e_j`, i.e.
:math:`\sqrt{h\,(H^{-1})_{jj}}`. On RAND HIE (ranges, no noise) it is 12 to 14 times the gap on the
coefficients where the gap is largest (``idp``, ``lpi``), far more where the smoothed fit is already near LAD's
(the signs within the knot do not all align): the entries are wide, honestly, and the strong ones still exclude 0.

Everything here reads released numbers and public values only.
"""

import numpy as np

__all__ = ["KNOT_TEST", "knot_allowance", "knot_lines"]

#: The released score's norm over its root mean square at LAD's fit beyond which the knot is said to have moved
#: the fit (Chebyshev: a chance of at most 1/9 at LAD's fit; the released norm on RAND HIE is over 30 times it).
KNOT_TEST = 3.0


def knot_allowance(sampling, floored_inverse, cov):
    """``(allowance, found, ratio)``: per coordinate, how far LAD's fit may lie from the IRLS fit (zeros where the
    score check does not find the knot's move), whether it did, and the released score's norm over its size at LAD's
    fit; ``(None, None, None)`` without a released score. ``cov``: the iterations' noise, which moves the score by
    about ``H`` times it (first order)."""
    if sampling is None or sampling.get("sign") is None:
        return None, None, None
    norm = float(np.linalg.norm(sampling["sign"]))
    H = sampling["H"]
    Hinv = floored_inverse(H, sampling["H_floor"])
    null = np.sqrt(sampling["sign_null_sd"] ** 2 + max(float(np.trace(H @ cov @ H.T)), 0.0))
    ratio = float(norm / null) if null > 0 else float("inf")
    if not ratio > KNOT_TEST:
        return np.zeros(Hinv.shape[0]), False, ratio
    return np.sqrt(sampling["h"] * np.maximum(np.diag(Hinv), 0.0)), True, ratio


def knot_lines(found):
    """What the entry's ``covers`` / ``not_covered`` say of the knot: ``(covered, missing)``, one of them ``None``."""
    if found:
        return ("the w_max knot's smoothing against LAD (the sign-score release found it: a worst-case first-order "
                "allowance on both sides)"), None
    if found is None:
        return None, ("the w_max knot's smoothing (not checked: no sign-score release, or the sampling releases "
                      "within their noise; the exact LAD or L_p fit can lie outside where many residuals are within "
                      "1/w_max, as with a response of few distinct values)")
    return None, ("the w_max knot's smoothing against LAD below the sign-score check's threshold (about "
                  f"{KNOT_TEST:g} times the score's sampling size)")

