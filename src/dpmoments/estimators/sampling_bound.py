"""The sampling part of a covariance's error budget (``target="population"``): a bound that needs no fourth moment.

From the row bound :math:`R` and the released matrix alone, it holds whatever the law of the
clipped rows; normal theory understates the spread of heavy-tailed columns. Released values only:
no rows.
"""

import numpy as np

from .diagnostics import _centre_noise_scale as centre_noise_scale
from .uncertainty import row_blocks

__all__ = ["SAMPLING_TEXT", "add_sampling_variance", "sampling_variance"]


SAMPLING_TEXT = ("a bound without fourth moments: a row clipped to ||z|| <= R has Var(z_i z_j) <= "
                 "min(R^2 S_ii - S_ii^2, R^2 S_jj - S_jj^2, R^2 (S_ii + S_jj) / 4) - S_ij^2 and Var(z_i^2) <= "
                 "S_ii (R^2 - S_ii), over n, from the released matrix; where public ranges give a column's ends, also "
                 "(x - lo)(hi - x) >= 0 (exact for a 0/1 column), about the private mean within 3 sd")


def sampling_variance(release, sigma, rows=None):
    r"""A bound on each entry's sampling variance that holds for any law of the (clipped) rows, no fourth moment.

    A row clipped to :math:`\|z\| \le R` has :math:`z_i^2 + z_j^2 \le R^2`, so
    :math:`E z_i^2 z_j^2 \le E z_i^2 (R^2 - z_i^2) \le R^2 S_{ii} - S_{ii}^2` and, as
    :math:`z_i^2 z_j^2 \le (z_i^2 + z_j^2)^2 / 4 \le R^2 (z_i^2 + z_j^2) / 4`, also
    :math:`\le R^2 (S_{ii} + S_{jj}) / 4`; then :math:`\operatorname{Var}(z_i z_j) \le E z_i^2 z_j^2 - S_{ij}^2`,
    and :math:`\operatorname{Var}(z_i^2) \le S_{ii}(R^2 - S_{ii})`, each over ``n``. Normal theory,
    :math:`(S_{ii} S_{jj} + S_{ij}^2)/n`, understates heavy tails (its fourth moments are the normal's). ``sigma``:
    the PSD projection (``error_budget._psd``) of the released matrix (standardised units, the centre's mean removed),
    its variances taken in ``[0, R^2]``. Where public ranges bound each coordinate, :math:`|z_j| \le b_j`
    (the release's ``coordinate_bound``), also :math:`E z_i^2 z_j^2 \le b_j^2 S_{ii}` and
    :math:`\operatorname{Var}(z_i^2) \le b_i^2 S_{ii} - S_{ii}^2`: a 0/1 column's is then nearly its exact
    fourth moment (:math:`b^2 = (1 + |c|)^2` half-widths, against :math:`R^2 = \sum_j b_j^2`).
    Post-processing of the release: no rows. ``rows`` (a slice): those rows alone (:func:`add_sampling_variance`).
    """
    R2, n = float(release.row_norm) ** 2, float(release.n)
    rows = slice(0, sigma.shape[0]) if rows is None else rows
    v = np.clip(np.diag(sigma), 0.0, R2)
    each = R2 * v - v**2  # E z_i^2 z_j^2 <= R^2 S_ii - S_ii^2 (and the same with j)
    product = np.minimum(np.minimum.outer(each[rows], each), R2 * np.add.outer(v[rows], v) / 4.0)
    b2 = _coordinate_bounds_squared(release, R2)
    if b2 is not None:  # |z_j| <= b_j (public ranges): E z_i^2 z_j^2 <= b_j^2 S_ii, and E z_i^4 <= b_i^2 S_ii
        product = np.minimum(product, np.minimum(np.outer(v[rows], b2), np.outer(b2[rows], v)))
        each = np.minimum(each, b2 * v - v**2)
    ranged = _range_terms(release, v)
    if ranged is not None:  # a bounded column: (x - lo)(hi - x) >= 0 bounds its fourth moments by its second
        U, W = ranged
        product = np.fmin(product, np.outer(U[rows], U) * np.abs(sigma[rows]) + np.outer(W[rows], W))
        each = np.fmin(each, U**2 * v + W**2 - v**2)  # fmin: an unranged column (inf * 0) keeps its own
    out = np.maximum(product - sigma[rows] ** 2, 0.0)
    cols = np.arange(rows.start, rows.stop)
    out[cols - rows.start, cols] = np.maximum(each[rows], 0.0)  # the diagonal's entries in these rows
    out /= n
    return out


def add_sampling_variance(out, release, sigma):
    """``out += sampling_variance(release, sigma)`` in place, a block of rows at a time (its temporaries were five
    d x d arrays, 800 MB each at d = 10 000; the same bits)."""
    for rows in row_blocks(sigma.shape[0]):
        out[rows] += sampling_variance(release, sigma, rows)


# The population mean about the released centre is taken anywhere within this many standard deviations of the
# centre's noise and the mean's sampling together (plug-in, as the released matrix is for the covariance)
MEAN_MARGIN_SD = 3.0


def _range_terms(release, v):
    r"""``(|U|, W)`` (d,) where each coordinate has public ends ``lo <= z <= hi`` (else ``None``, or ``inf`` terms).

    About the population mean :math:`\mu`, :math:`y = z - \mu` satisfies :math:`(z - lo)(hi - z) \ge 0`, i.e.
    :math:`0 \le y^2 \le U y + W` with :math:`U = lo + hi - 2\mu`, :math:`W = (hi - \mu)(\mu - lo)`, so
    :math:`E y_i^2 y_j^2 \le E (U_i y_i + W_i)(U_j y_j + W_j) = U_i U_j \Sigma_{ij} + W_i W_j` (:math:`E y = 0`)
    and :math:`E y_i^4 \le U_i^2 \Sigma_{ii} + W_i^2`: exact for a 0/1 column (its fourth moment is its mean's
    function). Row clipping shrinks towards the centre, so the ends are widened to hold it (0). :math:`\mu` is
    the centre (a private mean) within ``MEAN_MARGIN_SD`` standard deviations of its noise and the mean's sampling;
    each term is taken at its largest there. Only where the centre is a private mean; public values only."""
    ends = getattr(release, "coordinate_range", None)
    s = centre_noise_scale(release) if ends is not None else None
    if ends is None or not s:
        return None
    lo, hi = np.minimum(ends[0], 0.0), np.maximum(ends[1], 0.0)
    margin = MEAN_MARGIN_SD * np.sqrt(float(s) ** 2 + v / float(release.n))
    mid = np.clip((lo + hi) / 2.0, -margin, margin)
    with np.errstate(invalid="ignore"):
        U = np.abs(lo + hi) + 2.0 * margin
        W = (hi - mid) * (mid - lo)
    finite = np.isfinite(lo) & np.isfinite(hi)
    return np.where(finite, U, np.inf), np.where(finite, W, np.inf)


def _coordinate_bounds_squared(release, R2):
    """Each coordinate's bound squared, at most ``R^2`` (the release's ``coordinate_bound``), or None."""
    bound = getattr(release, "coordinate_bound", None)
    if bound is None:
        return None
    return np.minimum(np.asarray(bound, dtype=float) ** 2, R2)
