"""The graphical lasso fitted on a release, each penalty solved once, with the path an ROC curve reads.

Post-processing of a :class:`~dpmoments.moments.Release`: no privacy cost, no data read. Kept
apart from :mod:`.graph` (which the estimators' summaries use) because it builds the estimator.
"""

import numpy as np

__all__ = ["glasso"]


def glasso(release, alpha, max_edges=None, n_alphas=20, alpha_floor="noise", roc=False, n_draws=0, level=0.9,
           rng=None, target="population"):
    """Fit the graphical lasso on a release, solving each penalty once. Returns (estimator, path precisions).

    A fixed ``alpha`` is one solve. ``"ebic"`` and ``max_edges`` solve the grid once, as a warm-started
    path kept on the estimator (``path_``), which the ROC curve reads. A path is solved for the ROC
    only when ``roc`` asks for one that the estimator did not already solve. ``n_draws`` redrawn
    releases are each solved once more at the chosen penalty (the edges' inclusion frequencies),
    by the same fit: the estimate is never solved twice. The draws carry every part of the error
    (``target``: the population's or these rows' value; ``estimators/error_draws.py``).
    """
    # PrivateGraphicalLasso's logic without scikit-learn (whose import would cost more than reading most files)
    from .precision import GraphicalLassoFit
    from .selection import alpha_grid
    from ..solvers import graphical_lasso_path

    # epsilon, delta, row_norm: unused by fit_release, the release carries its guarantee
    kw = dict(epsilon=1.0, delta=1e-6, row_norm=1.0, n_draws=n_draws, level=level, rng=rng, target=target)
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
