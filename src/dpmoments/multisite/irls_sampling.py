r"""IRLS across sites: the sampling rounds behind intervals for the population coefficients.

A ``regress`` plan whose options set ``sampling_budget`` (a share of every site's ``rho``, as one machine's
``PrivateIRLS(sampling_budget=...)``) adds two steps after its ``J`` iterations, at the final public iterate
:math:`\theta_J` (the solve of the last released ``A`` and ``B``), split as one machine's
(:data:`~dpmoments.moments.irls_sandwich.SPLIT`):

1. the residual scale :math:`s = \frac1n\sum_i\min(|r_i|, r)` (one number; ``0.1`` of the share);
2. at the bandwidth :math:`h = \max(1/w_{\max}, 1.5\,\tilde s\,N^{-1/5})` from the released :math:`\tilde s`
   (post-processing), the sandwich's bread :math:`K_h` and meat :math:`V` (``0.4`` of the share each), and LAD's
   score :math:`S = \frac1n\sum_i\operatorname{sign}(r_i) z_i` at :math:`\theta_J` (``0.1``): the ``w_max`` knot's
   check (:mod:`dpmoments.estimators._irls_knot`), as one machine runs it.

Each site computes them with one machine's code (:mod:`dpmoments.moments.irls_sandwich`); the iterations take
``1 - sampling_budget`` of what they had. Without the option a plan has neither the rounds nor the option: its
bytes and digest are those it had before. ``PrivateIRLS.fit_release`` turns the releases into the LAD
sandwich :math:`H^{-1}VH^{-1}/N` (:math:`H = \tilde K_h/h`), the IRLS map's contraction and the knot's check, as
one machine does. Each site sends its mean and the aggregator sums them weighted by :math:`n_s/N`, so without noise
every release is one machine's statistic on the pooled rows.

Privacy: four more rounds of the plan, each calibrated like every round to its share of every site's budget
against the aggregator's joint view (:mod:`~dpmoments.multisite.rounds`); the sensitivities are one machine's
(:mod:`dpmoments.moments.irls_sandwich`): :math:`r/n_s` for the scale, :math:`\sqrt2 R^2/n_s` for each matrix,
:math:`2R/n_s` for the score (replace-one; zero-out is charged the same for the matrices and the score, because a
zeroed row keeps the public constant column; add-remove is refused across sites). The iterate and the bandwidth a
query carries are outputs of earlier releases (public).
"""

import numpy as np

from ..moments.irls_sandwich import SPLIT, bandwidth
from ..solvers.irls import auto_psd_floor, solve_weighted
from .rounds import Round
from .statistics import RESIDUAL_SCALE, SANDWICH_K, SANDWICH_V, SIGN_SCORE

__all__ = ["sampling_share", "sampling_rounds", "solve_iteration", "sampling_params", "bandwidth_of", "split_releases"]


def sampling_share(options, p):
    """The plan's ``sampling_budget`` (a share in (0, 1)), or ``None`` where it sets none; refused in one line for a
    loss other than LAD (the sandwich is LAD's, as one machine's)."""
    share = options.get("sampling_budget")
    if share is None:
        return None
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 < float(share) < 1.0:
        raise ValueError(f"'sampling_budget' must be a share in (0, 1) (or None: no sampling rounds); got {share!r}.")
    if float(p) != 1.0:
        raise ValueError(f"'sampling_budget' is for least absolute deviations (p = 1): its sandwich is LAD's; got "
                         f"p = {p!r}.")
    return float(share)


def sampling_rounds(share, n_iter, w_max, p):
    """The two sampling steps after the ``n_iter`` iterations (steps ``n_iter`` and ``n_iter + 1``), split as one
    machine's (:data:`~dpmoments.moments.irls_sandwich.SPLIT`); LAD's score rides the sandwich's step (its query's
    iterate, the same final one)."""
    return (Round(RESIDUAL_SCALE.name, share * SPLIT["scale"], n_iter, w_max=w_max, p=p),
            Round(SANDWICH_K.name, share * SPLIT["K"], n_iter + 1, w_max=w_max, p=p),
            Round(SANDWICH_V.name, share * SPLIT["V"], n_iter + 1, w_max=w_max, p=p),
            Round(SIGN_SCORE.name, share * SPLIT["sign"], n_iter + 1, w_max=w_max, p=p))


def solve_iteration(A, B):
    """The iterate of one iteration's releases: ``B theta = A`` with a single-site fit's ``psd_floor="auto"``
    (``PrivateIRLS.fit_release`` computes the coefficients' spread with the same floor)."""
    return solve_weighted(B.second_moment, A.cross_moment, auto_psd_floor(B.n_features, B.noise_scale))


def bandwidth_of(plan, cross, scale):
    """The sandwich's bandwidth ``h`` from the released residual ``scale`` over its ``n`` rows (post-processing),
    with ``w_max`` the rounds' own: public, or ``w_max_per_bound`` over the response bound the ``cross`` release
    (an iteration's ``A``) was clipped at, as :meth:`~.plan.Plan.resolved` sets it."""
    per_bound = plan.option("w_max_per_bound")
    w_max = float(plan.option("w_max")) if per_bound is None else float(per_bound) / float(cross.response_bound)
    return bandwidth(float(scale.cross_moment[0]), scale.n, w_max)


def sampling_params(plan, stat, releases):
    """A sampling step's public parameters from the releases so far: the final iterate (the scale's step), or it and
    the bandwidth ``(theta, h)`` (the sandwich's step, after the scale's release)."""
    if stat is RESIDUAL_SCALE:
        return solve_iteration(releases[-2], releases[-1])[0]
    A, B, scale = releases[-3:]
    return np.r_[solve_iteration(A, B)[0], bandwidth_of(plan, A, scale)]


def split_releases(plan, releases):
    """``(iterations, sampling)``: the iterations' releases in order, and the sampling releases (or ``()``): the
    scale, ``K_h``, ``V`` and LAD's score (three, without the score, for a plan written before it was released)."""
    flags = [plan.rounds[i].stat.sampling for i in plan.release_rounds]
    return (tuple(r for r, f in zip(releases, flags) if not f), tuple(r for r, f in zip(releases, flags) if f))

