"""Graphs from a precision matrix, and the graphical lasso on a release: post-processing, no privacy cost.

Partial correlations, the edge set of a fitted precision matrix, a release scaled to a
correlation matrix (variances floored at their noise level), and the graphical lasso fitted
on a release with each penalty solved once (a fixed penalty, eBIC or a target edge count;
the path kept for an ROC curve). None of them reads data: they take a
:class:`~dpmoments.moments.Release` or a fitted matrix. They import no scikit-learn, so the
command line pays nothing for them.
"""

import warnings

import numpy as np

__all__ = ["partial_correlations", "edge_matrix", "standardized", "standardized_checked", "glasso"]


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
    scale = np.sqrt(np.abs(np.diag(precision)))
    scale[scale == 0] = 1.0
    P = -precision / np.outer(scale, scale)
    np.fill_diagonal(P, 1.0)
    return P


def edge_matrix(precision, threshold):
    """Boolean (d, d) edges: |partial correlation| > threshold (any non-zero when threshold is None)."""
    E = np.abs(precision) > 1e-8 if threshold is None else np.abs(partial_correlations(precision)) > threshold
    np.fill_diagonal(E, False)
    return E | E.T


def glasso(release, alpha, max_edges=None, n_alphas=20, alpha_floor="noise", roc=False, n_draws=0, level=0.9,
           rng=None):
    """Fit the graphical lasso on a release, solving each penalty once. Returns (estimator, path precisions).

    A fixed ``alpha`` is one solve. ``"ebic"`` and ``max_edges`` solve the grid once, as a warm-started
    path kept on the estimator (``path_``), which the ROC curve reads. A path is solved for the ROC
    only when ``roc`` asks for one that the estimator did not already solve. ``n_draws`` redrawn
    releases are each solved once more at the chosen penalty (the edges' inclusion frequencies),
    by the same fit: the estimate is never solved twice.
    """
    # PrivateGraphicalLasso's logic without scikit-learn (whose import would cost more than reading most files)
    from .precision import GraphicalLassoFit
    from .selection import alpha_grid
    from ..solvers import graphical_lasso_path

    # epsilon, delta, row_norm: unused by fit_release, the release carries its guarantee
    kw = dict(epsilon=1.0, delta=1e-6, row_norm=1.0, n_draws=n_draws, level=level, rng=rng)
    if max_edges is not None:
        est = GraphicalLassoFit(alpha="edges", max_edges=max_edges, alphas=n_alphas, **kw)
    elif alpha == "ebic":
        est = GraphicalLassoFit(alpha="ebic", alphas=n_alphas, alpha_floor=alpha_floor, **kw)
    else:
        est = GraphicalLassoFit(alpha=alpha, **kw)
    est.fit_release(release)
    if not roc:
        return est, None
    S = est.release_.second_moment  # the projected release the estimator solved on
    grid = alpha_grid(S, n_alphas)
    if est.path_ is not None and np.array_equal(est.path_.alphas, grid):
        return est, est.path_.precisions
    return est, [r.precision for r in graphical_lasso_path(S, grid)]
