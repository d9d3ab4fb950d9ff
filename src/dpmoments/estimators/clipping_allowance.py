r"""The off-diagonal allowance for an undetected clipping loss, its noise combined with the entry's in quadrature.

Clipping removed a positive semi-definite :math:`D` from the second moment; where no column's loss stands
out of its noise, an off-diagonal entry is taken to lose, as clipping shrinks elliptical rows,
:math:`D_{ij} \approx \rho_{ij}\sqrt{D_{ii} D_{jj}}`, towards a larger :math:`|S_{ij}|`
(:mod:`~dpmoments.estimators.error_budget`). Each :math:`D_{jj}` is bounded from released values in one of two
ways, each a released value less its own noise, so *surely* (not only at a level):

- by the clipping-excess release, :math:`D_{jj} = \ell_j - \nu_j \le \ell_j^+ + \tau_j Z_j` (the loss's noise
  :math:`\nu_j = -\tau_j Z_j`, :math:`\tau_j` its sd);
- by the loss cap (:func:`~dpmoments.estimators.error_budget.loss_cap`), :math:`D_{jj} \le 3 V_j = 3 (r_j - N_{jj})`
  with :math:`r_j` the released variance (the centre's mean removed) and :math:`N_{jj} = -\sigma_j Z_j` its noise
  (the centre's :math:`e_j^2 \ge 0` only adds to :math:`r_j`).

Either is :math:`D_{jj} \le c_j + \tau_j Z_j`, whichever has the smaller upper end :math:`U_j = c_j + z\tau_j` at
the level (as before). Before, the allowance was :math:`|\rho_{ij}|\sqrt{U_i U_j}`, added to the entry's
half-width: it took the entry's own noise and both variances' noises at their extremes at once. They are
independent of the entry's noise (a different entry of the noise matrix, or another release), so, with
:math:`\sqrt{ab} \le (\lambda a + b/\lambda)/2` for every :math:`\lambda > 0`, taken at
:math:`\lambda = \sqrt{U_j/U_i}` (released values: post-processing),

.. math:: D_{ij} \le |\rho_{ij}| \Big(m_{ij} + \tfrac12 (\lambda\tau_i Z_i + \tau_j Z_j/\lambda)\Big),
          \qquad m_{ij} = \tfrac12 (\lambda c_i + c_j/\lambda),

a normal term of sd :math:`s_{ij} = \frac12\sqrt{\lambda^2\tau_i^2 + \tau_j^2/\lambda^2}` beside a fixed shift: the
shift :math:`|\rho_{ij}| m_{ij}^+` is added to the end towards which the entry moves, and
:math:`z\,|\rho_{ij}|\,s_{ij}` in quadrature with that end's half-width. At :math:`Z = z` the bound is
:math:`|\rho_{ij}|\sqrt{U_i U_j}`, the old allowance, so the quadrature is never wider. Gaussian noise only (the
entries of a Wishart matrix are not independent; Laplace tails at the false-coverage-rate levels are longer than a
normal's): other laws keep the plain sum.

**Which way.** The shape :math:`\rho_{ij}` is read off the released matrix, whose sign the noise and the private
centre can turn: on grunfeld (220 rows, epsilon 4) the released ``invest`` x ``capital`` came out negative in 3 fits
of 20 (-23 000 to -3 000; the clipped rows' value about +20 000, the full-data one +41 700, rows beyond the outer
bound carrying the rest), and the allowance widened the lower end only. Where the released entry is within its
noise and the centre's reach of 0 (:func:`unclear_signs`: :math:`|\hat S_{ij}| \le z\sigma_{ij} + r_i r_j`,
:math:`r = z s + B` the centre's noise at the level and its own clipping bias bound, as :math:`(b - e)(b - e)^\top`
adds), its sign is not known, nor which way the loss moves it: the allowance widens both ends (by the released
:math:`|\rho_{ij}|`: taking its size at 1, the positive semi-definite bound, held one more of grunfeld's 20 fits and
doubled anes96's widths). This is done where the loss may be large and of another shape than the clipped rows':
where rows beyond the outer bound are likely (their noisy count stands out at one-sided 90%) or the released share
of clipped rows is a tenth or more (:func:`~dpmoments.estimators.error_budget.entries_of_unclear_sign`); elsewhere,
on a Gaussian table, the loss is small and both ends cost 10-40% of the widths. The draws behind the non-linear
estimates (:mod:`~dpmoments.estimators.error_draws`) draw such an entry's loss at either sign and full size. An
unclear entry's interval holds 0 or nearly; the false-coverage-rate selection sees the wider allowance (iris at
epsilon 4: 51 entries exclude 0 in 20 fits before, 42 after, none wrong either way). Released values only: no
rows.
"""

import numpy as np

from .uncertainty import row_blocks

__all__ = ["detected_parts", "elliptical_parts", "split_allowance", "towards_parts", "unclear_signs", "widen_block"]


def elliptical_parts(lost, lost_sd, cap_centre, cap_sd, z, z_loss=None):
    """``(c, tau, U)`` (d,): each column's loss bound ``D_jj <= c_j + tau_j Z_j`` (module docstring), from whichever
    of the clipping-excess release (``lost``, ``lost_sd``, its upper end at ``z_loss``, else ``z``) and the cap
    (``cap_centre`` and ``cap_sd``: ``3 r_j`` and ``3 sigma_j``, times the tail factor where the loss is) has the
    smaller upper end ``U`` (the cap's at ``z``), as the plain sum took it."""
    z_loss = z if z_loss is None else z_loss
    by_loss = np.maximum(lost, 0.0), np.broadcast_to(float(lost_sd), np.shape(lost))
    by_cap = np.asarray(cap_centre, dtype=float), np.asarray(cap_sd, dtype=float)
    loss_upper, cap_upper = by_loss[0] + z_loss * by_loss[1], by_cap[0] + z * by_cap[1]
    use_cap = cap_upper < loss_upper
    c = np.where(use_cap, by_cap[0], by_loss[0])
    tau = np.where(use_cap, by_cap[1], by_loss[1])
    return c, tau, np.maximum(np.minimum(cap_upper, loss_upper), 0.0)


