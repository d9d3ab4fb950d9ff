r"""The private centre's own clipping bias, bounded from releases and public values only.

The centre is :math:`c = m + \frac1n\sum_i \mathrm{clip}_{R_m}(x_i - m) + e`: the mean of the rows clipped to
:math:`\|x - m\| \le R_m` about a privately chosen location :math:`m` (the ``"mean"`` part; standardised
units), plus its noise :math:`e`. So :math:`\bar x - c = \beta - e` with

.. math:: \beta = \frac1n \sum_{i \in C} (x_i - m)\,(1 - R_m/\|x_i - m\|),

``C`` the rows beyond :math:`R_m` about ``m``. The error budget counts :math:`e e^\top`; the second moment about
``c`` is the covariance plus :math:`(\beta - e)(\beta - e)^\top`, so each entry also carries
:math:`\beta_i e_j + e_i \beta_j - \beta_i \beta_j` (every centred quantity: the covariance and what is
computed from it). With :math:`x - m = (x - c) + \delta`, :math:`\delta = c - m` the mean's released step,
and :math:`0 \le 1 - R_m/\|x - m\| \le 1` on ``C``, Cauchy-Schwarz gives, for every column,

.. math:: |\beta_j| \le \sqrt{q\,M_{jj}} + q\,|\delta_j|, \qquad
          q = \frac1n\sum_{i \in C} (1 - R_m/\|x_i - m\|) \le \min(p, N/R_m),

:math:`p = |C|/n`, ``N`` the bound on :math:`\|\beta\|` below (each weight is below 1 and below
:math:`(\|x_i - m\| - R_m)/R_m`), and :math:`M_{jj} = \frac1n\sum_i (x_{ij} - c_j)^2` the unclipped
second moment about ``c`` (the released variance plus what clipping removed, at their upper ends). Also, by the triangle
inequality (``R`` the second moment's bound),

.. math:: |\beta_j| \le \|\beta\| \le \frac1n\sum_{i \in C} (\|x_i - m\| - R_m)
          \le p\,(R + \|\delta\| - R_m)_+ + \frac1n\sum_i (\|x_i - c\| - R)_+ =: N,

and a row beyond ``R`` about ``c`` loses :math:`\|x - c\|^2 - R^2 \ge 2R(\|x - c\| - R)` of the trace of the
second moment about ``c``: the clipping-excess release's trace (at its upper end) over ``2R`` bounds the last
sum (as elsewhere, what rows beyond its outer bound lost beyond it is not seen). ``B_j`` is the smaller of
the two bounds. ``|C|`` is at most the draw of :math:`R_m`'s target plus its rank error
(``clipped_rows_at_most``: probability :math:`1 - e^{-5}`), a public function of the draw's budget, and,
where the row bound's noisy count is of the same rows (the final mean about the location the bound was
drawn about), its one-sided upper end at the level. No data is read here: a release's parts and public
values only.
"""

import numpy as np

from .uncertainty import z_value

__all__ = ["add_above", "centre_bias_bound", "centre_bias_widths", "eigenvalue_centre_bias", "CENTRE_BIAS_TEXT"]

CENTRE_BIAS_TEXT = ("the private mean's own clipping bias beta (x-bar - c = beta - e): |beta_j| <= B_j = "
                    "min(sqrt(q M_jj) + q |delta_j|, N), q at most the share of rows beyond the mean's bound (its "
                    "draw's target plus rank error, or its noisy count), M_jj the second moment about the centre at "
                    "its upper end, delta the mean's released step, N a bound on |beta| from the clipping-excess "
                    "release; each entry widened by B_i E_j + E_i B_j + B_i B_j, E the centre noise's quantile")


def _mean_part(release):
    return next((p.released for p in (release.parts or ()) if p.label == "mean"), None)


def centre_bias_bound(release, second_upper, level):
    r"""``B`` (d,): bounds on :math:`|\beta_j|` (module docstring), standardised units; ``None`` where the release
    does not say how many rows the mean clipped (a public centre, a public bound, across sites).

    ``second_upper`` (d,): each column's unclipped second moment about the centre at its upper end.
    """
    part = _mean_part(release)
    if part is None or part.get("clipped_rows_at_most") is None or part.get("offset") is None:
        return None
    p = min(1.0, float(part["clipped_rows_at_most"]) / max(float(release.n), 1.0))
    counted = next((q.released for q in release.parts if q.label == "clipped rows"), None)
    if part.get("clipped_rows_counted") and counted is not None:  # the noisy count, where it is of the same rows
        p = min(p, max(counted["clipped_fraction"] + z_value(level) * counted["clipped_fraction_noise_sd"], 0.0))
    delta = np.abs(np.asarray(part["offset"], dtype=float))
    # a row of C: ||x - m|| - R_m <= ||x - c|| + ||delta|| - R_m <= (R + ||delta|| - R_m)_+ + (||x - c|| - R)_+
    gap = max(float(release.row_norm) + float(np.linalg.norm(delta)) - float(part["row_norm"]), 0.0)
    norm = p * gap + _beyond_bound(release, second_upper, level)
    # the weights 1 - R_m/||x - m|| in [0, 1] average at most norm / R_m over the rows: they replace p where smaller
    q = min(p, norm / float(part["row_norm"]))
    each = np.sqrt(q * np.maximum(np.asarray(second_upper, dtype=float), 0.0)) + q * delta
    return np.minimum(each, norm)


