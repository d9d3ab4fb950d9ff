"""Exact moment sums of sparse rows (``scipy.sparse``): one-hot documents, indicators, counts.

A row with ``k`` non-zeros contributes ``k^2`` entries to ``X^T X`` and ``k^3`` to the
third moment, so the sums cost ``O(n k^3)`` instead of the dense ``O(n d^3 / 2)``: the
capeAGN topic model at ``D = 50`` (rows of ``3D = 150`` columns, 3 non-zeros) takes
seconds instead of minutes per site. The clipping and the sensitivity are those of the
dense path (:func:`~dpmoments.moments.accumulate_moments`), entry for entry.

Centring is refused: subtracting a centre makes every row dense.
"""

import numpy as np

from .._validation import check_positive, check_vector
from .sums import MomentSums, expand_third, third_rows
from .bounds import _clip_responses

__all__ = ["sparse_moment_sums", "checked_csr"]

# Entries of the (rows, k, k, k) work arrays of one block of the sparse third moment.
_BLOCK = 1 << 21
# Rows with more than this fraction of non-zeros go through the dense (BLAS) product.
_DENSE_FRACTION = 0.3


def sparse_moment_sums(X, y=None, *, row_norm=None, entry_bound=None, response_bound=None, third=False):
    """:func:`~dpmoments.moments.accumulate_moments` for a ``scipy.sparse`` matrix ``X``.

    Parameters
    ----------
    X : scipy.sparse matrix or array of shape (n_samples, n_features)
    y : array-like of shape (n_samples,), optional
    row_norm, entry_bound, response_bound, third
        As in :func:`~dpmoments.moments.accumulate_moments` (exactly one bound).

    Returns
    -------
    MomentSums
        Equal, up to rounding, to the sums of the dense ``X.toarray()``.

    Raises
    ------
    ValueError
        Neither or both bounds; a NaN or infinite entry (its row and column are named);
        no rows; ``y`` of the wrong length or without ``response_bound``.

    Privacy
    -------
    Exact statistics of private data, as the dense path: every row is clipped here to the public
    bound, so the sensitivities of :func:`~dpmoments.moments.accumulate_moments` hold: a record
    changes ``xtx`` by at most ``sqrt(2) R^2`` (Frobenius) under replace-one and ``R^2`` under
    add-remove (``R = row_norm``, or ``entry_bound * sqrt(d)``). Never publish these sums; pass
    the data to a ``release_*`` function.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import sparse
    >>> X = sparse.csr_array(np.array([[3.0, 0.0, 4.0], [0.0, 0.5, 0.0]]))
    >>> round(float(sparse_moment_sums(X, row_norm=1.0, third=True).third[0, 0, 2]), 12)  # 0.6 * 0.6 * 0.8
    0.288
    """
    X = checked_csr(X)
    if (row_norm is None) == (entry_bound is None):
        raise ValueError("Exactly one of 'row_norm' (an L2 bound on each row) and 'entry_bound' (a bound on each "
                         f"entry) must be given; got row_norm={row_norm!r}, entry_bound={entry_bound!r}.")
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    if row_norm is not None:
        X.data *= _row_scale(X.data, rows, X.shape[0], check_positive(row_norm, "row_norm"))[rows]
    else:
        bound = check_positive(entry_bound, "entry_bound")
        np.clip(X.data, -bound, bound, out=X.data)
    xty = yty = None
    if y is not None:
        if response_bound is None:
            raise ValueError("'y' was given, so 'response_bound' (a public bound on |y|) is required; "
                             "got response_bound=None.")
        yc = _clip_responses(check_vector(y, "y", length=X.shape[0]), check_positive(response_bound, "response_bound"))
        xty, yty = X.T @ yc, float(yc @ yc)
    return MomentSums(n=X.shape[0], n_features=X.shape[1], xtx=(X.T @ X).toarray(), xty=xty, yty=yty,
                      third=_sparse_third(X) if third else None,
                      row_norm=None if row_norm is None else float(row_norm),
                      entry_bound=None if entry_bound is None else float(entry_bound),
                      response_bound=None if y is None else float(response_bound))


def checked_csr(X):
    """A float64 CSR copy with canonical indices; a NaN/inf is named by row and column."""
    if X.ndim != 2:
        raise ValueError(f"'X' must be 2-D with shape (n_samples, n_features); got shape {X.shape}.")
    if X.dtype.kind == "c":
        raise ValueError(f"'X' must hold real numbers; got dtype {X.dtype}.")
    from scipy import sparse

    X = sparse.csr_array(X, dtype=np.float64, copy=True)
    X.sum_duplicates()
    if X.shape[0] == 0:
        raise ValueError("The data have no rows (n = 0): at least one row is needed to accumulate moments.")
    if X.shape[1] == 0:
        raise ValueError(f"'X' has 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    bad = np.flatnonzero(~np.isfinite(X.data))
    if bad.size:
        row = int(np.searchsorted(X.indptr, bad[0], side="right") - 1)
        raise ValueError(f"'X' has a NaN or infinite value at row {row}, column {int(X.indices[bad[0]])}; "
                         "remove or impute it first.")
    return X


def _row_scale(data, rows, n, bound):
    """``min(1, bound / ||x_i||)`` per row, safe for entries whose squares overflow."""
    peak = np.zeros(n)
    np.maximum.at(peak, rows, np.abs(data))
    safe = np.where(peak > 0, peak, 1.0)
    norms = safe * np.sqrt(np.bincount(rows, (data / safe[rows]) ** 2, minlength=n))
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, bound / norms)  # rows inside the ball are multiplied by exactly 1


def _sparse_third(X):
    """``sum_i x_i (x) x_i (x) x_i`` from the non-zeros, rows grouped by their count of non-zeros."""
    n, d = X.shape
    counts = np.diff(X.indptr)
    out = np.zeros(d ** 3)
    dense_rows = []
    for k in np.unique(counts[counts > 0]):
        rows = np.flatnonzero(counts == k)
        if k > _DENSE_FRACTION * d:
            dense_rows.append(rows)
            continue
        pos = X.indptr[rows][:, None] + np.arange(k)
        idx, val = X.indices[pos].astype(np.int64), X.data[pos]
        step = max(1, _BLOCK // int(k) ** 3)
        for lo in range(0, rows.size, step):
            i, v = idx[lo:lo + step], val[lo:lo + step]
            flat = (i[:, :, None, None] * d + i[:, None, :, None]) * d + i[:, None, None, :]
            w = v[:, :, None, None] * v[:, None, :, None] * v[:, None, None, :]
            out += np.bincount(flat.ravel(), w.ravel(), minlength=d ** 3)
    T = out.reshape(d, d, d)
    if dense_rows:
        rows = np.concatenate(dense_rows)
        step = max(1, _BLOCK // d)
        r3 = sum(third_rows(X[rows[lo:lo + step]].toarray()) for lo in range(0, rows.size, step))
        T += expand_third(r3, d)
    return T
