"""A covariance's noise-only spread, kept as the few numbers that make it and expanded where it is read.

The added noise has one standard deviation off the diagonal and one on it, and its interval is each
released entry less one of two pairs of quantiles. As arrays, ``covariance_noise_se_``, the two
ends of ``covariance_noise_interval_`` and ``covariance_sample_se_`` were four d x d arrays of two
numbers each: 3.2 GB at d = 10 000. :class:`EntrySpread` holds those numbers, the released matrix
(which the interval is centred on; under add-remove the count's error scales it too), the column
scales and the private centre's noise scale; :class:`LazyEntries` is what a user reads. ``np.asarray``,
indexing, iteration, arithmetic and NumPy's functions give the values of the arrays it replaces, bit for
bit (every entry is computed by the same operations, one entry at a time); an index of a few rows or
entries makes only those. Released values only: no rows.
"""

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from .uncertainty import count_relative_sd, noise_law, z_value

__all__ = ["EntrySpread", "LazyEntries"]


class EntrySpread:
    """The numbers behind a released matrix's noise-only standard errors and intervals (closed form).

    ``release``: the raw release (before the PSD projection); ``level``: the intervals' coverage.
    Each method takes index arrays ``I``, ``J`` (broadcast against each other) and returns those entries.
    """

    def __init__(self, release, level):
        law = noise_law(release)
        self.d, self.matrix = release.n_features, release.second_moment
        self.sd, self.diagonal_sd, self.diagonal_mean = law.sd, law.diagonal_sd, law.diagonal_mean
        self.off, self.on = law.entry_interval(level), law.entry_interval(level, diagonal=True)
        self.count, self.z = count_relative_sd(release), z_value(level)
        self.scale = None if release.column_scale is None else np.asarray(release.column_scale, dtype=float)
        self.centre_scale = 0.0  # the private centre's noise scale s: covariance_sample_se_ adds its e e^T

    def _centre(self, I, J, on):
        """The released entries less the noise's mean on the diagonal: unbiased for the exact moment."""
        m = np.asarray(self.matrix[I, J], dtype=float)
        return np.where(on, m - self.diagonal_mean, m)

    def _units(self, I, J):
        return None if self.scale is None else self.scale[I] * self.scale[J]  # np.outer(s, s)[I, J]

    def _standard(self, I, J, on):
        """The noise sd of each entry in the release's (standardised) units, with the count's error (add-remove)."""
        se = np.where(on, self.diagonal_sd, self.sd)
        if self.count > 0:  # first order: the noisy count scales every entry
            se = np.sqrt(se**2 + (self._centre(I, J, on) * self.count) ** 2)
        return se

    def se(self, I, J, standardised=False):
        """``covariance_noise_se_``; ``standardised``: that divided back by ``s_i s_j`` (as the error budget reads
        it: ``(sd s_i s_j) / (s_i s_j)``, which may differ from ``sd`` in the last bit)."""
        on = np.asarray(I) == np.asarray(J)
        se, units = self._standard(I, J, on), self._units(I, J)
        if units is not None:
            se = se * units
            if standardised:
                se = se / units
        return se

    def interval(self, I, J, standardised=False):
        """``covariance_noise_interval_`` (2, ...): centred on the released entries, exact for Gaussian and Laplace
        noise; normal under add-remove."""
        on = np.asarray(I) == np.asarray(J)
        centre = self._centre(I, J, on)
        if self.count > 0:
            half = self.z * self._standard(I, J, on)
            out = np.stack([centre - half, centre + half])
        else:
            (lo, hi), (dlo, dhi) = self.off, self.on
            out = np.stack([centre - np.where(on, dhi, hi), centre - np.where(on, dlo, lo)])
        units = self._units(I, J)
        if units is not None:
            out = out * units
            if standardised:
                out = out / units
        return out

    def sample_se(self, I, J):
        """``covariance_sample_se_``: the noise and the private centre's ``e e^T`` (``s^4`` off the diagonal,
        ``2 s^4`` on it), without sampling."""
        on = np.asarray(I) == np.asarray(J)
        v = self.se(I, J, standardised=True) ** 2
        s4 = self.centre_scale**4
        out = np.sqrt(np.where(on, v + 2.0 * s4, v + s4))
        units = self._units(I, J)
        return out if units is None else out * units


