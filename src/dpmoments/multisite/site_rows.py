"""What a site forms from its rows before any statistic: norms, dense blocks, single-topic documents, and the
plan's public map (ranges, then private column scales) of its rows and centre.

Private: everything here runs inside a site, on its own rows; nothing leaves but through
:meth:`~.site.Site.handle`.
"""

import numpy as np
from scipy import sparse

from ..moments.tensor_moments import word_ids
from .column_ranges import map_response, map_rows, row_map

__all__ = ["row_norms", "dense_blocks", "stm_rows", "mapped_rows", "mapped_response", "scaled_center"]


def row_norms(X, center):
    """``||x - c||`` of every row (dense or sparse ``X``)."""
    if sparse.issparse(X):
        return np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    Z = X if center is None else X - center
    return np.sqrt(np.einsum("ij,ij->i", Z, Z))


def dense_blocks(X, rows=4096):
    """``X`` as it is, or a sparse ``X`` as dense blocks of rows (the clipping excess is summed densely)."""
    if not sparse.issparse(X):
        return X
    return (X[i:i + rows].toarray() for i in range(0, X.shape[0], rows))


def stm_rows(ids, vocabulary_size):
    """Three-word documents as sparse rows ``(x1, x2, x3)`` in ``{0,1}^{3D}`` (norm exactly ``sqrt(3)``)."""
    ids = np.asarray(ids)
    if ids.dtype.kind == "f" and np.all(ids == np.round(ids)):  # word ids read from a text file
        ids = ids.astype(np.int64)
    ids, D = word_ids(ids, vocabulary_size)
    n = ids.shape[0]
    return sparse.csr_array((np.ones(3 * n), (ids + np.arange(3) * D).ravel(), np.arange(0, 3 * n + 1, 3)),
                            shape=(n, 3 * D))


def mapped_rows(X, plan, cache):
    """``X`` with the plan's public ranges applied, then divided by its chosen column scales (where it has them),
    kept in ``cache`` for the plan's later steps."""
    ranges, scale = getattr(plan, "ranges", None), getattr(plan, "chosen_scale", None)
    if ranges is None and scale is None:
        return X
    key = ("mapped rows", ranges, scale, None if ranges is None else row_map(plan))
    if key not in cache:
        Z = X if ranges is None else map_rows(X, ranges, row_map(plan))
        cache[key] = Z if scale is None else Z / np.asarray(scale)
    return cache[key]


def mapped_response(y, plan):
    """``y`` mapped by the plan's public ``response_range`` (model selection, IRLS), or as it is."""
    options = dict(getattr(plan, "options", ()))
    span = options.get("response_range")
    if span is None or y is None:
        return y
    return map_response(y, span, centred=plan.analysis != "regress" or options.get("intercept") is not None)


def scaled_center(plan):
    """The plan's centre in the units of :func:`mapped_rows` (divided by the chosen scales), or ``None``."""
    if plan.center is None:
        return None
    scale = getattr(plan, "chosen_scale", None)
    return np.asarray(plan.center) / (1.0 if scale is None else np.asarray(scale))

