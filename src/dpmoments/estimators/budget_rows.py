"""The covariance error budget's d x d steps, a block of rows at a time.

At d = 10 000 one d x d float64 array is 800 MB. The error budget (:mod:`.error_budget`) kept the clipping
part's shifts, the centre bias's widths, the released matrix with its centre's diagonal, the ends that judge
which entries exclude 0 and their distance from 0 as whole arrays; here each is made for a block of rows
(:func:`~.uncertainty.row_blocks`) and used at once. Every step is the element-wise operation it replaces,
in the same order for each entry: the same bits. Released values only: no rows.
"""

import numpy as np

from .fcr import distance_from_zero
from .uncertainty import row_blocks

__all__ = ["CentreSE", "distinct_statistics", "finish_interval_rows", "squared_entries"]


def _diagonal_of(rows):
    cols = np.arange(rows.start, rows.stop)
    return cols - rows.start, cols


class CentreSE:
    """The standard errors ``sqrt(v + Var(e_i e_j))`` (:func:`~.entry_intervals.with_centre_variance`) of any block
    of rows, from the normal parts' variances ``v`` (d, d) and the centre's noise scale ``s``, or read from ``se``
    where it was made already: the whole array need not exist while the intervals are made."""

    def __init__(self, v, s, se=None):
        self.v, self.s, self.se = v, s, se

    def __getitem__(self, rows):
        if self.se is not None:
            return self.se[rows]
        block, diagonal = self.v[rows], _diagonal_of(rows)
        on_diagonal = block[diagonal] + 2.0 * self.s**4
        out = np.add(block, self.s**4)
        out[diagonal] = on_diagonal
        return np.sqrt(out, out=out)


def squared_entries(entries, d):
    """``np.array(entries) ** 2`` (d, d), made a block of rows at a time (``entries`` may be a
    :class:`~.noise_entries.LazyEntries`: its whole array, and the temporaries it is made with, never exist)."""
    out = np.empty((d, d))
    for rows in row_blocks(d):
        np.square(np.asarray(entries[rows], dtype=float), out=out[rows])
    return out


def finish_interval_rows(out, raw, centre_diagonal, shifts, bias_sd, widths, z):
    """Turn the half-widths below and above each entry (``out``, (2, d, d), in place) into the interval's ends, a block
    of rows at a time: about the released entry (its centre's diagonal on the diagonal), the clipping part's shifts
    (``shifts``, a :class:`~.clipping_blocks.ClippingShifts`: its allowance's noise in quadrature first, and
    ``bias_sd``, the undetected loss's noise on each variance's upper end), less the centre's bias below and plus it
    above (``widths``: ``(below(rows), above_diagonal)`` of :func:`~.centre_bias.centre_bias_blocks`)."""
    below_of, above_diagonal = widths
    for rows in row_blocks(raw.shape[0]):
        lo, hi, diagonal = out[0, rows], out[1, rows], _diagonal_of(rows)
        bias_lo, bias_hi, towards_sd = shifts.block(rows)
        shifts.widen(lo, hi, rows, towards_sd, z)
        del towards_sd
        on_diagonal = centre_diagonal[rows] - lo[diagonal]  # centre - lo_half + bias_lo
        np.subtract(raw[rows], lo, out=lo)
        lo[diagonal] = on_diagonal
        lo += bias_lo
        below = below_of(rows)
        lo -= below  # less the centre's own clipping bias
        # The undetected clipping loss's noise widens the upper end, in quadrature (0 off the diagonal)
        hi **= 2
        hi[diagonal] += (z * bias_sd[rows]) ** 2
        np.sqrt(hi, out=hi)
        on_diagonal = hi[diagonal] + centre_diagonal[rows]  # centre + hi_half + bias_hi + above
        hi += raw[rows]
        hi[diagonal] = on_diagonal
        hi += bias_hi
        # above: below off the diagonal, its own on it; and a printed variance's loss given its printing
        on_diagonal = hi[diagonal] + above_diagonal[rows] + shifts.diagonal_excess(rows, z)
        hi += below
        hi[diagonal] = on_diagonal


def distinct_statistics(raw, mid_diagonal, shifts, widths, se, printed):
    """The distance of 0 from each distinct printed entry's interval at the level, in standard errors (1-D, in the
    order of ``np.triu(printed)``'s entries): the released entry (``mid_diagonal`` on the diagonal: the centre less
    its noise's mean) with the clipping part's shifts and the centre's bias (``widths`` at the level), against
    ``se`` (:func:`~.fcr.distance_from_zero`). What :func:`~.fcr.selected_by_fcr` reads, without the four d x d
    arrays it was made from."""
    d = raw.shape[0]
    below_of, above_diagonal = widths
    cols = np.arange(d)

    def distinct(rows):
        return printed[rows] & (cols[None, :] >= np.arange(rows.start, rows.stop)[:, None])

    blocks = row_blocks(d)
    t, at = np.empty(sum(int(np.count_nonzero(distinct(rows))) for rows in blocks)), 0
    for rows in blocks:
        diagonal = _diagonal_of(rows)
        mid = np.array(raw[rows], dtype=float)
        mid[diagonal] = mid_diagonal[rows]
        bias_lo, bias_hi, _ = shifts.block(rows)
        below = below_of(rows)
        lower, upper = mid + bias_lo, mid + bias_hi
        del mid
        lower -= below
        on_diagonal = upper[diagonal] + above_diagonal[rows]
        upper += below
        upper[diagonal] = on_diagonal
        distance = distance_from_zero(lower, upper, se[rows])
        mask = distinct(rows)
        count = int(np.count_nonzero(mask))
        t[at:at + count] = distance[mask]
        at += count
    return t
