"""Sensitivities of the released moments, per neighbouring relation.

Rows are clipped to ``||x||_2 <= R`` and responses to ``|y| <= r``. Under
replace-one and zero-out ``n`` is public and the released statistic is the
mean over the ``n`` rows; under add-remove ``n`` is private, so the noise
goes on the *sum* (and the count gets noise of its own,
:mod:`dpmoments.moments.counts`): its sensitivity is one row's term, with no
``1/n``. The noise acts on the *distinct* coordinates: the upper triangle
with diagonal of a symmetric matrix, one entry per index orbit of a
symmetric 3-tensor. Sensitivities are measured on exactly those coordinates.

=====================  ======================  ======================  =====================
statistic / norm        replace-one (mean)      zero-out (mean)         add-remove (sum)
=====================  ======================  ======================  =====================
second moment, L2       sqrt(2) R^2 / n         R^2 / n                 R^2
second moment, L1       (d + 1) R^2 / n         (d + 1) R^2 / (2 n)     (d + 1) R^2 / 2
cross moment, L2        2 R r / n               R r / n                 R r
cross moment, L1        2 sqrt(d) R r / n       sqrt(d) R r / n         sqrt(d) R r
third moment, L2        2 R^3 / n               R^3 / n                 R^3
third moment, L1        2 h3(d) R^3 / n         h3(d) R^3 / n           h3(d) R^3
=====================  ======================  ======================  =====================

Derivations (replace-one, row x replaced by y; zero-out and add-remove move
one of the two terms, zero-out divided by the public n):

* second, L2: ``||u(xx^T - yy^T)||^2 = (||D||_F^2 + sum_i D_ii^2)/2 <= ||D||_F^2
  = ||x||^4 + ||y||^4 - 2 (x.y)^2 <= 2 R^4``, tight at orthogonal x, y on the
  sphere. Zero-out and add-remove: ``||u(xx^T)|| <= ||xx^T||_F = ||x||^2``.
* second, L1: ``sum_{i<=j} |x_i x_j| = (||x||_1^2 + ||x||_2^2)/2 <= (d+1) R^2/2``
  per row (the papers' 2d/n is valid but about twice as loose).
* cross, L2 / L1: ``||x y_x - z y_z|| <= 2 R r`` and ``||x||_1 <= sqrt(d) R``.
* third, L2: the orbit vector's norm is at most the Frobenius norm;
  ``||x^(3) - y^(3)||_F^2 = ||x||^6 + ||y||^6 - 2 (x.y)^3 <= 4 R^6`` (at y = -x).
* third, L1: ``sum_{i<=j<=k} |x_i x_j x_k| = h3(|x|) = (p1^3 + 3 p1 p2 + 2 p3)/6``
  with power sums ``p1 <= sqrt(d) R, p2 <= R^2, p3 <= R^3``, so
  ``h3(d) = (d^(3/2) + 3 sqrt(d) + 2) / 6``.
"""

from ..privacy.relations import NEIGHBOURS
from .statistics import MOMENT_STATISTICS, as_moment

__all__ = ["NEIGHBOURS", "STATISTICS", "moment_sensitivity"]

STATISTICS = tuple(MOMENT_STATISTICS)


def moment_sensitivity(statistic, *, norm, n_samples, n_features, neighbours, row_norm, response_bound=None):
    """The L1 or L2 sensitivity of the released moment (see the module table; the rule is
    :meth:`~dpmoments.moments.statistics.MomentStatistic.sensitivity`).

    Parameters
    ----------
    statistic : {"second", "cross", "third"} or MomentStatistic
    norm : {"l2", "l1"}
    n_samples : int or None
        The public ``n`` of the mean (replace-one, zero-out). ``None`` under
        add-remove, where the sum is released: a caller that would divide by
        the exact ``n`` is refused (that is the zero-out relation).
    n_features : int
    neighbours : {"replace-one", "zero-out", "add-remove"}
    row_norm : float
        The public L2 bound R on each row.
    response_bound : float, optional
        The public bound r on ``|y|`` (cross moment only).
    """
    if norm not in ("l1", "l2"):
        raise ValueError(f"'norm' must be 'l1' or 'l2'; got {norm!r}.")
    return as_moment(statistic).sensitivity(norm=norm, n_samples=n_samples, n_features=n_features,
                                            neighbours=neighbours, row_norm=row_norm, response_bound=response_bound)
