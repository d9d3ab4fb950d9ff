"""Graphs from a precision matrix: post-processing, no privacy cost.

Partial correlations, the edge set of a fitted precision matrix (any non-zero entry of a
sparse estimate; an absolute partial correlation above :data:`RIDGE_THRESHOLD` of a dense
one), and a release scaled to a correlation matrix (variances floored at their noise level).
None of them reads data: they take a :class:`~dpmoments.moments.Release` or a fitted matrix.
They import no scikit-learn, so the command line pays nothing for them. The graphical lasso
fitted on a release, with its penalty path, is :func:`dpmoments.estimators.glasso.glasso`.
"""

import warnings

import numpy as np

from .model_defaults import RIDGE_THRESHOLD

__all__ = ["partial_correlations", "edge_matrix", "standardized", "standardized_checked", "RIDGE_THRESHOLD"]


def standardized(release):
    """The release scaled to a correlation matrix, variances floored at their noise level (and warned about).

    See :func:`dpmoments.estimators.standardize.standardize_release`.
    """
    return standardized_checked(release)[0]


def standardized_checked(release, owner="precision --standardize"):
    """:func:`standardized`, and its failed checks as ``diagnostics_`` entries (also warned, as before)."""
    from .standardize import standardize_release
    from ..exceptions import NoiseDominatesWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaled = standardize_release(release, owner=owner)
    found = []
    for w in caught:  # passed on as they were; the floor's own sentence becomes a diagnostic
        warnings.warn(w.message, w.category, stacklevel=2)
        if issubclass(w.category, NoiseDominatesWarning):
            found.append({"code": "variance-below-noise", "message": str(w.message).removeprefix(f"{owner}: ")})
    return scaled, found


def partial_correlations(precision):
    """The partial correlations -P_ij / sqrt(P_ii P_jj) of a (d, d) precision matrix P (or a stack, (..., d, d)),
    with 1 on the diagonal."""
    scale = np.sqrt(np.abs(np.diagonal(precision, axis1=-2, axis2=-1)))
    scale = np.where(scale == 0, 1.0, scale)
    P = -precision / (scale[..., :, None] * scale[..., None, :])
    idx = np.arange(P.shape[-1])
    P[..., idx, idx] = 1.0
    return P


def edge_matrix(precision, threshold):
    """Boolean (d, d) edges: ``|partial correlation| > threshold`` (any non-zero when ``threshold`` is None)."""
    E = np.abs(precision) > 1e-8 if threshold is None else np.abs(partial_correlations(precision)) > threshold
    np.fill_diagonal(E, False)
    return E | E.T

