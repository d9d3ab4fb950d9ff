r"""Saying when an estimate is noise: signal-to-noise figures and the checks behind the warning.

Every check reads the release (its noise law and its released numbers) and
nothing else, so it is free post-processing. A failed check adds a plain
sentence to the estimator's ``diagnostics_`` and raises a
:class:`~dpmoments.exceptions.NoiseDominatesWarning` with the same sentence;
a report reads ``diagnostics_`` to refuse to present noise as a result.
"""

import math
import warnings

import numpy as np

from ..exceptions import NoiseDominatesWarning

__all__ = ["Diagnostics", "matrix_snr", "variance_noise_level", "largest_noise", "check_matrix", "check_centre",
           "in_data_units"]


class Diagnostics:
    """The failed checks of one fit: ``[{"code": ..., "message": ...}, ...]``, each also warned."""

    def __init__(self, owner):
        self.owner = owner
        self.items = []

    def flag(self, code, message):
        self.items.append({"code": code, "message": message})
        warnings.warn(f"{self.owner}: {message}", NoiseDominatesWarning, stacklevel=4)

    def as_list(self):
        return [dict(item) for item in self.items]


def matrix_snr(M, law):
    r"""Signal-to-noise of a released matrix: :math:`\sqrt{\max(\|M\|_F^2 - E\|E\|_F^2, 0) / E\|E\|_F^2}`.

    ``M`` is the released matrix with the noise's mean removed, so
    :math:`E\|M\|_F^2 = \|S\|_F^2 + E\|E\|_F^2` and the numerator estimates the
    exact matrix's Frobenius norm; the denominator is the noise's expected
    Frobenius norm, ``d`` diagonal and ``d(d-1)`` off-diagonal entries. Below
    1 the noise is larger than the signal. ``inf`` for an exact release.
    """
    d = M.shape[0]
    noise2 = d * law.diagonal_sd**2 + d * (d - 1) * law.sd**2
    if noise2 == 0:
        return math.inf
    signal2 = max(float(np.sum(M * M)) - noise2, 0.0)
    return math.sqrt(signal2 / noise2)


def variance_noise_level(law, d):
    r"""The level below which a released variance is indistinguishable from its noise.

    The largest of ``d`` noise draws of standard deviation ``s`` (a diagonal
    entry's) is about :math:`s\sqrt{2\ln(2d)}`: a released variance below it
    may be pure noise, and dividing by it (standardising, whitening)
    amplifies noise without bound.
    """
    return law.diagonal_sd * math.sqrt(2.0 * math.log(2.0 * d))


def largest_noise(law, m, q=0.95):
    r"""The level the largest of ``m`` independent noise entries' magnitudes stays below with probability ``q``.

    A released entry above it stands out of the noise: under pure noise, no
    entry passes it but with probability ``1 - q``. Gaussian (and, as normal,
    Wishart off-diagonal) entries of sd ``s``:
    :math:`s\,\Phi^{-1}((1 + q^{1/m})/2)`; Laplace of scale ``b``, whose
    magnitude is exponential: :math:`-b\ln(1 - q^{1/m})`. (The typical
    largest, :math:`s\sqrt{2\ln m}`, is passed by pure noise about a quarter
    of the time at ``m`` = 15 to 435.) Wishart ``W_d(k, cI)`` off-diagonal
    entries are ``c`` times a sum of ``k`` products of normals, heavier-tailed
    than a normal of the same sd (:meth:`~dpmoments.mechanisms.laws.Mechanism.largest_magnitude`).
    """
    if m < 1:
        return 0.0
    return law.mechanism.largest_magnitude(m, q, law.scale, law.df)


def in_data_units(level, scale=None, pairs=False):
    """``level`` (of a release of rows standardised by column scales ``scale``) as the data's units quote it.

    A standardised entry ``(i, j)`` is ``s_i s_j`` times smaller than the data's, and so is its noise: a
    diagonal level becomes one per column (``s_j^2 level``), an off-diagonal one (``pairs``) one per pair.
    The flags compare ratios and need none of this; only the number a message quotes does.
    """
    if scale is None:
        return f"{level:.3g}"
    s = np.asarray(scale, dtype=np.float64)
    units = np.outer(s, s)[np.triu_indices(s.size, 1)] if pairs else s**2
    low, high = float(np.min(units)) * level, float(np.max(units)) * level
    if high <= low * (1 + 1e-9):
        return f"{low:.3g}"
    return f"{low:.3g} to {high:.3g} (one per {'pair of columns' if pairs else 'column'}, in the data's units)"


