"""How far the parts besides the noise move a released matrix: PCA's bound for its components' eigengaps.

The centre's noise and clipping bias, what clipping removed and sampling each move the released
second moment; :func:`bias_perturbation` bounds their spectral norm together, so that PCA calls a
component unidentified where its eigengap is below twice it (Davis-Kahan), however stable it is
across redrawn noise. Released values only: no rows.
"""

import numpy as np

from .error_budget import release_centre_bias

__all__ = ["bias_perturbation"]


def bias_perturbation(release, parts, eigenvalues, target, level):
    r"""A bound on how far the centre, clipping and sampling move the released matrix (spectral norm, original units).

    Davis-Kahan: a component whose eigengap is below twice this can turn arbitrarily when those
    parts are taken away, however stable it is across redrawn *noise*. The centre adds
    :math:`(\beta - e)(\beta - e)^\top`, :math:`e` its noise, of norm about :math:`s^2 \sum_j s_j^2`, and
    :math:`\beta` its own clipping bias (:func:`release_centre_bias`, :math:`|\beta_j| \le B_j`), which adds at most
    :math:`\|\beta\|^2 + 2\|\beta\|\|e\|` to that norm (``level``: its bound's level; ``None``: not counted here,
    where draws carry it); clipping
    removed a positive semi-definite matrix whose trace is surely at least the released trace's lower end
    (one-sided, at the level; a loss within the release's noise is not counted here: for elliptical rows
    clipping shrinks along the components without turning them, and counting that noise would call
    every component of a Gaussian table unidentified); sampling moves
    the top eigenvalue by about :math:`\lambda_1 \sqrt{2/n}` (normal theory, ``target="population"``).
    """
    scales = np.ones(release.n_features) if release.column_scale is None else np.asarray(release.column_scale)
    s = parts["centre_noise_scale"] or 0.0
    centre = 2.0 * s**2 * float(np.sum(scales**2))  # twice its mean: a bound that holds most of the time
    bound = None if s == 0 or level is None else release_centre_bias(release, level)
    if bound is not None:  # ||beta||^2 + 2 ||beta|| ||e||, ||e|| at the square root of the bound above
        beta = float(np.linalg.norm(bound * scales))
        centre += beta**2 + 2.0 * beta * np.sqrt(centre)
    clip = parts["clipping"]["trace_lost_surely"] if isinstance(parts["clipping"], dict) else 0.0
    sampling = float(np.max(eigenvalues)) * np.sqrt(2.0 / float(release.n)) if target == "population" else 0.0
    return centre + clip + sampling
