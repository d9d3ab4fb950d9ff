"""The entries' intervals of a covariance's error budget, made in place: every d x d array counted.

At d = 10 000 one d x d float64 array is 800 MB, and the error budget (:mod:`.error_budget`) read a
dozen of them at once: here each step writes into an array it was given or made, noise widths are one
number off the diagonal and one on it, and the distinct entries are a mask, not index arrays. The
results are those of the plain expressions they replace, bit for bit. Released values only: no rows.
"""

import numpy as np

from .._lazy import lazy_module
from .centre_law import KNOTS, diagonal_quantiles, off_diagonal_half_width, off_diagonal_ratio, off_diagonal_table
from .uncertainty import count_relative_sd, noise_law, row_blocks, z_value

special = lazy_module("scipy.special")  # imported when an interval is first computed

__all__ = ["half_widths", "holding_estimate", "truncate_variances", "widen_to_noise",
           "with_centre_variance"]


def with_centre_variance(v, s, in_place=False):
    """``sqrt(v + Var(e_i e_j))``, the centre's ``s^4`` added off the diagonal and ``2 s^4`` on it, in a new array
    (as ``np.sqrt(v + np.full((d, d), s**4) + np.eye(d) * s**4)``, bit for bit); ``in_place``: written into ``v``
    (an array of the caller's own)."""
    idx = np.diag_indices(v.shape[0])
    diagonal = v[idx] + 2.0 * s**4
    out = np.add(v, s**4, out=v if in_place else None)
    out[idx] = diagonal
    return np.sqrt(out, out=out)


def truncate_variances(out, variances):
    """Each variance's interval (2, d, d) cut at 0 below only; above, taken about ``max(r, 0)`` (``r`` released:
    ``variances``, the centre's diagonal).

    A variance released far below 0 keeps ``[0, h]`` (its upper half-width), never ``[0, 0]``. Coverage is at
    least the uncut one's: ``v >= 0`` misses above only if ``v > r + h``, and ``max(r, 0) + h >= r + h``.
    """
    idx = np.arange(variances.shape[0])
    upper_half = out[1, idx, idx] - variances
    out[0, idx, idx] = np.maximum(out[0, idx, idx], 0.0)
    out[1, idx, idx] = np.maximum(variances, 0.0) + upper_half


def widen_to_noise(lo_half, hi_half, release, noise_interval, level, at):
    """Widen the half-widths below and above each entry (d, d), in place, to the added noise's own interval at
    level ``at`` where that is wider.

    Exact for its law (:meth:`NoiseLaw.entry_interval`: Laplace tails at 0.999 are far longer than a
    normal's); under add-remove the noise-only interval is normal (the count's part to first order) and
    is rescaled. One number off the diagonal and one on it: no d x d array of them.
    """
    if count_relative_sd(release) > 0:
        half = (noise_interval[1] - noise_interval[0]) / 2 * z_value(at) / z_value(level)
        np.maximum(lo_half, half, out=lo_half)
        np.maximum(hi_half, half, out=hi_half)
        return
    law, idx = noise_law(release), np.diag_indices(release.n_features)
    (lo, hi), (dlo, dhi) = law.entry_interval(at), law.entry_interval(at, diagonal=True)
    for half, off_diagonal, on_diagonal in ((lo_half, hi, dhi), (hi_half, -lo, -dlo)):  # [r - hi, r - lo]
        diagonal = np.maximum(half[idx], on_diagonal)
        np.maximum(half, off_diagonal, out=half)
        half[idx] = diagonal


def half_widths(v, s, level, out):
    """Half-widths below and above the released entries (d, d) at ``level``, written into ``out`` (2, d, d): normal
    parts of variance ``v`` with the centre's ``e e^T`` (:mod:`centre_law`); the lower one is subtracted from the
    entry, the upper one added. Returns ``out``'s two halves."""
    alpha = 1.0 - level
    d = v.shape[0]
    lo_half, hi_half = out
    if d * (d - 1) // 2 <= KNOTS:
        upper = np.triu(np.ones((d, d), dtype=bool), 1)  # a mask: index arrays would be a d x d array of integers
        lo_half[upper] = values = off_diagonal_half_width(v[upper], s, alpha)
        lo_half.T[upper] = values  # mirrored (off + off.T before, which adds 0 to each: the same bits)
        del upper, values
    else:
        _off_diagonal_in_blocks(v, s, alpha, lo_half)
    q_lo, q_hi = diagonal_quantiles(np.diag(v), s, alpha)
    hi_half[...] = lo_half
    idx = np.arange(d)
    # The released variance is the true one plus N + s^2 Z^2: the truth lies in [r - q_hi, r - q_lo]; 'centre' has
    # had no centre mean removed, so the half-widths are about r itself
    lo_half[idx, idx], hi_half[idx, idx] = q_hi, -q_lo
    return lo_half, hi_half


def _off_diagonal_in_blocks(v, s, alpha, out):
    """``off_diagonal_half_width`` of every entry above the diagonal of ``v``, mirrored below it, into ``out``: a block
    of rows at a time against the quantile table of all of them (the same bits as all at once; at d = 10 000 the upper
    triangle's values and their temporaries were about three d x d arrays)."""
    d = v.shape[0]
    blocks = row_blocks(d)
    cols = np.arange(d)

    def above(rows):  # the block's entries right of the diagonal
        return cols[None, :] > np.arange(rows.start, rows.stop)[:, None]

    table = None  # a public centre (s = 0): each entry's own, z sqrt(v)
    if float(s) ** 2 != 0.0:
        smallest, largest = np.inf, -np.inf
        for rows in blocks:
            values = v[rows][above(rows)]
            if values.size:
                smallest, largest = np.minimum(smallest, values.min()), np.maximum(largest, values.max())  # NaN too
        table = off_diagonal_table(off_diagonal_ratio(smallest, s), off_diagonal_ratio(largest, s), alpha)
    for rows in blocks:
        mask = above(rows)
        out[rows][mask] = off_diagonal_half_width(v[rows][mask], s, alpha, table)
    for rows in blocks:  # below the diagonal: the entry above it (every row's upper part is written by now)
        mask = ~above(rows)
        block = out[rows]
        block[mask] = out[:, rows].T[mask]


def holding_estimate(interval, estimate, in_place=False):
    """The intervals (2, d, d) widened to hold the printed ``estimate`` (the PSD projection can move an entry out:
    a variance up). A union: coverage at least as before; withheld (NaN) entries stay withheld. ``in_place``:
    written into ``interval`` (an array of the caller's own), not a new one."""
    if not in_place:
        return np.stack([np.minimum(interval[0], estimate), np.maximum(interval[1], estimate)])
    np.minimum(interval[0], estimate, out=interval[0])
    np.maximum(interval[1], estimate, out=interval[1])
    return interval
