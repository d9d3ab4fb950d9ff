"""Model selection from a release already paid for (e.g. across sites): post-processing, no new cost."""

import math

import numpy as np

from .._validation import check_nonnegative, check_positive
from ..moments import Release, project_psd, symmetrise_matrix
from ..solvers.irls import auto_psd_floor, solve_weighted
from ..solvers.l1_ball import l1_ball_least_squares
from ._conventions import all_or_nothing, privacy_report, release_input, release_noise
from ._selection_plan import candidate_family
from ._uncertainty_models import selection_stability
from .uncertainty import noise_law

__all__ = ["SelectionReleaseMixin"]

# fit_release redraws the release this many times to say how stable its choice is, fewer (down to 10) where
# the candidates would need more than _STABILITY_SOLVES solves in all (about 70 us each).
_STABILITY_DRAWS, _STABILITY_SOLVES = 50, 100_000


class SelectionReleaseMixin:
    """``fit_release``: select from a released second moment of ``(x, y)``."""

    def _release_scores(self, release, family):
        """``(fits, phi, scores)`` of every candidate from a release of the second moment of ``(x, y)``."""
        M, _ = project_psd(release.second_moment, 0.0)
        n, d = release.n, release.n_features - 1
        G, b, c = n * M[:d, :d], n * M[:d, d], float(n * M[d, d])
        fits = [l1_ball_least_squares(G, b, c, self.R_, support=m) for m in family]
        if self.phi == "theorem":  # no selection noise is added here: the BIC with the released residual variance
            phi = l1_ball_least_squares(G, b, c, self.R_).objective / n * math.log(n)
        else:
            phi = self.sigma2_ * math.log(n) if self.phi == "bic" else float(check_nonnegative(self.phi, "phi"))
        return fits, phi, np.array([f.objective for f in fits]) + phi * np.array([len(m) for m in family])

    def _release_radius(self, release):
        """``R="private"`` from a release: the L1 norm of the full model's fit to its moments, clamped to ``R_range``.

        The single-site draw (``fit``) solves the same floored normal equations on moments it noises for the
        purpose; here the release's noise is already there, so the radius is post-processing of it.
        """
        M, d = release.second_moment, release.n_features - 1
        floor = auto_psd_floor(d, noise_law(release).sd)
        beta, _ = solve_weighted(symmetrise_matrix(M[:d, :d]), M[:d, d], floor)
        lo, hi = self.R_range
        return float(min(max(np.abs(beta).sum(), lo), hi))

    @all_or_nothing
    def fit_release(self, release):
        """Select from a release of the second moment of the rows ``(x, y)``, response last: no new cost.

        ``Q_R`` of every candidate is computed from the released ``X^T X / n``, ``X^T y / n`` and
        ``y^T y / n`` (the PSD projection of the noisy matrix, scaled by the public ``n``), and
        the smallest penalised score is taken. Everything is post-processing of ``release``,
        whose guarantee is the fit's; ``coef_`` is the selected model's ``Q_R`` minimiser (a release of rows mapped
        by public ranges, with its ``column_scale``, is selected from in the mapped units, as ``fit`` selects, and
        ``coef_`` is scaled back to the user's).
        ``R="private"`` (the default, as in ``fit``) takes the radius from the release itself:
        the L1 norm of the full model's least-squares fit to the released moments (the
        eigenvalues of ``X^T X / n`` floored at twice the noise's spectral size,
        ``2 sqrt(d) sd``), clamped to ``R_range``, as ``fit`` does from its own noisy moments --
        post-processing, so it takes no share of the budget (the report's ``R_source`` says so).
        ``sigma2`` must be a public number here. ``phi="theorem"`` (Lei et al.'s
        penalty scales with the selection noise, which a fit from a release does not add)
        becomes the BIC ``sigma^2 log n`` with ``sigma^2 = Q_R(full)/n`` from the released
        moments, as ``fit`` does at ``epsilon=inf``. ``selection_gap_`` is the gap between the
        two smallest scores. The noise of the choice is the release's: ``selection_probability_``
        is the share of redrawn releases (fresh noise of the release's law around it; 50 draws,
        fewer, down to 10, for more than 2000 candidates) that choose the same model, ``snr_``
        the gap over the spread of the chosen model's lead across them; below one half the
        choice is flagged ``selection-within-noise`` (``tie_probability_`` is ``None``).

        Parameters
        ----------
        release : Release
            With a ``(d + 1, d + 1)`` second moment of the rows ``(x, y)`` (e.g. a multi-site
            ``"select"`` analysis).

        Returns
        -------
        self
        """
        if not isinstance(release, Release) or release.second_moment is None:
            raise TypeError(f"'release' must be a Release with a second moment of (x, y); got {release!r}.")
        if self.sigma2 == "private":
            raise ValueError("fit_release needs a public 'sigma2' (a number), not 'private'.")
        d = release.n_features - 1
        family = candidate_family(self.candidates, self.max_size, d)
        self.sigma2_ = float(check_positive(self.sigma2, "sigma2"))
        self.R_ = self._release_radius(release) if self.R == "private" else float(check_positive(self.R, "R"))
        fits, self.phi_, self.scores_ = self._release_scores(release, family)
        best = int(np.argmin(self.scores_))
        two = np.sort(self.scores_)[:2]
        self.selection_gap_ = float(two[1] - two[0]) if two.size > 1 else math.inf
        draws = min(_STABILITY_DRAWS, max(10, _STABILITY_SOLVES // len(family)))
        prob, self.snr_, self.diagnostics_, summary = selection_stability(
            release, lambda r: self._release_scores(r, family)[2], best, self.selection_gap_, draws, self.rng)
        self.selection_probability_, self.tie_probability_ = prob, None
        self.uncertainty_ = {**summary, "phi": self.phi_, "phi_units": "y^2", "n_candidates": len(family)}
        self.selected_, self.candidates_, self.coef_, self.coef_se_ = family[best], family, fits[best].coef, None
        if release.column_scale is not None:  # moments of mapped (x, y) (public ranges): coefficients back, y/x units
            scale = np.asarray(release.column_scale, dtype=float)
            self.coef_ = self.coef_ * scale[d] / scale[:d]
        self.privacy_, self.neighbours_ = release.guarantee, release.neighbours
        self.privacy_parts_, self.bound_parts_ = (), ()
        release_input(self, d)
        self.privacy_report_ = privacy_report(
            self, guarantee=self.privacy_, neighbours=self.neighbours_, randomness=release.randomness,
            fitted_by="fit_release", noise=release_noise("second moment of (x, y)", release),
            n_candidates=len(family), phi=self.phi_, R=self.R_,
            R_source="the release's full-model fit (post-processing)" if self.R == "private" else "public",
            postprocessing="Q_R on the released moments")
        return self
