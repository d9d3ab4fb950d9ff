"""The clipping part of a covariance's error budget, made a block of rows at a time when the intervals read it.

:func:`~dpmoments.estimators.error_budget._clipping` decides, from the clipping-excess release, which columns
are clipped and how far each entry's ends move (:mod:`.clipping_allowance`). It kept the shifts of the lower
and upper ends and the allowance's signed noise as three d x d arrays for the whole of the error budget
(800 MB each at d = 10 000); all three are functions of a few vectors and of the released correlations, so
:class:`ClippingShifts` keeps those (one d x d array, the correlations) and makes any block of rows of the
three when asked. The same bits as the whole arrays: every step is the same element-wise operation.
Released values only: no rows.
"""

import numpy as np

from .clipping_allowance import split_allowance, widen_block
from .uncertainty import row_blocks

__all__ = ["ClippingShifts", "correlations_in_place"]


def correlations_in_place(sigma):
    """``sigma`` (the released matrix's PSD projection, the caller's own) turned into its correlations clipped to
    ``[-1, 1]``, in place a block of rows at a time (as ``clip(sigma / outer(v, v))``, ``v`` its variances' roots
    floored at ``1e-300``: the same bits)."""
    v = np.sqrt(np.maximum(np.diag(sigma), 1e-300))
    for rows in row_blocks(sigma.shape[0]):
        block = sigma[rows]
        np.divide(block, np.outer(v[rows], v), out=block)
        np.clip(block, -1.0, 1.0, out=block)
    return sigma


def _diagonal_of(rows):
    """The positions of the diagonal inside the block of rows ``rows`` (a slice of a (d, d) array)."""
    cols = np.arange(rows.start, rows.stop)
    return cols - rows.start, cols


class ClippingShifts:
    """The lower and upper ends' shifts (d, d), the allowance's signed sd (d, d, Gaussian noise) and a detected
    column's spread's variance (d, d), each made a block of rows at a time (module docstring).

    ``rho``: the released correlations (:func:`correlations_in_place`), ``None`` where there is no clipping part
    (every shift 0). ``touched`` (d,): the clipped columns. ``detected``: ``(c, tau, U)`` of the detected columns'
    loss bounds (:func:`~.clipping_allowance.elliptical_parts`) with Gaussian noise, else ``(None, None, U)`` for the
    plain ``sqrt(U_i U_j)``; ``towards`` likewise for the undetected loss off the diagonal. ``lo_diagonal`` and
    ``hi_diagonal`` (d,): the variances' own shifts.
    """

    def __init__(self, d, rho=None, touched=None, detected=None, towards=None, unclear=None, lo_diagonal=None,
                 hi_diagonal=None, selective=None):
        self.d, self.rho, self.touched, self.unclear = d, rho, touched, unclear
        self.selective = selective  # a SelectiveLoss (selective_loss.py): a printed variance's loss given its printing
        self.detected, self.towards = detected, towards
        zero = np.zeros(d)
        self.lo_diagonal = zero if lo_diagonal is None else lo_diagonal
        self.hi_diagonal = zero if hi_diagonal is None else hi_diagonal
        self.has_spread_variance = rho is not None and towards[0] is not None and detected[0] is not None

    def _touched(self, rows):
        return self.touched[rows, None] | self.touched[None, :]

    def _spread(self, rows, touched):
        """A detected column's row and column, ``sqrt(U_i U_j)`` or its shift, times ``touched``."""
        c, tau, upper = self.detected
        if c is None:
            shift = np.outer(upper[rows], upper)
            np.sqrt(shift, out=shift)
        else:
            shift = split_allowance(c, tau, upper, rows)[0]
        shift *= touched
        return shift

    def _towards(self, rows, touched):
        """``(shift, signed sd or None, positive, negative)`` of the undetected loss towards a larger |entry|."""
        rho = self.rho[rows]
        positive, negative = rho > 0, rho < 0
        unclear = None if self.unclear is None else self.unclear[rows]
        if unclear is not None:  # an entry of unclear sign: both ends (entries_of_unclear_sign)
            positive |= unclear
            negative |= unclear
        weight = np.abs(rho)
        weight *= ~touched
        c, tau, upper = self.towards
        if c is None:
            shift, sd = np.outer(upper[rows], upper), None
            np.sqrt(shift, out=shift)
        else:
            shift, sd = split_allowance(c, tau, upper, rows)
            sd *= weight
            # the sign says which end it widens (an unclear entry's both: widen's 'either', its sd kept positive)
            np.negative(sd, out=sd, where=negative if unclear is None else negative & ~unclear)
            sd[_diagonal_of(rows)] = 0.0  # a variance's own loss is counted apart
        shift *= weight
        return shift, sd, positive, negative

    def block(self, rows):
        """``(lo, hi, sd)``: the shifts of the lower and upper ends of the entries in ``rows`` and the undetected
        loss's signed sd (positive: the upper end, negative: the lower one; ``None`` but with Gaussian noise)."""
        if self.rho is None:
            zero = np.zeros((rows.stop - rows.start, self.d))
            return zero, zero, None
        touched = self._touched(rows)
        hi = self._spread(rows, touched)
        lo = -hi
        towards, sd, positive, negative = self._towards(rows, touched)
        np.add(hi, towards, out=hi, where=positive)  # hi + 0 elsewhere: hi, the same bits
        np.subtract(lo, towards, out=lo, where=negative)
        diagonal = _diagonal_of(rows)
        lo[diagonal], hi[diagonal] = self.lo_diagonal[rows], self.hi_diagonal[rows]
        return lo, hi, sd

    def diagonal_excess(self, rows, z):
        """(rows,): what each variance's upper end gains at ``z`` because it was printed only where its loss did not
        stand out (:class:`~.selective_loss.SelectiveLoss`); 0 without a clipping part."""
        if self.selective is None:
            return np.zeros(rows.stop - rows.start)
        return self.selective.excess(z)[rows]

    def widen(self, lo_half, hi_half, rows, sd, z):
        """Combine the signed sd ``sd`` of :meth:`block` in quadrature with the half-widths of ``rows`` (views, in
        place); an entry of unclear sign at both ends."""
        if sd is not None:
            widen_block(lo_half, hi_half, sd, z, False if self.unclear is None else self.unclear[rows])

    def add_spread_variance(self, out):
        """Add a detected column's spread's noise variance (0 on the diagonal) to ``out`` (d, d), in place."""
        if not self.has_spread_variance:
            return
        c, tau, upper = self.detected
        for rows in row_blocks(self.d):
            variance = split_allowance(c, tau, upper, rows)[1]
            variance **= 2
            variance *= self._touched(rows)
            variance[_diagonal_of(rows)] = 0.0
            out[rows] += variance