def _beyond_bound(release, second_upper, level):
    r"""A bound on :math:`\frac1n\sum_i (\|x_i - c\| - R)_+` from the clipping-excess release (``inf`` without one):
    each such row loses :math:`\|x - c\|^2 - R^2 \ge 2R(\|x - c\| - R)` of the trace of the second moment
    about ``c``, whose released band part is taken at its upper end (no more than the second moment's trace)."""
    lost = next((q.released for q in release.parts if q.label == "clipping excess"), None)
    if lost is None:
        return np.inf
    each = np.asarray(lost["variance_lost"], dtype=float)
    trace = float(np.sum(each)) + z_value(level) * float(lost["noise_sd"]) * np.sqrt(each.size)
    trace = min(max(trace, 0.0), float(np.sum(np.maximum(second_upper, 0.0))))
    return trace / (2.0 * float(release.row_norm))


def centre_bias_widths(bound, s, second_upper, at):
    """``(below, above)``: how far :math:`\\beta_i e_j + e_i \\beta_j - \\beta_i \\beta_j` can move each entry
    down and up at level ``at`` (``|e_j| <= z s``), never more than ``|e_i e_j| + sqrt(M_ii M_jj)`` (what
    :math:`(\\bar x - c)_i (\\bar x - c)_j` can be at most, :math:`M_{jj} \\ge (\\bar x - c)_j^2`). Zero without a
    bound. On the diagonal :math:`2 \\beta_j e_j - \\beta_j^2`: down by both, up by the first only. ``below`` is (d, d);
    ``above`` equals it off the diagonal and is returned as its diagonal (d,) alone (:func:`add_above`)."""
    d = len(second_upper)
    if bound is None:  # zeros that take no memory (a d x d array is 800 MB at d = 10 000)
        return np.broadcast_to(0.0, (d, d)), np.zeros(d)
    E = np.full(d, z_value(at) * float(s or 0.0))
    u = np.maximum(second_upper, 0.0)
    # min(cross + square, cap), cross = b e^T + e b^T, square = b b^T, cap = e e^T + sqrt(u u^T), written in
    # place a block of rows at a time (one d x d array, not seven; the same bits)
    below = np.empty((d, d))
    for rows in _row_blocks(d):
        part = np.multiply.outer(bound[rows], E)
        part += np.multiply.outer(E[rows], bound)
        part += np.multiply.outer(bound[rows], bound)
        cap = np.multiply.outer(u[rows], u)
        np.sqrt(cap, out=cap)
        cap += np.multiply.outer(E[rows], E)
        np.minimum(part, cap, out=below[rows])
    return below, np.minimum(bound * E + E * bound, E * E + np.sqrt(u * u))  # above, on the diagonal: cross alone


def _row_blocks(d, elements=1 << 20):
    """Slices of rows of a (d, d) array, about ``elements`` entries each (8 MB): a block's temporaries stay small."""
    step = max(1, elements // max(d, 1))
    return [slice(lo, min(lo + step, d)) for lo in range(0, d, step)]


def add_above(M, below, above_diagonal):
    """``M += above`` in place, ``above`` being :func:`centre_bias_widths`'s ``below`` off the diagonal and
    ``above_diagonal`` on it: no second d x d array (800 MB at d = 10 000); the same bits as adding it."""
    idx = np.diag_indices(M.shape[0])
    diagonal = M[idx] + above_diagonal
    M += below
    M[idx] = diagonal


def eigenvalue_centre_bias(bound, s, W, at):
    """``(below, above)`` (k,): how far the centre's bias moves each eigenvalue along the directions ``W`` (k, d),
    standardised units: :math:`2 (w\\cdot\\beta)(w\\cdot e) - (w\\cdot\\beta)^2` with :math:`|w\\cdot\\beta| \\le
    \\sum_j |w_j| B_j` and :math:`|w\\cdot e| \\le z s \\|w\\|`. Zero without a bound."""
    if bound is None:
        return np.zeros(len(W)), np.zeros(len(W))
    b = np.abs(W) @ bound
    e = z_value(at) * float(s or 0.0) * np.linalg.norm(W, axis=1)
    return 2.0 * b * e + b**2, 2.0 * b * e
