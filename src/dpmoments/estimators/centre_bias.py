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
the two bounds. ``|C|`` is at most the rows beyond the row bound ``R <= R_m`` drawn about ``m``: the draw's
target plus its rank error (``clipped_rows_at_most``: probability :math:`1 - e^{-5}`), a public function of
the draw's budget, and, where the row bound's noisy count is of the same location (the final mean about the
location the bound was drawn about), its one-sided upper end at the level.

**The mean's overflow release** (the ``"mean overflow"`` part, :mod:`dpmoments.moments.mean_overflow`):
the final mean clips at :math:`R_m = 2R`, and :math:`T`, the sum of the clipped rows' overflows
:math:`\|x - m\| - R_m` each capped at ``K``, is released; each weight is at most
:math:`\min(o, K)/\min(K, R_m)`, so :math:`q \le T_u / (n \min(K, R_m))` (``T_u`` its upper end at the
level), and :math:`\|\beta\| \le T_u/n` plus what rows beyond ``2R`` about ``c`` pull past the cap. Those
rows are judged as the variances judge them (``far``, from ``error_budget.far_columns``): where their count
stands out, no column takes :math:`T_u/n` as a bound; where it does not but does not rule them out, the
clipped columns do not; elsewhere every column does. No data is read here: a release's parts and public
values only.

