r"""The exact statistics behind a LAD/IRLS coefficient's sampling error: the residual scale and the sandwich.

One machine (:mod:`dpmoments.estimators._irls_sampling`) and every site of a multi-site run
(:mod:`dpmoments.multisite.site_moments`) compute them here, so both release the same numbers from the
same rows. At a public iterate :math:`\theta` (an output of the private iterations), with residuals
:math:`r_i = y_i - z_i^\top\theta` of the clipped rows :math:`\|z_i\| \le R` and responses
:math:`|y_i| \le r`:

1. the residual scale :math:`s = \frac1n\sum_i \min(|r_i|, r)`;
2. :math:`K_h = \frac1n\sum_i 1\{|r_i| < h\}\, z_i z_i^\top` at the bandwidth
   :math:`h = \max(1/w_{\max},\ 1.5\,\tilde s\,n^{-1/5})` from the *released* :math:`\tilde s` (:func:`bandwidth`);
3. :math:`V = \frac1n\sum_i \psi(r_i)^2 z_i z_i^\top`, :math:`\psi(r) = \operatorname{clip}(w_{\max} r, -1, 1)`.

Privacy
-------
Nothing here adds noise: these are the exact statistics a release noises (never publish them). Each row
enters each statistic once, through a term bounded after clipping: :math:`0 \le \min(|r_i|, r) \le r`,
so :math:`s` moves by at most :math:`r/n` when one row is replaced (or zeroed: its term stays in
:math:`[0, r]`); the weights :math:`1\{\cdot\}` and :math:`\psi^2` lie in :math:`[0, 1]` and
:math:`\|z_i\| \le R`, so :math:`K_h` and :math:`V` move as a second moment does (L2
:math:`\sqrt2 R^2/n` replace-one: :data:`SANDWICH_K`, :data:`SANDWICH_V`; across sites zero-out is charged the
same, which is conservative: a zeroed row keeps IRLS's public constant column, but its term and any row's are never
orthogonal, so they differ by at most :math:`R^2/n` there (``multisite.statistics.Sampling``, docs/privacy.md)).
``n`` is public (replace-one or zero-out); under add-remove these statistics are not offered.
"""

import numpy as np

from .statistics import MomentStatistic

__all__ = ["SPLIT", "residual_scale", "bandwidth", "sandwich_statistics", "scale_sensitivity", "sandwich_sensitivities",
           "SANDWICH_K", "SANDWICH_V", "SANDWICH", "RESIDUAL_SCALE", "SIGN_SCORE", "sign_score",
           "sign_sensitivity"]

#: How a sampling share (of rho) is split between the four releases, on one machine and across sites alike: the
#: scale needs little, the matrices most, LAD's score (the ``w_max`` knot's check) a tenth.
SPLIT = {"scale": 0.1, "K": 0.4, "V": 0.4, "sign": 0.1}

#: The two sandwich matrices as moments: a second moment's shape, symmetry and sensitivity (weights in [0, 1]).
SANDWICH_K = MomentStatistic("sandwich-k", "sandwich bread K_h", ndim=2, power=2, symmetric=True,
                             slot="second_moment")
SANDWICH_V = MomentStatistic("sandwich-v", "sandwich meat V", ndim=2, power=2, symmetric=True, slot="second_moment")
SANDWICH = {"K": SANDWICH_K, "V": SANDWICH_V}
#: The residual scale as a moment: one number, released in a release's cross-moment slot (its sensitivity is
#: :func:`scale_sensitivity`'s, not a cross moment's).
RESIDUAL_SCALE = MomentStatistic("residual-scale", "residual scale", ndim=1, power=1, symmetric=False,
                                 slot="cross_moment")
#: LAD's score as a moment: a vector of ``d``, released in a release's cross-moment slot (its sensitivity is
#: :func:`sign_sensitivity`'s).
SIGN_SCORE = MomentStatistic("sign-score", "LAD sign score", ndim=1, power=1, symmetric=False, slot="cross_moment")


def residual_scale(Z, y, theta, response_bound):
    """The exact residual scale ``mean(min(|y - Z theta|, response_bound))`` (rows and responses clipped)."""
    return float(np.minimum(np.abs(y - Z @ theta), response_bound).mean())


def scale_sensitivity(response_bound, n_samples, neighbours="replace-one"):
    """The residual scale's sensitivity: each row's term lies in ``[0, response_bound]`` (n public)."""
    if neighbours == "add-remove":
        raise ValueError("the residual scale divides by the public n: neighbours='add-remove' is not offered.")
    return float(response_bound) / int(n_samples)


def bandwidth(scale, n, w_max):
    """The kernel half-width ``h``: 1.5 s n^(-1/5), never below the IRLS threshold ``1/w_max`` (post-processing of
    the released scale ``s`` and public ``n``, ``w_max``)."""
    return max(1.0 / w_max, 1.5 * max(scale, 0.0) * n ** -0.2)


def sandwich_statistics(Z, residuals, h, w_max):
    """The exact ``K_h`` and ``V`` at a public bandwidth ``h`` (exactly symmetric): never publish them."""
    n = Z.shape[0]
    out = {}
    for key, weight in (("K", (np.abs(residuals) < h).astype(float)),
                        ("V", np.clip(w_max * residuals, -1.0, 1.0) ** 2)):
        M = (Z * weight[:, None]).T @ Z / n
        out[key] = 0.5 * (M + M.T)
    return out


def sandwich_sensitivities(n, row_bound, response_bound):
    """The replace-one L2 sensitivities ``{"scale", "K", "V"}`` of one machine's three releases over ``n`` rows."""
    second = SANDWICH_K.sensitivity(norm="l2", n_samples=n, n_features=1, neighbours="replace-one",
                                    row_norm=row_bound)
    return {"scale": scale_sensitivity(response_bound, n), "K": second, "V": second}


def sign_score(Z, residuals):
    """The exact LAD score ``mean(sign(r_i) z_i)`` at a public iterate: 0 (up to sampling) at LAD's own fit, far from
    it where the ``w_max`` knot moved the IRLS fit away from LAD (``estimators._irls_knot``). Never publish it."""
    return Z.T @ np.sign(residuals) / Z.shape[0]


def sign_sensitivity(n, row_bound, neighbours="replace-one"):
    """L2 sensitivity of :func:`sign_score` (``n`` public): each row's term ``sign(r) z`` has norm at most ``R``, so
    replacing one moves it by ``2R/n``. Zero-out is charged the same: a zeroed row keeps IRLS's public constant
    column ``k < R`` (across sites), so its term ``sign(r) (0, ..., 0, k)`` is not 0 and the pair can differ by
    more than ``R`` (up to ``R + k``)."""
    if neighbours == "add-remove":
        raise ValueError("LAD's sign score divides by the public n: neighbours='add-remove' is not offered.")
    return 2.0 * float(row_bound) / int(n)

