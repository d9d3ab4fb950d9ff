"""The exact moment sums of clipped rows, and how partial sums merge.

Both the dense streaming pass (:mod:`dpmoments.moments.accumulate`) and the
sparse one (:mod:`dpmoments.moments.sparse_sums`) produce a :class:`MomentSums`;
the third moment is accumulated on its upper-triangle pairs by
:func:`third_rows` and expanded once by :func:`expand_third`.
"""

import dataclasses
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._validation import check_int

__all__ = ["MomentSums", "third_rows", "expand_third"]

# Rows per sub-block of the third-moment product: keeps its (rows, d(d+1)/2)
# work array near 16 MiB whatever the chunk size.
_THIRD_BLOCK_ELEMENTS = 1 << 21


@dataclass(frozen=True, eq=False)
class MomentSums:
    """Exact sums of moments of clipped rows (no noise, not normalised).

    Attributes
    ----------
    n : int
        Number of rows summed.
    n_features : int
        ``d``.
    xtx : ndarray of shape (d, d)
        ``sum_i x_i x_i^T`` over the clipped rows; exactly symmetric.
    xty : ndarray of shape (d,) or None
        ``sum_i x_i y_i`` over clipped rows and clipped responses.
    yty : float or None
        ``sum_i y_i^2`` over clipped responses.
    third : ndarray of shape (d, d, d) or None
        ``sum_i x_i (x) x_i (x) x_i``; symmetric up to rounding (symmetrise it
        before adding symmetric noise, see ``symmetry.symmetrise_tensor``).
    row_norm, entry_bound, response_bound : float or None
        The public bounds that were enforced (one of ``row_norm`` /
        ``entry_bound`` is set by ``accumulate_moments``). ``merge`` refuses
        sums made under different bounds.
    center : ndarray of shape (d,) or None
        The public centre subtracted from every row before clipping.

    Privacy
    -------
    These are the *exact* statistics of private data: never publish them.
    Pass them to a ``release_*`` function, which adds calibrated noise.
    """

    n: int
    n_features: int
    xtx: np.ndarray
    xty: Optional[np.ndarray] = None
    yty: Optional[float] = None
    third: Optional[np.ndarray] = None
    row_norm: Optional[float] = None
    entry_bound: Optional[float] = None
    response_bound: Optional[float] = None
    center: Optional[np.ndarray] = None

    def __post_init__(self):
        object.__setattr__(self, "n", check_int(self.n, "n", minimum=0))
        d = check_int(self.n_features, "n_features", minimum=1)
        object.__setattr__(self, "n_features", d)
        shapes = {"xtx": (d, d), "xty": (d,), "third": (d, d, d), "center": (d,)}
        for name, shape in shapes.items():
            arr = getattr(self, name)
            if arr is None:
                continue
            arr = np.array(arr, dtype=np.float64)
            if arr.shape != shape:
                raise ValueError(f"'{name}' must have shape {shape} for n_features={d}; got {arr.shape}.")
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        if (self.xty is None) != (self.yty is None):
            raise ValueError("'xty' and 'yty' must both be given or both be None.")
        if self.yty is not None:
            object.__setattr__(self, "yty", float(self.yty))

    def merge(self, other):
        """Sums over the union of two disjoint sets of rows.

        Parameters
        ----------
        other : MomentSums
            Made with the same ``n_features``, the same bounds and centre,
            and the same moments present.

        Returns
        -------
        MomentSums
            A new object; neither operand changes. Merging is associative
            and commutative (up to floating-point rounding).

        Examples
        --------
        >>> import numpy as np
        >>> from dpmoments.moments import accumulate_moments
        >>> a = accumulate_moments([np.eye(2)], row_norm=1.0)
        >>> a.merge(a).n
        4
        """
        if not isinstance(other, MomentSums):
            raise TypeError(f"'other' must be a MomentSums; got {type(other).__name__}.")
        if other.n_features != self.n_features:
            raise ValueError(f"Cannot merge moment sums over different features: n_features={self.n_features} "
                             f"and other.n_features={other.n_features}.")
        for name in ("xty", "third"):
            if (getattr(self, name) is None) != (getattr(other, name) is None):
                raise ValueError(f"Cannot merge moment sums where only one has '{name}'.")
        for name in ("row_norm", "entry_bound", "response_bound"):
            if getattr(self, name) != getattr(other, name):
                raise ValueError(f"Cannot merge moment sums clipped to different bounds: {name}="
                                 f"{getattr(self, name)!r} and other.{name}={getattr(other, name)!r}.")
        if not _same_center(self.center, other.center):
            raise ValueError("Cannot merge moment sums centred at different public centres.")
        add = lambda a, b: None if a is None else a + b  # noqa: E731
        return dataclasses.replace(
            self, n=self.n + other.n, xtx=self.xtx + other.xtx, xty=add(self.xty, other.xty),
            yty=add(self.yty, other.yty), third=add(self.third, other.third),
        )


def _same_center(a, b):
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))



def third_rows(X):
    """``R[p, k] = sum_i x_ia x_ib x_ik`` for the upper-triangle pairs ``p = (a <= b)``."""
    n, d = X.shape
    ia, ib = np.triu_indices(d)
    step = max(1, _THIRD_BLOCK_ELEMENTS // max(ia.size, 1))
    out = np.zeros((ia.size, d))
    for lo in range(0, n, step):
        B = X[lo:lo + step]
        out += (B[:, ia] * B[:, ib]).T @ B
    return out


def expand_third(r3, d):
    """The full (d, d, d) tensor from its upper-triangle pair rows."""
    ia, ib = np.triu_indices(d)
    T = np.empty((d, d, d))
    T[ia, ib, :] = r3
    T[ib, ia, :] = r3
    return T