**Across sites** (:mod:`dpmoments.multisite.analyses`) the second moment ``S`` and the mean ``a`` are both of the
rows clipped at ``R`` about the location ``m`` (the mean's part says ``second_moment_about="location"``), and the
release is :math:`S - a a^\top`. With :math:`y = x - m`, :math:`u = \bar y - \beta` (fixed) and :math:`a = u + e`,
the unclipped :math:`\frac1n\sum y y^\top - \bar y \bar y^\top` is the covariance, so each entry carries, beside
the clipping loss and the second moment's noise,

.. math:: \bar y \bar y^\top - a a^\top = u\beta^\top + \beta u^\top + \beta\beta^\top
          - (u e^\top + e u^\top) - e e^\top.

The bias's part, :math:`a\beta^\top + \beta a^\top - (e\beta^\top + \beta e^\top) + \beta\beta^\top`, is one
machine's plus :math:`|a_i| B_j + B_i |a_j|` (``a`` released); the noise's linear part is normal, of variance
:math:`s^2(u_i^2 + u_j^2)` (:func:`linear_noise_variance`), counted with the other normal parts; and
:math:`-e e^\top`, where one machine's law counts :math:`+e e^\top`, moves each entry by at most
:math:`2 E_i E_j` more. ``B`` is the bound above with :math:`\delta = 0` (the mean clipped where the second moment
did), ``M`` the second moment about ``m`` (the released entry plus :math:`a_j^2`, at its upper end), and ``C``
counted by the bound step's noisy histogram of :math:`\|x - m\|` (the same rows, the same location and scales:
its ``clipped_fraction``, at its one-sided upper end).
"""

import numpy as np

from .centre_bias_law import diagonal_increment, off_diagonal_increments
from .uncertainty import row_blocks, z_value

__all__ = ["add_above", "centre_bias_blocks", "centre_bias_bound", "centre_bias_widths", "eigenvalue_centre_bias",
           "linear_noise_variance", "location_offset", "CENTRE_BIAS_TEXT"]

CENTRE_BIAS_TEXT = ("the private mean's own clipping bias beta (x-bar - c = beta - e): |beta_j| <= B_j = "
                    "min(sqrt(q M_jj) + q |delta_j|, N), q at most the share of rows beyond the mean's bound (its "
                    "draw's target plus rank error, or its noisy count), M_jj the second moment about the centre at "
                    "its upper end, delta the mean's released step, N a bound on |beta| from the clipping-excess "
                    "release and the mean overflow release (the mean's clipped rows' overflow beyond its bound, "
                    "where rows beyond twice the row bound are not seen in the column); each entry widened by "
                    "B_i E_j + E_i B_j + B_i B_j, E the centre noise's quantile")


def _mean_part(release):
    return next((p.released for p in (release.parts or ()) if p.label == "mean"), None)


def centre_bias_bound(release, second_upper, level, far=None, with_norm=False):
    r"""``B`` (d,): bounds on :math:`|\beta_j|` (module docstring), standardised units; ``None`` where the release
    does not say how many rows the mean clipped (a public centre, a public bound).

    ``second_upper`` (d,): each column's unclipped second moment about the centre at its upper end. ``with_norm``:
    ``(B, (N, columns))`` instead, ``N`` the bound on the norm of ``beta`` restricted to ``columns`` (d,) booleans,
    ``inf`` where there is none (:func:`centre_bias_widths` reads it)."""
    part = _mean_part(release)
    if part is None or part.get("offset") is None:
        return None
    overflow, p = _overflow_bound(release, part, level), _clipped_share(release, part, level)
    if p is None and overflow is None:
        return None
    offset = np.asarray(part["offset"], dtype=float)
    if part.get("second_moment_about") == "location":  # across sites: both clipped about m (module docstring)
        second_upper, delta = np.asarray(second_upper, dtype=float) + offset**2, np.zeros_like(offset)
    else:
        delta = np.abs(offset)
    norm = np.inf
    if p is not None:
        # a row of C: ||x - m|| - R_m <= ||x - c|| + ||delta|| - R_m <= (R + ||delta|| - R_m)_+ + (||x - c|| - R)_+
        gap = max(float(release.row_norm) + float(np.linalg.norm(delta)) - float(part["row_norm"]), 0.0)
        norm = p * gap + _beyond_bound(release, second_upper, level)
    p = 1.0 if p is None else p
    # the weights 1 - R_m/||x - m|| in [0, 1] average at most norm / R_m over the rows: they replace p where smaller
    q = min(p, norm / float(part["row_norm"]))
    if overflow is None:
        bound = np.minimum(np.sqrt(q * np.maximum(second_upper, 0.0)) + q * delta, norm)
        return (bound, (norm, np.ones(len(bound), dtype=bool))) if with_norm else bound
    cap = _overflow_cap(release)
    if cap > 0:  # the weights average at most T / (n min(cap, R_m)), whatever lies beyond the outer bound
        q = min(p, overflow / min(float(part["row_norm"]), cap))
    each = np.sqrt(q * np.maximum(np.asarray(second_upper, dtype=float), 0.0)) + q * delta
    # ||beta|| <= T / n plus what rows beyond the outer bound pull past the cap: not for the columns they may load
    far = np.zeros(len(each), dtype=bool) if far is None else np.asarray(far, dtype=bool)
    bound = np.where(far, each, np.minimum(each, min(norm, overflow)))
    return (bound, (min(norm, overflow), ~far)) if with_norm else bound


def _overflow_bound(release, part, level):
    """The ``"mean overflow"`` release's upper end over ``n`` (:mod:`dpmoments.moments.mean_overflow`), where it is
    of the mean's own bound; else ``None``."""
    released = next((q.released for q in (release.parts or ()) if q.label == "mean overflow"), None)
    if released is None or part is None or released["row_norm"] != part.get("row_norm"):
        return None
    upper = released["overflow_sum"] + z_value(level) * released["overflow_noise_sd"]
    return max(upper, 0.0) / max(float(release.n), 1.0)


def _overflow_cap(release):
    released = next((q.released for q in (release.parts or ()) if q.label == "mean overflow"), None)
    return float(released["cap"]) if released is not None else np.inf


def _clipped_share(release, part, level):
    """The most rows the mean clipped, as a share of ``n``: its draw's target plus rank error and, where a noisy
    count is of the same rows (the final mean's ``"clipped rows"`` part; across sites the bound step's count, in the
    mean's own part), that count's one-sided upper end at the level; ``None`` where neither is released."""
    at_most = part.get("clipped_rows_at_most")
    p = None if at_most is None else min(1.0, float(at_most) / max(float(release.n), 1.0))
    counted = part if "clipped_fraction" in part else None
    # the count at a reused bound (moments/reused_bound.py) is of the rows beyond it about the mean's own centre
    if counted is None and (p is not None or part.get("row_bound_reused")) and part.get("clipped_rows_counted"):
        counted = next((q.released for q in release.parts if q.label == "clipped rows"), None)
    if counted is not None:
        upper = max(counted["clipped_fraction"] + z_value(level) * counted["clipped_fraction_noise_sd"], 0.0)
        p = upper if p is None else min(p, upper)
    return p


