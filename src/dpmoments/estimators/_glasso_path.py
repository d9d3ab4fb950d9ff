"""The graphical lasso's penalty path as the estimator keeps it: :class:`GlassoPath` (stored sparse, read dense)."""

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional

import numpy as np
from scipy.sparse import issparse, triu

__all__ = ["GlassoPath", "SPARSE_PATH_FROM"]

# An off-diagonal |Θ_ij| above this is an edge (the fast solver's zeros are exact).
_EDGE_TOL = 1e-8
# From this many features a penalty path runs sparse=True (benchmarks/results/glasso.md, CPU time against one
# solve: sparse 4.8x, 4.2x, 5.5x at p = 500, 1000, 2000 against the dense path's 5.1x, 4.7x, 6.9x; at p = 100
# the dense path is faster, 4.5x against 6.4x, and it keeps its duals).
SPARSE_PATH_FROM = 500


def _with_dual(result):
    """A sparse path keeps no dual: the redraws' warm start gets one, inverted once (not once per draw)."""
    W = np.linalg.inv(result.precision)
    return dataclasses.replace(result, covariance=0.5 * (W + W.T))


def _dense(result):
    """A solution whose precision is dense (a sparse path returns CSR)."""
    P = result.precision
    return dataclasses.replace(result, precision=P.toarray()) if issparse(P) else result


@dataclass(frozen=True)
class GlassoPath:
    """The graphical-lasso solutions along a grid of penalties, as solved once by the estimator.

    Attributes
    ----------
    alphas : ndarray of shape (n_alphas,)
        The penalties, largest first.
    sparse_precisions : tuple of scipy.sparse CSR matrices of shape (n_features, n_features)
        The solution at each penalty, as stored (its non-zeros only: 20 dense
        solutions at p = 5000 would take 4 GB).
    precisions : sequence of ndarray of shape (n_features, n_features)
        The same solutions, each made dense when it is read.
    n_edges : ndarray of int
        Off-diagonal pairs with ``|Θ_ij| > 1e-8`` at each penalty.
    objective : ndarray
        The graphical-lasso objective reached at each penalty.
    ebic : ndarray or None
        The extended BIC at each penalty (``alpha="ebic"``), else ``None``.
    chosen : int
        The index of the penalty the estimator kept.
    """

    alphas: np.ndarray
    sparse_precisions: tuple
    n_edges: np.ndarray
    objective: np.ndarray
    ebic: Optional[np.ndarray]
    chosen: int

    @property
    def precisions(self):
        return _DensePrecisions(self.sparse_precisions)


class _DensePrecisions(Sequence):
    """Sparse solutions read back dense, one at a time."""

    def __init__(self, stored):
        self._stored = stored

    def __len__(self):
        return len(self._stored)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [P.toarray() for P in self._stored[i]]
        return self._stored[i].toarray()


def _n_edges(precision):
    upper = triu(precision, 1).data if issparse(precision) else np.triu(precision, 1)
    return int(np.count_nonzero(np.abs(upper) > _EDGE_TOL))
