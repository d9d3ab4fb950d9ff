r"""The ``w_max`` knot's smoothing: whether the IRLS fit is not LAD's, from releases alone.

IRLS with the largest weight :math:`w_{\max}` solves :math:`\frac1n\sum_i z_i\psi(r_i) = 0`,
:math:`\psi(r) = \operatorname{clip}(w_{\max} r, -1, 1)`, not LAD's :math:`\frac1n\sum_i z_i\operatorname{sign}(r_i)
\ni 0`. The two differ only on the rows with :math:`|r_i| < 1/w_{\max}`, by at most 1 each. Where the response
has a density at the fit, the difference is second order and the intervals hold LAD's value (the simulations).
Where many residuals sit within the knot (a response with a few distinct values, such as RAND HIE's ``lncoins``,
five of them: 69% of the residuals within the knot), the IRLS fit is a smoothed one, its intervals are about
it, and LAD's own fit (a vertex: exact zeros) lies outside them (0.31 of 48 'excludes 0' entries with ranges
at epsilon 4).

The check: LAD's score :math:`S` at the final iterate is released (:mod:`dpmoments.estimators._irls_sampling`).
Where the fit is LAD's up to sampling, it is about :math:`\sqrt{E\|z\|^2/n}` in norm (bounded from the released
:math:`\operatorname{tr}V + \operatorname{tr}K_h`), plus the zero residuals' terms (:math:`dR/n` at most) and its
noise (together ``sign_null_sd``); the private iterate's own noise (covariance :math:`C`) moves it by about
:math:`H` times that error, :math:`\operatorname{tr}(HCH^\top)` more in square. A released norm over ``KNOT_TEST``
times the root of the sum says the knot moved the fit: the entries then say that LAD's own fit can lie outside
their intervals. Measured ratios: RAND HIE with ranges at epsilon 4, 7 to 10; Laplace and t_3 errors 0.3 to 1.5
(5,000 to 300,000 rows, epsilon 4 to infinity).

What the check does not do: widen the intervals. A first-order worst-case allowance exists (with
:math:`D = \frac1n\sum_{|r_i| < 1/w_{\max}} z_i(\operatorname{sign}(r_i) - \psi(r_i))` and :math:`H \approx K_h/h`,
:math:`|e_j^\top H^{-1}D| \le \sqrt{h\,(H^{-1})_{jj}}` by Cauchy-Schwarz) and held RAND HIE's LAD fit, but it is
12 to 14 times the gap where the gap is largest and it fires on skewed continuous errors too (exponential errors,
30,000 rows, epsilon 4: widths 0.038 -> 2.2, slopes that were covered made useless); the one-step estimate
:math:`H^{-1}S` that is right for smooth errors has the wrong sign on RAND HIE. So the entries say what they leave
out instead, with the check's number, and the warning names the remedy (a larger ``w_max``).

Everything here reads released numbers and public values only.
"""

import math

import numpy as np

__all__ = ["KNOT_TEST", "knot_check", "knot_lines"]

#: The released score's norm over its root mean square at LAD's fit beyond which the knot is said to have moved
#: the fit (Chebyshev: a chance of at most 1/9 at LAD's fit; RAND HIE with ranges at epsilon 4: 7 to 10).
KNOT_TEST = 3.0


def knot_check(sampling, cov):
    """``(found, ratio)``: whether the released LAD score is over ``KNOT_TEST`` times its size where the fit is
    LAD's up to sampling and noise, and that ratio; ``(None, None)`` without a released score. ``cov``: the
    iterations' noise, which moves the score by about ``H`` times it (first order)."""
    if sampling is None or sampling.get("sign") is None:
        return None, None
    H = sampling["H"]
    null = math.sqrt(sampling["sign_null_sd"] ** 2 + max(float(np.trace(H @ cov @ H.T)), 0.0))
    ratio = float(np.linalg.norm(sampling["sign"])) / null if null > 0 else math.inf
    return ratio > KNOT_TEST, ratio


def knot_lines(found, ratio=None):
    """What the entry's ``not_covered`` says of the knot (``None`` where the check ran and did not find it)."""
    if found:
        return ("the w_max knot's smoothing, which the sign-score release found (LAD's score at the fit is "
                f"{ratio:.3g} times its size at LAD's fit): LAD's own fit can lie outside these intervals (a response "
                "with few distinct values); a larger w_max shrinks the knot")
    if found is None:
        return ("the w_max knot's smoothing (not checked: no sign-score release, or the sandwich's releases within "
                "their noise; the exact LAD or L_p fit can lie outside where many residuals are within 1/w_max, as "
                "with a response of few distinct values)")
    return (f"the w_max knot's smoothing below the sign-score check's threshold ({KNOT_TEST:g} times the score's "
            "size where the fit is LAD's)")