def location_offset(release):
    r"""``a`` (d,), the mean's released step from the location, where the release is :math:`S - a a^\top` of moments
    about the location (across sites: module docstring), else ``None``."""
    part = _mean_part(release)
    if part is None or part.get("second_moment_about") != "location":
        return None
    return np.asarray(part["offset"], dtype=float)


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


def centre_bias_widths(bound, s, second_upper, at, offset=None, joint=None):
    r"""``(below, above)``: how far :math:`\beta_i e_j + e_i \beta_j - \beta_i \beta_j` can move each entry
    down and up at level ``at`` (``|e_j| <= z s``), never more than ``|e_i e_j| + sqrt(M_ii M_jj)`` (what
    :math:`(\bar x - c)_i (\bar x - c)_j` can be at most, :math:`M_{jj} \ge (\bar x - c)_j^2`). Zero without a
    bound. On the diagonal :math:`2 \beta_j e_j - \beta_j^2`: down by both, up by the first only. ``below`` is (d, d);
    ``above`` equals it off the diagonal and is returned as its diagonal (d,) alone (:func:`add_above`).

    ``offset`` (:func:`location_offset`, across sites): both ends also move by the bias's term linear in ``a``,
    :math:`|a_i| B_j + B_i |a_j|`, and by :math:`2 E_i E_j` (the noise's :math:`-e e^\top` where one machine's
    law counts :math:`+e e^\top`), the cap growing by as much with ``M`` about the location; the noise's linear
    term is a normal part (:func:`linear_noise_variance`).

    ``joint`` (Gaussian centre noise): ``(N, columns)`` of :func:`centre_bias_bound` (``with_norm``). Off the
    diagonal :math:`\beta_i e_j + e_i \beta_j` is then one normal of sd :math:`s\sqrt{\beta_i^2 + \beta_j^2}`, at most
    :math:`s \min(\sqrt{B_i^2 + B_j^2}, N)` (``N`` where both columns are under it), so it is within ``E`` times
    that at the level, where ``|e_i|, |e_j| <= E`` took :math:`E (B_i + B_j)`; and
    :math:`|\beta_i\beta_j| \le \min(B_i B_j, N^2/2)` (:math:`\beta_i^2 + \beta_j^2 \le N^2`). ``None``: the sum."""
    d = len(second_upper)
    below_of, above_diagonal = centre_bias_blocks(bound, s, second_upper, at, offset, joint)
    if bound is None and offset is None:  # zeros that take no memory (a d x d array is 800 MB at d = 10 000)
        return np.broadcast_to(0.0, (d, d)), above_diagonal
    below = np.empty((d, d))
    for rows in row_blocks(d):
        below[rows] = below_of(rows)
    return below, above_diagonal