_SHAPES = {"se": 2, "interval": 3, "sample_se": 2}


class LazyEntries(NDArrayOperatorsMixin):
    """A d x d (or, for an interval, 2 x d x d) float array made from an :class:`EntrySpread` when it is read.

    ``np.asarray(x)`` makes the whole array; ``x[i, j]``, ``x[i]``, ``x[:, a:b]`` (integers and slices)
    make only the entries asked for; anything else (index arrays, masks) is taken from the whole array.
    Arithmetic, NumPy's ufuncs and the array's other attributes (``.T``, ``.sum()``) work on it as on the
    array; ``standardised`` divides by the column scales again (the error budget's units).
    """

    def __init__(self, spread, what, standardised=False):
        self._spread, self._what, self._standardised = spread, what, standardised
        d = spread.d
        self.shape = (2, d, d) if _SHAPES[what] == 3 else (d, d)

    spread = property(lambda self: self._spread, doc="The :class:`EntrySpread` it is made from.")
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape)))
    dtype = np.dtype(float)

    def __len__(self):
        return self.shape[0]

    def _entries(self, I, J):
        if self._what == "sample_se":
            return self._spread.sample_se(I, J)
        return getattr(self._spread, self._what)(I, J, standardised=self._standardised)

    def _grid(self, rows, cols):
        """The entries of ``rows`` x ``cols`` (each an integer or an index vector)."""
        rows, cols = np.asarray(rows), np.asarray(cols)
        return self._entries(rows[:, None] if rows.ndim and cols.ndim else rows, cols)

    def __array__(self, dtype=None, copy=None):
        out = self._grid(np.arange(self._spread.d), np.arange(self._spread.d))
        return out if dtype is None else out.astype(dtype, copy=False)

    def __getitem__(self, key):
        key = key if isinstance(key, tuple) else (key,)
        basic = len(key) <= self.ndim and all(isinstance(k, (int, np.integer, slice)) and not isinstance(k, bool)
                                              for k in key)  # True is a mask to NumPy, not row 1
        if not basic:
            return np.asarray(self)[key]
        key = key + (slice(None),) * (self.ndim - len(key))
        axis = np.arange(self._spread.d)
        out = self._grid(axis[key[-2]], axis[key[-1]])
        out = out[key[0]] if self.ndim == 3 else out
        return out[()] if out.ndim == 0 else out  # one entry: a NumPy scalar, as the array's

    def __iter__(self):
        return (self[k] for k in range(len(self)))

    def diagonal(self):
        """The diagonal (``(2, d)`` for an interval), as ``np.diagonal`` of the array, without making it."""
        idx = np.arange(self._spread.d)
        return self._entries(idx, idx)

    def __getattr__(self, name):  # the array's other attributes (.T, .sum(), .tolist(), ...), on the whole array
        if name.startswith("_"):  # never for the private ones (pickle asks for them before __dict__ is filled)
            raise AttributeError(name)
        return getattr(np.asarray(self), name)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(np.asarray(x) if isinstance(x, LazyEntries) else x for x in inputs)
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __repr__(self):  # never the whole array: at d = 10 000 that is 800 MB to print a summary of
        s = self._spread
        return (f"<{self._what} of shape {self.shape}, made when read (np.asarray): noise sd {s.sd:.6g} off the "
                f"diagonal, {s.diagonal_sd:.6g} on it" + (", with the count's error" if s.count > 0 else "")
                + ("" if s.scale is None else ", times s_i s_j") + ">")