def split_allowance(c, tau, upper, rows):
    """``(shift, sd)`` for the rows ``rows`` (a slice) of every entry: :math:`m_{ij}` and :math:`s_{ij}` (module
    docstring), before the factor :math:`|\\rho_{ij}|`. Where ``c_i`` or ``c_j`` is below 0 (a variance released below
    its noise) the plain :math:`\\sqrt{U_i U_j}` and no sd: the shift would be negative there, the plain one is
    near 0."""
    root = np.sqrt(np.maximum(upper, 1e-300))
    negative = np.asarray(c) < 0  # their entries take the plain bound below; 0 keeps tau / 1e-150 from overflowing
    a = np.where(negative, 0.0, c / root)  # lambda c_i = sqrt(U_j) a_i, c_j / lambda = sqrt(U_i) a_j; so with tau
    b = np.where(negative, 0.0, tau / root)
    shift = np.multiply.outer(a[rows], root) + np.multiply.outer(root[rows], a)
    shift *= 0.5
    sd = np.multiply.outer(b[rows] ** 2, upper) + np.multiply.outer(upper[rows], b**2)
    np.sqrt(sd, out=sd)
    sd *= 0.5
    plain = np.add.outer(negative[rows], negative)
    np.copyto(shift, np.multiply.outer(root[rows], root), where=plain)
    sd[plain] = 0.0
    return shift, sd


def unclear_signs(entries, noise_sd, reach, z, loss_upper=None):
    """(d, d) booleans: the off-diagonal entries whose sign the release does not settle, ``|entries_ij| <= z noise_sd
    + reach_i reach_j`` (module docstring; ``noise_sd`` the entries' noise sd, one number; ``reach`` (d,) the
    centre's ``z s + B``). ``loss_upper`` (d,): each column's clipping-loss upper end ``U``; an entry within the
    allowance ``|rho_ij| sqrt(U_i U_j)`` the loss may have moved it by is also unclear (its released sign may be the
    loss's own doing). Released values only."""
    d = entries.shape[0]
    reach = np.asarray(reach, dtype=float)
    out = np.empty((d, d), dtype=bool)
    if loss_upper is not None:  # sqrt(U_j / S_jj): |rho_ij| sqrt(U_i U_j) = |S_ij| a_i a_j
        ratio = np.sqrt(np.maximum(loss_upper, 0.0) / np.maximum(np.diagonal(entries), 1e-300))
    for rows in row_blocks(d):
        size = np.abs(entries[rows])
        room = z * float(noise_sd) + np.multiply.outer(reach[rows], reach)
        if loss_upper is not None:
            room += size * np.multiply.outer(ratio[rows], ratio)
        out[rows] = size <= room
    np.fill_diagonal(out, False)
    return out


def widen_block(lo_half, hi_half, part, z, either=False):
    """Combine the signed allowance sd ``part`` (a block of rows; positive: the upper end, negative: the lower one, 0:
    neither) in quadrature with the half-widths ``lo_half``, ``hi_half`` (views, written in place); ``either``: the
    block's entries of unclear sign (:func:`unclear_signs`), widened at both ends."""
    for half, side in ((hi_half, (part > 0) | either), (lo_half, (part < 0) | either)):
        np.sqrt(half**2 + (z * part) ** 2, out=half, where=side)


def detected_parts(lost, sd, upper, touched, variance_upper, variance_sd, tail, z, z_detect):
    """A detected column's row and column, ``|D_ij| <= sqrt(D_ii D_jj)`` on both sides: ``(c, tau, U)`` of
    :func:`elliptical_parts` (a shift and a normal part's noise, in quadrature on both sides), or ``(None, None,
    upper)`` for the plain ``sqrt(U_i U_j)`` (not Gaussian noise, or no column detected).

    ``lost``, ``sd`` and ``upper`` the losses, their noise sd and upper ends times the tail factor ``tail``."""
    if variance_sd is None or not touched.any():
        return None, None, upper
    cap_centre = 3.0 * tail * (variance_upper - z * variance_sd)
    return elliptical_parts(lost, sd, cap_centre, 3.0 * tail * variance_sd, z, z_loss=z_detect)


def towards_parts(lost, sd, cap, variance_upper, variance_sd, z):
    """An undetected loss off the diagonal, ``|rho_ij| sqrt(D_ii D_jj)`` towards a larger ``|entry|``: ``(c, tau, U)``
    of :func:`elliptical_parts`, or ``(None, None, U)`` for the plain sum ``|rho| sqrt(U_i U_j)``, ``U = min(lost+ +
    z sd, cap)`` (``variance_sd`` None: not Gaussian noise). ``lost``, ``sd`` the band's losses and noise sd, ``cap``
    three times ``variance_upper`` (each variance's upper end at ``z``); the correlations' factor is
    :class:`~.clipping_blocks.ClippingShifts`'."""
    if variance_sd is None:
        return None, None, np.minimum(np.maximum(lost, 0.0) + z * sd, cap)
    return elliptical_parts(lost, sd, 3.0 * (variance_upper - z * variance_sd), 3.0 * variance_sd, z)
