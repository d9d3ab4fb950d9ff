"""Symmetric noise matrices and fully symmetric noise 3-tensors.

"A symmetric matrix whose entries are i.i.d." can only mean (docs/algorithms.md
§0.4): draw the ``d(d+1)/2`` entries with ``i <= j`` i.i.d. and mirror them.
For a 3-tensor, draw one value per index orbit ``{i <= j <= k}``
(``C(d+2, 3)`` values) and copy it to every permutation of ``(i, j, k)``.

The noise therefore acts on the *vector* of orbit coordinates, and the
sensitivity that calibrates it must be measured on those same coordinates:
:func:`upper_triangle` and :func:`orbit_vector` extract them, in the order of
the draws (lexicographic in ``(i, j)`` / ``(i, j, k)``).

Privacy pitfall: symmetric noise added to a *non*-symmetric statistic releases
its antisymmetric part exactly. Symmetrise the statistic first (``moments/``).
"""

import functools
import itertools

import numpy as np

from .._rng import as_generator
from .._validation import check_int, check_option, check_positive

__all__ = [
    "add_symmetric_matrix_noise",
    "symmetric_matrix_noise",
    "symmetric_tensor_noise",
    "upper_triangle",
    "orbit_vector",
]

DISTRIBUTIONS = ("gaussian", "laplace")


def _draw(size, scale, distribution, rng):
    # The draw order for a seed is fixed: one call, or consecutive calls in that order (_upper_rows).
    if callable(distribution):  # a noise law's own i.i.d. sampler (mechanisms.laws)
        return distribution(size, scale, rng)
    if distribution == "gaussian":
        return rng.normal(0.0, scale, size=size)
    return rng.laplace(0.0, scale, size=size)


def _check_noise_args(d, scale, distribution):
    d = check_int(d, "d", minimum=1)
    scale = check_positive(scale, "scale")
    if not callable(distribution):
        distribution = check_option(distribution, "distribution", DISTRIBUTIONS)
    return d, scale, distribution


@functools.lru_cache(maxsize=16)
def _orbit_index(d):
    """Orbit triples ``i <= j <= k`` and the (d, d, d) map entry -> orbit id.

    Cached per ``d``: it depends on ``d`` only, and building it is the only
    O(d^3) integer work. Returned arrays are read-only.
    """
    i, j, k = np.ogrid[:d, :d, :d]
    # np.nonzero walks the mask in C order, so triples come out lexicographic.
    triples = np.nonzero((i <= j) & (j <= k))
    ids = np.arange(triples[0].size)
    index = np.empty((d, d, d), dtype=np.intp)
    for perm in itertools.permutations(range(3)):
        index[tuple(triples[p] for p in perm)] = ids
    for arr in (*triples, index):
        arr.setflags(write=False)
    return triples, index


def symmetric_matrix_noise(d, scale, rng=None, distribution="gaussian"):
    """Draw a symmetric (d, d) noise matrix with i.i.d. upper triangle.

    The ``d(d+1)/2`` entries with ``i <= j`` are drawn i.i.d. in the order of
    :func:`upper_triangle` and mirrored into the lower triangle, so the result
    is exactly symmetric.

    Parameters
    ----------
    d : int
        Dimension, >= 1.
    scale : float
        Standard deviation (``"gaussian"``) or Laplace scale :math:`b`
        (``"laplace"``, density :math:`\\exp(-|x|/b)/(2b)`); finite, > 0.
    rng : None, int, SeedSequence or numpy.random.Generator, default=None
        Source of randomness; ``None`` draws fresh OS entropy.
    distribution : {"gaussian", "laplace"} or callable, default="gaussian"
        Marginal law of each drawn entry; a callable ``(size, scale, generator) -> array`` draws
        them itself (a noise law of :mod:`dpmoments.mechanisms.laws`).

    Returns
    -------
    E : ndarray of shape (d, d)
        Symmetric noise, ``E == E.T`` exactly.

    Examples
    --------
    >>> E = symmetric_matrix_noise(3, scale=1.0, rng=0)
    >>> bool((E == E.T).all())
    True
    >>> upper_triangle(E).shape
    (6,)
    """
    d, scale, distribution = _check_noise_args(d, scale, distribution)
    E = np.empty((d, d))
    for i, values in _upper_rows(d, scale, distribution, as_generator(rng)):
        E[i, i:] = values
        E[i + 1:, i] = values[1:]
    return E