def centre_bias_blocks(bound, s, second_upper, at, offset=None, joint=None, normal=None):
    """``(below(rows), above_diagonal)``: :func:`centre_bias_widths`, its ``below`` made for a block of rows ``rows``
    (a slice) when asked (the error budget's intervals read it a block at a time: no d x d array; the same bits).

    ``normal`` (d, d): the normal parts' variances, where the entries' intervals are the law of those with the
    centre's :math:`e e^\top` (:mod:`.centre_law`). With ``joint`` (Gaussian noise), one machine's centre and
    ``s > 0``, each width is then the smaller of the sum above and what counting the bias in that law adds
    (:mod:`.centre_bias_law`: the worst case over the box, exact for the law); the diagonal's upper end does not
    move."""
    d = len(second_upper)
    if normal is not None and joint is not None and offset is None and bound is not None and float(s or 0.0) > 0:
        return _law_blocks(bound, s, second_upper, at, joint, normal)
    if bound is None and offset is None:
        return (lambda rows: np.broadcast_to(0.0, (rows.stop - rows.start, d))), np.zeros(d)
    E = np.full(d, z_value(at) * float(s or 0.0))
    if bound is None:  # across sites without a bound: -e e^T where one machine has +e e^T (its law is counted)
        return (lambda rows: 2.0 * np.multiply.outer(E[rows], E)), 2.0 * (E * E)
    if offset is not None:
        offset = np.abs(offset)
    u = np.maximum(second_upper, 0.0) + (0.0 if offset is None else offset**2)

    def below(rows):  # min(cross + square, cap), cross = b e^T + e b^T, square = b b^T, cap = e e^T + sqrt(u u^T)
        if joint is None:
            part = np.multiply.outer(bound[rows], E)
            part += np.multiply.outer(E[rows], bound)
            part += np.multiply.outer(bound[rows], bound)
        else:
            part = _joint_part(bound, E, joint, rows)
        cap = np.multiply.outer(u[rows], u)
        np.sqrt(cap, out=cap)
        cap += np.multiply.outer(E[rows], E)
        if offset is not None:
            # |a_i| B_j + B_i |a_j|: the bias's term linear in a
            part += np.multiply.outer(offset[rows], bound) + np.multiply.outer(bound[rows], offset)
            part += 2.0 * np.multiply.outer(E[rows], E)
            cap += np.multiply.outer(offset[rows], offset) + 2.0 * np.multiply.outer(E[rows], E)
        return np.minimum(part, cap, out=part)

    diagonal = bound * E + E * bound + (0.0 if offset is None else 2.0 * offset * bound + 2.0 * E * E)
    cap_diagonal = E * E + np.sqrt(u * u) + (0.0 if offset is None else offset**2 + 2 * E * E)
    return below, np.minimum(diagonal, cap_diagonal)  # above, on the diagonal: the cross term alone


def _law_blocks(bound, s, second_upper, at, joint, normal):
    """:func:`centre_bias_blocks` where the bias is counted in the centre's law (:mod:`.centre_bias_law`): each entry's
    width the smaller of the sum and the law's increment (both hold at the level: so does the smaller)."""
    summed, summed_above = centre_bias_blocks(bound, s, second_upper, at, joint=joint)
    if not _material(summed, normal, s, at):
        return summed, summed_above
    norm, columns = joint

    def shift_bound(rows):  # |beta_i + beta_j| <= B_i + B_j, and <= sqrt(2) N where both columns are under N
        out = np.add.outer(bound[rows], bound)
        if np.isfinite(norm):
            np.minimum(out, np.sqrt(2.0) * norm, out=out, where=np.multiply.outer(columns[rows], columns))
        return out

    alpha = 1.0 - at
    off_diagonal = off_diagonal_increments(normal, s, shift_bound, alpha,
                                           lambda rows: np.minimum.outer(bound[rows], bound))
    on_diagonal = diagonal_increment(np.diagonal(normal), s, bound, alpha)

    def below(rows):
        out = summed(rows)
        law = off_diagonal(rows)
        own = np.arange(rows.start, rows.stop)
        law[own - rows.start, own] = on_diagonal[rows]
        return np.fmin(out, law, out=out)  # a law that could not be solved (NaN: an infinite bound) keeps the sum

    return below, np.zeros(len(bound))  # the diagonal's upper end: q_lo is lowest at beta = 0


def _material(summed, normal, s, at):
    """Whether the sum adds 5% or more to some entry's half-width (taken as normal, ``z sqrt(v + s^4)``): below, the
    law could narrow no interval by more than that, and solving it costs as much as the rest of the budget (on
    simulated Gaussian rows the centre's bias bound adds 0-3%)."""
    z = z_value(at)
    for rows in row_blocks(len(normal)):
        if np.any(summed(rows) >= 0.05 * z * np.sqrt(np.maximum(normal[rows], 0.0) + float(s) ** 4)):
            return True
    return False


