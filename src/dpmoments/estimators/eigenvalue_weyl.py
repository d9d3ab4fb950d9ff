r"""The lower end of PCA's eigenvalue intervals where the private centre's error may drive a component (Weyl).

About a private centre :math:`c = \bar x + e` the second moment is :math:`S + g g^\top` (:math:`g = D e` in the
data's units, ``D`` the column scales; plus the centre's clipping bias :math:`D\beta` where one is bounded). The
first-order budget (:mod:`.eigenvalue_budget`) counts :math:`(w^\top g)^2` as of a direction ``w`` independent of
``e``: false exactly where the rank-one term is what the component follows. At d = 1001, 2000 rows of N(0, I) and
epsilon 1, :math:`\|g\|^2 \approx 1280` and the top released component followed ``e``: its interval [354, 1e4] left
out the population eigenvalue 1. Weyl (:math:`g g^\top` positive semi-definite, rank one) holds whatever ``w`` is:
:math:`\lambda_k(S) \in [\lambda_k(S + g g^\top) - \|g\|^2, \lambda_k(S + g g^\top)]`, with :math:`\|g\|^2` bounded
by :func:`~.centre_law.centre_norm_bound`; and by interlacing :math:`\lambda_k(S) \ge \lambda_{k+1}(S + g g^\top)`,
the next component's lower end. The first-order end stands only where the term cannot reorder the
spectrum: where :math:`\|g\|^2` is under half the component's released eigengaps, and even there it gives up the
second-order shift :math:`\|g\|^4 / \mathrm{gap}`. Released values, public scales only: no rows.

**Across sites** the release is :math:`S_m - a a^\top` (:mod:`.centre_bias`: ``S_m`` the second moment about the
location ``m``, ``a`` the mean's released step, :math:`\bar y = \bar x - m = a + \delta`, :math:`\delta = \beta - e`),
so the truth :math:`S_m - \bar y \bar y^\top` is the release less :math:`P = a\delta^\top + \delta a^\top +
\delta\delta^\top`, whose spectral norm is at most :math:`\|D\delta\|^2 + 2\|Da\|\,\|D\delta\|` in the data's
units (``a`` released; :math:`\|D\delta\| \le \|g\|`'s bound): Weyl's lower end and the gap rule read that where
one machine reads :math:`\|g\|^2` (``offset_norm`` :math:`= \|Da\|`). Interlacing holds as it is (truth plus
:math:`\bar y \bar y^\top` is the release plus :math:`a a^\top`, above the release). The sites' centre noise is
Gaussian (each site's share summed: a zCDP release), so :func:`~.centre_law.centre_norm_bound` bounds it as on one
machine.
"""

import numpy as np

from .centre_law import centre_norm_bound
from .uncertainty import z_value

__all__ = ["WeylCentre", "half_width"]

# Of the lower tail's (1 - level) / 2, the share spent on the centre's norm; the rest (noise, sampling) keeps 0.9
NORM_TAIL_SHARE = 0.1


def half_width(noise_half, z_ratio, z_at, se, weak, edge, variance):
    """An eigenvalue interval's half-width at ``z_at``: the noise-only one (``noise_half``, exact for its law at the
    budget's level) scaled by ``z_ratio`` where it is the wider, else ``z_at se``; where the signal-to-noise is
    ``weak``, at least the noise's spectral-norm ``edge`` (Weyl) plus ``z_at`` sds of the other parts
    (``variance``)."""
    half = np.maximum(noise_half * z_ratio, z_at * se)
    return np.where(weak, np.maximum(half, edge + z_at * np.sqrt(variance)), half)


class WeylCentre:
    """Lower ends of the eigenvalue intervals valid whichever way the centre's error turns the components."""

    def __init__(self, s, scales, noise_interval, noise_se, sampling_var, edge, weak, level, gaps, beta_norm=0.0,
                 offset_norm=0.0):
        self.s, self.weights = float(s), np.asarray(scales, dtype=float) ** 2
        self.noise_half = (noise_interval[1] - noise_interval[0]) / 2
        self.centre = (noise_interval[0] + noise_interval[1]) / 2  # the released value's: nothing taken off
        self.noise_se, self.sampling_var = np.asarray(noise_se, dtype=float), np.asarray(sampling_var, dtype=float)
        self.se = np.sqrt(self.noise_se**2 + self.sampling_var)
        self.edge, self.weak, self.z = np.broadcast_to(edge, self.centre.shape), weak, z_value(level)
        self.gaps, self.beta_norm, self.offset_norm = gaps, float(beta_norm), float(offset_norm)

    def norm_bound(self, at):
        """:math:`\\|g\\|^2` at most this with probability ``1 - NORM_TAIL_SHARE (1 - at) / 2`` (across sites the
        bound on :math:`\\|P\\|`, :math:`r^2 + 2 \\|Da\\| r` with ``r`` the bound on :math:`\\|g\\|`: module docstring)."""
        r = np.sqrt(centre_norm_bound(self.s, self.weights, NORM_TAIL_SHARE * (1.0 - at) / 2.0)) + self.beta_norm
        return r**2 + 2.0 * self.offset_norm * r  # one machine: r**2, as before

    def lower(self, at, first_order):
        """The lower ends at level ``at``: the larger of Weyl's and interlacing's, or of those and the first-order one
        (``first_order``, less the second-order shift) where the centre's term is under half the eigengaps."""
        rest = 1.0 - (1.0 - NORM_TAIL_SHARE) * (1.0 - at)  # the noise and sampling's level, the norm's share spent
        z_rest = z_value(rest)
        q = self.norm_bound(at)
        weyl = self.centre - self._half(z_rest, self.se, self.sampling_var) - q
        clear = self.gaps > 2.0 * q
        with np.errstate(divide="ignore"):
            second = np.where(clear, q**2 / self.gaps, np.inf)
        valid = np.maximum(weyl, self._interlaced(z_rest))
        return np.maximum(np.where(clear, np.maximum(first_order - second, valid), valid), 0.0)

    def _half(self, z_at, se, sampling_var, which=slice(None)):
        """The noise-and-sampling half-width of the components ``which`` at ``z_at`` (the budget's rule)."""
        return half_width(self.noise_half[which], z_at / self.z, z_at, se, self.weak[which], self.edge[which],
                          sampling_var)

    def _interlaced(self, z_at):
        """Interlacing (a rank-one positive semi-definite term): ``lambda_k(S) >= lambda_{k+1}(S + g g')``, whatever
        ``g``: the next component's noise lower end, less component k's sampling (``-inf`` for the last)."""
        out = np.full(len(self.centre), -np.inf)
        if len(out) > 1:
            sampling = self.sampling_var[:-1]
            se = np.sqrt(self.noise_se[1:] ** 2 + sampling)
            out[:-1] = self.centre[1:] - self._half(z_at, se, sampling, slice(1, None))
        return out

    def clear(self, at):
        """Which components keep the first-order lower end (the centre's term under half their eigengaps)."""
        return self.gaps > 2.0 * self.norm_bound(at)
