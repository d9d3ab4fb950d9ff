"""Choosing a penalty from a release alone (free post-processing)."""

import numpy as np

from .._validation import check_int

__all__ = ["alpha_grid", "ebic"]


def alpha_grid(S, alphas=20, ratio=1e-2):
    """Log-spaced penalties below the largest off-diagonal ``|S_ij|`` of a released matrix.

    Above that value the graphical lasso solution is diagonal. ``alphas`` may
    be a count or explicit values (returned sorted, largest first).
    """
    if np.ndim(alphas) == 0:
        count = check_int(alphas, "alphas", minimum=1)
        off = np.abs(S - np.diag(np.diag(S)))
        top = float(off.max()) if off.size > 1 and off.max() > 0 else float(np.abs(np.diag(S)).max())
        return np.geomspace(top, top * ratio, count)
    grid = np.asarray(alphas, dtype=float)
    if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid <= 0):
        raise ValueError(f"'alphas' must be a count or a non-empty 1-D array of positive numbers; got {alphas!r}.")
    return np.sort(grid)[::-1]


def ebic(S, precision, n_samples, gamma=0.5, tol=1e-10):
    r"""Extended BIC of a precision matrix against a (released) second moment.

    .. math::

        \mathrm{eBIC}_\gamma = n\,[\mathrm{tr}(S\Theta) - \log\det\Theta] + |E|\log n + 4\gamma|E|\log p

    with :math:`|E|` the number of non-zero off-diagonal pairs (Foygel &
    Drton 2010). Computed from the release only: free post-processing.
    """
    p = precision.shape[0]
    sign, logdet = np.linalg.slogdet(precision)
    if sign <= 0:
        return np.inf
    edges = int(np.count_nonzero(np.abs(np.triu(precision, 1)) > tol))
    fit = n_samples * (float(np.sum(S * precision)) - logdet)
    return fit + edges * np.log(n_samples) + 4.0 * gamma * edges * np.log(p)