def _joint_part(bound, E, joint, rows):
    """``E min(sqrt(B_i^2 + B_j^2), N_ij) + min(B_i B_j, N_ij^2 / 2)`` for the rows ``rows`` (``centre_bias_widths``'s
    ``joint``; ``N_ij`` is ``N`` where both columns are under it, else none)."""
    norm, columns = joint
    both = np.multiply.outer(columns[rows], columns)
    linear = np.sqrt(np.add.outer(bound[rows] ** 2, bound**2))
    product = np.multiply.outer(bound[rows], bound)
    if np.isfinite(norm):
        np.minimum(linear, norm, out=linear, where=both)
        np.minimum(product, norm**2 / 2.0, out=product, where=both)
    own = np.arange(rows.start, rows.stop)  # on the diagonal 2 beta_j e_j, of sd 2 B_j s, and beta_j^2 <= B_j^2
    linear[own - rows.start, own], product[own - rows.start, own] = 2.0 * bound[own], bound[own] ** 2
    linear *= E[rows][:, None]
    linear += product
    return linear




def add_above(M, below, above_diagonal):
    """``M += above`` in place, ``above`` being :func:`centre_bias_widths`'s ``below`` off the diagonal and
    ``above_diagonal`` on it: no second d x d array (800 MB at d = 10 000); the same bits as adding it."""
    idx = np.diag_indices(M.shape[0])
    diagonal = M[idx] + above_diagonal
    M += below
    M[idx] = diagonal


def linear_noise_variance(offset, s):
    r"""Across sites, the variance (d, d) of the noise's term linear in the location's offset,
    :math:`-(u_i e_j + e_i u_j)`, :math:`u = \bar y - \beta = a - e` (module docstring): :math:`s^2 (u_i^2 + u_j^2)`
    off the diagonal and :math:`4 s^2 u_j^2` on it, with :math:`|u_j|` taken as :math:`|a_j| + s` (:math:`a_j^2 - s^2`
    estimates :math:`u_j^2` without bias). A normal part, added in quadrature with the second moment's noise."""
    u2 = (np.abs(np.asarray(offset, dtype=float)) + float(s or 0.0)) ** 2
    out = np.add.outer(u2, u2)
    out[np.diag_indices(u2.size)] *= 2.0
    out *= float(s or 0.0) ** 2
    return out


def eigenvalue_centre_bias(bound, s, W, at, offset=None, joint=None):
    r"""``(below, above)`` (k,): how far the centre's bias moves each eigenvalue along the directions ``W`` (k, d),
    standardised units: :math:`2 (w\cdot\beta)(w\cdot e) - (w\cdot\beta)^2` with :math:`|w\cdot\beta| \le
    \sum_j |w_j| B_j` and :math:`|w\cdot e| \le z s \|w\|`. Zero without a bound. ``offset`` (across sites) adds
    :math:`2 |w\cdot a| \sum_j |w_j| B_j + 2 z^2 s^2 \|w\|^2` to both (:math:`2 (w\cdot a)(w\cdot\beta)` and
    :math:`-(w\cdot e)^2`, where one machine's law counts :math:`+(w\cdot e)^2`).

    ``joint``: ``(N, columns)`` of :func:`centre_bias_bound` (``with_norm``), the norm of :math:`\beta` over
    ``columns`` at most ``N``: then also :math:`|w\cdot\beta| \le N \|w_{columns}\| + \sum_{j \notin columns}
    |w_j| B_j` (Cauchy-Schwarz), the smaller taken. A component spread over many columns sums every column's bound in
    the first; on digits (64 columns) it was 15 times the noise-only half-width of the eigenvalue."""
    if bound is None and offset is None:
        return np.zeros(len(W)), np.zeros(len(W))
    b = np.zeros(len(W)) if bound is None else np.abs(W) @ bound
    if bound is not None and joint is not None and np.isfinite(joint[0]):
        columns = np.asarray(joint[1], dtype=bool)
        by_norm = joint[0] * np.linalg.norm(W[:, columns], axis=1) + np.abs(W[:, ~columns]) @ bound[~columns]
        b = np.minimum(b, by_norm)
    e = z_value(at) * float(s or 0.0) * np.linalg.norm(W, axis=1)
    linear = 0.0 if offset is None else 2.0 * np.abs(W @ offset) * b + 2.0 * e**2
    return 2.0 * b * e + b**2 + linear, 2.0 * b * e + linear
