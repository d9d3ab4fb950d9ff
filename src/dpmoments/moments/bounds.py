"""Public bounds enforced on the data: the one place rows are clipped.

Every sensitivity in the library assumes a bound on each record that was
stated *before* looking at the data: an L2 bound on each row
(``||x_i||_2 <= row_norm``), an entrywise bound (``|X_ij| <= bound``, the
convention of Lei et al. 2018) or a bound on each response
(``|y_i| <= bound``). The functions here force the data into such a bound.
They never derive a bound from the data (see ``docs/algorithms.md`` §0.6: rescaling
by the data's own maximum norm is a data-dependent, unprivatised statistic).

None of them reports how many rows were clipped: that count is itself a
function of the private data.
"""

import numpy as np

from .._validation import check_data, check_positive, check_vector

__all__ = ["clip_rows", "clip_entries", "clip_responses"]


def clip_rows(X, row_norm):
    r"""Scale each row into the L2 ball of radius ``row_norm``.

    .. math::

        x_i \mapsto x_i \cdot \min\left(1, \frac{R}{\lVert x_i \rVert_2}\right)

    Rows already inside the ball (including rows of norm 0) are returned
    unchanged, bit for bit.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Finite data.
    row_norm : float
        The public radius ``R > 0``.

    Returns
    -------
    X_clipped : ndarray of shape (n_samples, n_features), float64
        A new array; ``X`` is never modified. Every row has norm at most
        ``row_norm`` (up to a relative rounding error of about ``1e-15``).

    Privacy
    -------
    Clipping is applied to each record on its own, so after it every record
    satisfies ``||x_i||_2 <= R`` whatever the data: the sensitivities of
    ``docs/algorithms.md`` §0.2 (with ``R`` in place of 1) hold. The function does
    not report how many rows were clipped, since that count is private.

    Examples
    --------
    >>> import numpy as np
    >>> clip_rows(np.array([[3.0, 4.0], [0.3, 0.4]]), row_norm=1.0)
    array([[0.6, 0.8],
           [0.3, 0.4]])
    """
    data = check_data(X, name="X", min_samples=0)
    row_norm = check_positive(row_norm, "row_norm")
    out = _clip_rows(data, row_norm)
    if isinstance(X, np.ndarray) and np.may_share_memory(out, X):
        out = out.copy()
    return out


def _clip_rows(X, row_norm):
    """``clip_rows`` without validation or copy, for chunks already checked.

    Returns ``X`` itself when no row is outside the ball (never modifies it).
    """
    norms = _row_norms(X)
    outside = norms > row_norm
    if not outside.any():
        return X
    scale = np.divide(row_norm, norms, out=np.ones_like(norms), where=outside)
    return X * scale[:, None]


def _row_norms(X):
    """L2 norm of each row, without overflow for rows of huge entries."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    big = ~np.isfinite(norms)
    if np.any(big):
        rows = X[big]
        peak = np.max(np.abs(rows), axis=1)
        scaled = rows / peak[:, None]
        norms[big] = peak * np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
    return norms


def clip_entries(X, bound):
    r"""Clip every entry to ``[-bound, bound]``.

    .. math::

        X_{ij} \mapsto \max(-B, \min(B, X_{ij}))

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Finite data.
    bound : float
        The public entrywise bound ``B > 0`` (Lei et al. use ``B = 1``).

    Returns
    -------
    X_clipped : ndarray of shape (n_samples, n_features), float64
        A new array; ``X`` is never modified.

    Privacy
    -------
    After clipping, ``|X_ij| <= B`` for every entry whatever the data, so a
    row has ``||x_i||_2 <= B sqrt(d)`` and ``||x_i||_1 <= B d``: the bound
    used by the model-selection mechanism of Lei et al. (2018).

    Examples
    --------
    >>> import numpy as np
    >>> clip_entries(np.array([[2.0, -0.5], [-3.0, 0.25]]), bound=1.0)
    array([[ 1.  , -0.5 ],
           [-1.  ,  0.25]])
    """
    X = check_data(X, name="X", min_samples=0)
    bound = check_positive(bound, "bound")
    return _clip_entries(X, bound)


def _clip_entries(X, bound):
    return np.clip(X, -bound, bound)


def clip_responses(y, bound):
    r"""Clip every response to ``[-bound, bound]``.

    .. math::

        y_i \mapsto \max(-r, \min(r, y_i))

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Finite responses.
    bound : float
        The public bound ``r > 0``.

    Returns
    -------
    y_clipped : ndarray of shape (n_samples,), float64
        A new array; ``y`` is never modified.

    Privacy
    -------
    After clipping, ``|y_i| <= r`` whatever the data: the response bound of
    Park & Welling (2016) (``r = 1``) and Lei et al. (2018).

    Examples
    --------
    >>> import numpy as np
    >>> clip_responses(np.array([5.0, -0.5, -2.0]), bound=1.0)
    array([ 1. , -0.5, -1. ])
    """
    y = check_vector(y, name="y")
    bound = check_positive(bound, "bound")
    return _clip_responses(y, bound)


def _clip_responses(y, bound):
    return np.clip(y, -bound, bound)
