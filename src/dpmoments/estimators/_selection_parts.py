"""The parts of :class:`~dpmoments.estimators.PrivateModelSelection` besides the selection: R, sigma2 and the refit.

Each is a share of the plan's epsilon (``_selection_plan.py``), pure epsilon-DP by Laplace noise: the
private L1 radius ``R`` and the refit from noisy moments ``X'X/n`` and ``X'y/n`` of clipped columns,
the private ``sigma2`` from the noisy certified criterion of the full model. Drawn from the fit's
generator in the fit's order (radius, sigma2, then the refit after the selection).
"""

import math

import numpy as np

from ..mechanisms import laplace_noise, symmetric_matrix_noise
from ..solvers.irls import solve_weighted
from ..solvers.l1_ball import l1_ball_least_squares
from ._conventions import noise_entry
from ._irls_error import solve_se
from ._selection_plan import R_SHARE
from .uncertainty import NoiseLaw

__all__ = ["SelectionPartsMixin"]


class SelectionPartsMixin:
    """The private radius, sigma2 and refit of a model selection, and their lines of its report's ``noise``."""

    def _noisy_moments(self, G, b, n, cols, eps, rng):
        """Laplace on the upper triangle of G[cols]/n and b[cols]/n; returns (G~, b~, floor, Laplace scale)."""
        k = len(cols)
        scale = self._moments_sensitivity(k, n) / eps
        Gs, bs = G[np.ix_(cols, cols)] / n, b[cols] / n
        if math.isinf(eps):
            return Gs, bs, 0.0, 0.0
        E = symmetric_matrix_noise(k, scale, rng, distribution="laplace")
        return Gs + E, bs + laplace_noise(k, scale, rng), 2.0 * math.sqrt(k) * scale * math.sqrt(2.0), scale

    def _moments_sensitivity(self, k, n):
        """L1 sensitivity of the upper triangle of ``X'X/n`` and of ``X'y/n`` on ``k`` clipped columns."""
        B, r = self.bounds_, self.response_bound_
        return (B * B * k * (k + 1) + 2.0 * B * k * r) / n

    def _radius(self, G, b, n, rng):
        if self.R != "private":
            return float(self.R)
        cols = list(range(b.size))
        eps = float(self.R_epsilon) if self.R_epsilon is not None else float(self.epsilon) * R_SHARE
        Gt, bt, floor, _ = self._noisy_moments(G, b, n, cols, eps, rng)
        beta, _ = solve_weighted(Gt, bt, floor)
        lo, hi = self.R_range
        return float(min(max(np.abs(beta).sum(), lo), hi))

    def _sigma2(self, G, b, c, n, delta_q, tau, spread, rng):
        if self.sigma2 != "private":
            return float(self.sigma2)
        q_full = self._certified(G, b, c, [tuple(range(b.size))], tau, spread)[0] / n
        eps = float(self.sigma2_epsilon)
        noisy = q_full if math.isinf(eps) else q_full + float(laplace_noise((), delta_q / (n * eps), rng))
        return float(min(max(noisy, 1e-12), self.response_bound_**2))

    def _refit(self, G, b, c, n, rng):
        cols = list(self.selected_)
        coef = np.zeros(b.size)
        if not cols:
            return coef
        Gt, bt, floor, scale = self._noisy_moments(G, b, n, cols, float(self.refit_epsilon), rng)
        law = NoiseLaw("laplace", scale) if scale > 0 else NoiseLaw("none", 0.0)
        self.coef_se_[cols] = solve_se(bt, Gt, floor, law, law)[1]  # first order, the L1 constraint ignored
        lam, Q = np.linalg.eigh(0.5 * (Gt + Gt.T))
        Gp = (Q * np.maximum(lam, floor)) @ Q.T
        coef[cols] = l1_ball_least_squares(Gp, bt, 0.0, self.R_).coef
        scale = self._map.y_half / self._map.half  # back in the user's units (ranged columns were scaled)
        self.coef_se_ *= scale
        return coef * scale

    def _parts_noise(self, parts, delta_q, n):
        """The report's ``noise`` lines of the private R, sigma2 and refit, those used."""
        lines = []
        if "R" in parts:
            sens = self._moments_sensitivity(self.n_features_in_, n)
            lines.append(noise_entry("moments X'X/n, X'y/n (private R)", "laplace", sens / parts["R"],
                                     sensitivity=sens, sensitivity_norm="l1"))
        if "sigma2" in parts:
            lines.append(noise_entry("Q_R(full)/n (private sigma2)", "laplace", delta_q / n / parts["sigma2"],
                                     sensitivity=delta_q / n, sensitivity_norm="l1"))
        if "refit" in parts and self.selected_:
            sens = self._moments_sensitivity(len(self.selected_), n)
            lines.append(noise_entry("moments of the selected columns (refit)", "laplace", sens / parts["refit"],
                                     sensitivity=sens, sensitivity_norm="l1"))
        return lines
