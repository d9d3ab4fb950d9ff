r"""What the graphical lasso's and ridge's intervals may say where their draws leave first order.

Two sure facts, from public values only, replace withholding there:

- **Noise columns hold 0.** A column whose released variance is below its noise level
  (``variance-below-noise``) is noise at this budget: the sign of its partial correlations and of its
  ridge precision entries cannot be told. Their draws' intervals are printed stretched to hold 0
  (:func:`hold_zero`), so they never say "excludes 0"; they were withheld before. On the coverage
  benchmark's fits (``benchmarks/coverage_structure.py``: 2-3 seeds per table, epsilon 1 and 4, the rule turned
  off to see them) those entries' intervals held the full-data value 0.89-1.00 (graphical lasso) and 0.92-1.00
  (ridge, stretched), while 32 of the 34 unstretched ridge entries of such columns that excluded 0
  had missed.
- **An edge the draws drop.** The graphical lasso sets entries to exactly 0, so an entry's draws can have an
  atom at 0, which the basic interval :math:`2\hat\theta - q` reflects into a point away from 0: on macrodata
  and grunfeld at epsilon 1 (6 fits each), all 3 partial correlations whose interval excluded 0 had a full-data
  value of 0, their edges dropped by 70-100% of one set's draws. Where a set's draws drop the edge in more than
  a tail's share (``(1 - level) / 2``), the interval also holds that set's percentile interval
  (:func:`with_dropped_draws`), which holds the atom. (Holding 0 wherever the edge is not stable instead cost
  macrodata at epsilon 4 all 14 of its correct "excludes 0" claims.)
- **Ridge's range.** ROPE's eigenvalues are :math:`2/(\varphi + \sqrt{\varphi^2 + 8\alpha})`, at most
  :math:`c = 1/\sqrt{2\alpha}` for every :math:`\varphi \ge 0`. The value a ridge interval is about, ridge at
  the same ``alpha`` on the full data's covariance or on the population's, both positive semi-definite, is
  therefore a matrix with eigenvalues in :math:`(0, c]`: its diagonal lies in :math:`[0, c]` and each
  off-diagonal entry in :math:`[-c/2, c/2]` (:math:`\Theta_{ij} = (q_+ - q_-)/2` with
  :math:`q_\pm = u_\pm^\top\Theta u_\pm \in [0, c]`, :math:`u_\pm = (e_i \pm e_j)/\sqrt 2`). Every ridge interval is
  cut to that range (:func:`ridge_range`, :func:`within`): cutting by a set that surely holds the value never
  loses coverage. Where the released matrix has eigenvalues far below 0 the draws invert noise and spread
  thousands of times wider than the range (breast cancer, diabetes, wine, star98, macrodata in raw units), and
  the intervals had been withheld; now they are cut to the range and stretched to hold 0 (the draws are beyond
  first order there: 91-100% of their entries that excluded 0 had missed).

- **Ridge's range from the covariance's bounds** (:func:`ridge_jensen_range`). ROPE's eigenvalue map
  :math:`f(\varphi) = 2/(\varphi + \sqrt{\varphi^2 + 8\alpha})` is convex and decreasing, so for a unit
  vector :math:`u` Jensen's operator inequality gives :math:`u^\top f(S) u \ge f(u^\top S u)`: the diagonal
  :math:`\Theta_{jj} \ge f(S_{jj})` and :math:`q_\pm \ge f((S_{ii} + S_{jj} \pm 2 S_{ij})/2)`. With upper bounds
  on those from the covariance's own intervals (every part counted), :math:`\Theta_{jj} \in [f(U_{jj}), c]` and
  :math:`\Theta_{ij} \in [(f(U_+) - c)/2, (c - f(U_-))/2]`. It pins an entry only where the upper ends lie well
  below :math:`\sqrt{8\alpha}` (where :math:`f` is near :math:`c`). Used where the draws are withheld (rows beyond
  the outer bound whose loss is unseen): the covariance withholds only the columns that bear them.

The released estimate ``precision_`` itself is not cut (it may lie outside the range where the released matrix
is indefinite): an interval cut to the range may then leave it out, as the value cannot be there.
"""

import numpy as np