def add_symmetric_matrix_noise(M, scale, rng=None, distribution="gaussian"):
    """Add :func:`symmetric_matrix_noise` to the square float64 array ``M`` in place, and return ``M``.

    The same draws, in the same order, as ``M + symmetric_matrix_noise(d, scale, rng, distribution)`` (each
    entry gets the same one addition, so a symmetric ``M`` gives the same bits), without the noise matrix:
    at d = 10 000 the noise and its index arrays were three more d x d arrays (2.4 GB) beside the statistic.
    """
    d, scale, distribution = _check_noise_args(M.shape[0], scale, distribution)
    for i, values in _upper_rows(d, scale, distribution, as_generator(rng)):
        M[i, i:] += values
        M[i + 1:, i] += values[1:]
    return M


# Entries drawn per call: large enough that the Python per call is nothing, small enough to be a few MB
_BLOCK = 1 << 19


def _upper_rows(d, scale, distribution, gen):
    """``(i, the draws of row i's entries j >= i)`` for every row, drawn in blocks of whole rows.

    The draws come in the order of :func:`upper_triangle`, and drawing ``a`` then ``b`` values from a generator gives
    the same values as drawing ``a + b`` at once, so the noise is that of one vectorised call, bit for bit.
    """
    start = 0
    while start < d:
        stop, size = start, 0
        while stop < d and (size == 0 or size + d - stop <= _BLOCK):
            size, stop = size + d - stop, stop + 1
        values, offset = _draw(size, scale, distribution, gen), 0
        for i in range(start, stop):
            yield i, values[offset:offset + d - i]
            offset += d - i
        start = stop


def symmetric_tensor_noise(d, scale, rng=None, distribution="gaussian"):
    """Draw a fully symmetric (d, d, d) noise tensor, one draw per orbit.

    One value is drawn i.i.d. for each index orbit ``i <= j <= k``
    (``C(d+2, 3)`` values, in the order of :func:`orbit_vector`) and copied
    to every permutation of ``(i, j, k)``.

    Parameters
    ----------
    d : int
        Dimension, >= 1.
    scale : float
        Standard deviation (``"gaussian"``) or Laplace scale (``"laplace"``);
        finite, > 0.
    rng : None, int, SeedSequence or numpy.random.Generator, default=None
        Source of randomness; ``None`` draws fresh OS entropy.
    distribution : {"gaussian", "laplace"} or callable, default="gaussian"
        Marginal law of each drawn entry (a callable as for :func:`symmetric_matrix_noise`).

    Returns
    -------
    T : ndarray of shape (d, d, d)
        Equal to each of its six transposes exactly.

    Examples
    --------
    >>> T = symmetric_tensor_noise(4, scale=0.1, rng=0)
    >>> bool((T == T.transpose(2, 0, 1)).all())
    True
    >>> orbit_vector(T).shape  # C(6, 3)
    (20,)
    """
    d, scale, distribution = _check_noise_args(d, scale, distribution)
    triples, index = _orbit_index(d)
    values = _draw(triples[0].size, scale, distribution, as_generator(rng))
    return values[index]


def _as_square(A, name, ndim):
    arr = np.asarray(A)
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"'{name}' must hold numbers; got dtype {arr.dtype}.")
    if arr.ndim != ndim or len(set(arr.shape)) != 1 or arr.shape[0] < 1:
        cube = ", ".join(["d"] * ndim)
        raise ValueError(f"'{name}' must have shape ({cube}) with d >= 1; got shape {arr.shape}.")
    return arr


def upper_triangle(M):
    """Entries ``M[i, j]`` with ``i <= j``, in row-major (draw) order.

    Parameters
    ----------
    M : array_like of shape (d, d)
        Entries below the diagonal are ignored.

    Returns
    -------
    v : ndarray of shape (d * (d + 1) // 2,)

    Examples
    --------
    >>> upper_triangle([[1, 2], [2, 3]])
    array([1, 2, 3])
    """
    M = _as_square(M, "M", 2)
    return M[np.triu_indices(M.shape[0])]


def orbit_vector(T):
    """Entries ``T[i, j, k]`` with ``i <= j <= k``, in lexicographic (draw) order.

    Parameters
    ----------
    T : array_like of shape (d, d, d)
        Only one representative per orbit is read.

    Returns
    -------
    v : ndarray of shape (d * (d + 1) * (d + 2) // 6,)

    Examples
    --------
    >>> import numpy as np
    >>> orbit_vector(np.arange(8).reshape(2, 2, 2))
    array([0, 1, 3, 7])
    """
    T = _as_square(T, "T", 3)
    triples, _ = _orbit_index(T.shape[0])
    return T[triples]
