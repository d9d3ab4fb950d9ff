r"""Scaling a released second moment to a correlation matrix, without dividing by noise.

:math:`D^{-1/2}\tilde S D^{-1/2}` divides entry ``(i, j)`` and its noise by
:math:`s_i s_j`, the square roots of the released variances. A released
variance at or below its noise level is (mostly) noise: dividing by it, or by
a tiny clipped value, blows the noise up without bound (on log-scaled data
whose columns vary little, the eBIC's noise floor reached 1e10 and the graph
was empty, silently). Here every variance is floored at its noise level
(:func:`~dpmoments.estimators.diagnostics.variance_noise_level`) first, and a
:class:`~dpmoments.exceptions.NoiseDominatesWarning` names how many were.
"""

import dataclasses

import numpy as np

from .diagnostics import Diagnostics, variance_noise_level
from .uncertainty import noise_law

__all__ = ["standardize_release"]


def standardize_release(release, owner="standardize"):
    """The release scaled to a correlation matrix, variances floored at their noise level.

    Free post-processing. Entry ``(i, j)`` and its noise are divided by
    ``s_i s_j`` with ``s_i^2 = max(released variance less the noise's mean,
    noise level)``, so ``noise_scale`` becomes the largest off-diagonal noise
    scale of the scaled matrix (the eBIC grid's noise floor reads it). Both
    the floor and the count of floored variances are recorded in
    ``postprocessing``.

    Parameters
    ----------
    release : Release
        With a ``second_moment``.
    owner : str
        Who is warning (the command or estimator), for the warning's text.

    Returns
    -------
    Release
    """
    S = release.second_moment
    if S is None:
        raise ValueError("'release' has no second moment to standardise.")
    law = noise_law(release)
    d = S.shape[0]
    level = variance_noise_level(law, d)
    variances = np.diag(S) - law.diagonal_mean
    low = variances < level
    if low.any():
        Diagnostics(owner).flag("variance-below-noise", f"{int(low.sum())} of {d} released variances are below "
                                                        f"their noise level {level:.3g} and were floored at it "
                                                        "before scaling to correlations: those columns are noise "
                                                        "at this budget.")
    scale = np.sqrt(np.maximum(variances, max(level, 1e-12)))
    inverse = 1.0 / np.outer(scale, scale)
    off = inverse[~np.eye(d, dtype=bool)]
    noise_scale = release.noise_scale * float(off.max()) if off.size else release.noise_scale
    step = f"scaled-to-correlation(variance floor={level:.3g}, floored={int(low.sum())})"
    return dataclasses.replace(release, second_moment=S * inverse, noise_scale=noise_scale,
                               postprocessing=release.postprocessing + (step,))