__all__ = ["hold_zero", "ridge_jensen_range", "ridge_range", "with_dropped_draws", "within"]


def hold_zero(interval, where):
    """Stretch ``interval`` (2, ...) in place to hold 0 where ``where`` (a boolean array, or ``True``)."""
    np.minimum(interval[0], 0.0, out=interval[0], where=where)
    np.maximum(interval[1], 0.0, out=interval[1], where=where)
    return interval


def ridge_range(alpha, d):
    """``(lower, upper)`` (d, d): the range of ridge (ROPE at ``alpha``) of any positive semi-definite matrix, in
    the units ``alpha`` is in (module docstring): ``[0, c]`` on the diagonal, ``[-c/2, c/2]`` off it,
    ``c = 1 / sqrt(2 alpha)``."""
    c = 1.0 / np.sqrt(2.0 * float(alpha))
    upper = np.full((d, d), c / 2.0)
    np.fill_diagonal(upper, c)
    lower = -upper
    np.fill_diagonal(lower, 0.0)
    return lower, upper


def within(interval, lower, upper):
    """``interval`` (2, d, d) cut to ``[lower, upper]``; where nothing of it is left, or a point (an interval the
    range surely holds the value in, but not there), the range itself. NaN (withheld) stays NaN."""
    lo, hi = np.maximum(interval[0], lower), np.minimum(interval[1], upper)
    empty = lo >= hi  # False where NaN
    return np.stack([np.where(empty, lower, lo), np.where(empty, upper, hi)])


def with_dropped_draws(interval, sets, level):
    """``interval`` (2, d, d) widened, entry by entry, to hold the percentile interval of each set of ``sets`` (each
    ``(B, d, d)`` draws of a thresholded estimate) that is exactly 0 in more than ``(1 - level) / 2`` of its draws
    (module docstring). Too few draws for the level: ``interval`` unchanged (the basic one is withheld then)."""
    tail = (1.0 - float(level)) / 2.0
    out = np.array(interval, dtype=float)
    for draws in sets:
        draws = np.asarray(draws, dtype=float)
        dropped = np.mean(draws == 0.0, axis=0) > tail
        if not dropped.any() or not np.isfinite(out).all():
            continue
        lo, hi = np.quantile(draws, [tail, 1.0 - tail], axis=0, method="weibull")
        np.minimum(out[0], lo, out=out[0], where=dropped)
        np.maximum(out[1], hi, out=out[1], where=dropped)
    return out


def _rope_eigenvalue(phi, alpha):
    """ROPE's map of an eigenvalue ``phi >= 0`` (0 at +inf; NaN, an unknown bound, counts as +inf)."""
    phi = np.where(np.isnan(phi), np.inf, np.maximum(phi, 0.0))
    with np.errstate(invalid="ignore", over="ignore"):
        out = 2.0 / (phi + np.sqrt(phi * phi + 8.0 * float(alpha)))
    return np.where(np.isinf(phi), 0.0, out)


def ridge_jensen_range(alpha, interval):
    """``(lower, upper)`` (d, d): where ridge (ROPE at ``alpha``) of a PSD matrix lies given ``interval`` (2, d, d),
    lower and upper bounds on that matrix's entries, in the units ``alpha`` is in (module docstring: Jensen's operator
    inequality). It holds whenever every bound it reads holds: the diagonal reads ``U_jj``; an off-diagonal entry
    ``U_ii``, ``U_jj`` and both ends of ``S_ij`` (a union of those events). NaN bounds count as unknown."""
    lo, hi = np.asarray(interval[0], dtype=float), np.asarray(interval[1], dtype=float)
    c = 1.0 / np.sqrt(2.0 * float(alpha))
    u_diag = np.diagonal(hi)
    plus = _rope_eigenvalue((u_diag[:, None] + u_diag[None, :] + 2.0 * hi) / 2.0, alpha)
    minus = _rope_eigenvalue((u_diag[:, None] + u_diag[None, :] - 2.0 * lo) / 2.0, alpha)
    lower, upper = (plus - c) / 2.0, (c - minus) / 2.0
    np.fill_diagonal(lower, _rope_eigenvalue(u_diag, alpha))
    np.fill_diagonal(upper, c)
    return lower, upper