def check_matrix(M, law, diagnostics, what="the released matrix", variances=True, scale=None):
    """Flag a matrix whose noise outweighs its signal and (``variances``) variances below their noise.

    ``M``: the released second moment with the noise's mean removed (of the rows divided by the column
    scales ``scale``, if any: the flags are the same in either units; the quoted levels are the data's).
    Returns the signal-to-noise (:func:`matrix_snr`).
    """
    snr = matrix_snr(M, law)
    if snr < 1.0:
        diagnostics.flag("noise-dominates", f"the noise in {what} is larger than its signal (signal-to-noise "
                                            f"{snr:.2g} < 1): at this budget and sample size its entries are "
                                            "mostly noise.")
    d = M.shape[0]
    level = variance_noise_level(law, d) if variances else 0.0
    below = np.diag(M) < level if level > 0 else np.zeros(d, dtype=bool)
    if below.any():
        quoted = in_data_units(level, None if scale is None else np.asarray(scale)[below])
        diagnostics.flag("variance-below-noise", f"{int(below.sum())} of {d} released variances are below their "
                                                 f"noise level {quoted}: those columns are noise at this budget, "
                                                 "and scaling by them amplifies it.")
    return snr


def _centre_noise_scale(release):
    """The private centre's noise scale: its final mean's, or the last refinement's where that mean cannot reach."""
    scales = {p.label: p.released.get("noise_scale") for p in (release.parts or ())  # a step that found the
              if p.label.endswith("mean") and p.released.get("noise_scale") and not p.released.get("settled")}
    # centre settled did not move it (moments/private_location.py: _settled)
    s = scales.pop("mean", None)
    if not s:
        return s
    last = list(scales.values())[-1] if scales else 0.0
    reach = float(release.row_norm)
    return max(float(s), float(last)) if 3.0 * last * math.sqrt(release.n_features) > reach else s


def check_centre(release, diagnostics):
    r"""Flag released variances made mostly of the private centre's error.

    A second moment about a private mean :math:`\hat m` is the one about the
    exact mean plus :math:`(\hat m - m)(\hat m - m)^\top`: each variance gains
    about :math:`s^2`, the square of the mean's noise scale (its ``"mean"``
    part; at least that, since clipping the mean adds its own bias). Far from
    the origin that can dwarf the data's variance (unit-variance columns
    around 1e6 came out near 1e6, with narrow intervals and no warning): a
    variance below ``10 s^2`` is flagged. Read from the release alone (with
    column scales, both are standardised; the quoted bias is in the data's units).

    A refined location (``"... mean"`` parts before the final ``"mean"``) is
    corrected by the final mean only where its error lies well inside that
    mean's clipping bound ``R``: the final mean moves it by at most ``R``. One
    unlucky bound draw early in the refinement (a bound 1e6 times the data's)
    leaves the last refinement's noise far above ``R``, and the centre off by
    it (a covariance 30-200 times the data's, in 2 of 600 seeded fits at
    epsilon 1): where three sd of that error's norm, ``3 s_L sqrt(d)``, exceed
    ``R``, ``s_L`` is counted as the centre's noise scale.
    """
    s = _centre_noise_scale(release)
    if not s:
        return
    bias = float(s) ** 2
    variances = np.diag(release.second_moment)
    below = variances < 10.0 * bias
    if below.any():
        scale = None if release.column_scale is None else np.asarray(release.column_scale)[below]
        diagnostics.flag("centre-noise", f"{int(below.sum())} of {variances.size} released variances are less than "
                                         "10 times the bias the private centre's noise adds to each (about "
                                         f"{in_data_units(bias, scale)}, its noise scale squared): they measure "
                                         "that error more than the data; give a public centre, or "
                                         "CenterBudget(prior=...) near the data, or a larger epsilon.")
