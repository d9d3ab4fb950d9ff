r"""The releases behind an IRLS coefficient's sampling error: the LAD sandwich, privately.

At the final private iterate :math:`\theta` (public: an output of the iterations), with residuals
:math:`r_i = y_i - z_i^\top\theta` of the clipped rows and responses, three statistics are released
from the ``sampling_budget`` share, in this order:

1. the residual scale :math:`s = \frac1n\sum_i \min(|r_i|, r)`, Gaussian (a tenth of the share);
2. :math:`K_h = \frac1n\sum_i 1\{|r_i| < h\}\, z_i z_i^\top` with the bandwidth
   :math:`h = \max(1/w_{\max},\ 1.5\,\tilde s\,n^{-1/5})` from the released :math:`\tilde s`
   (post-processing), symmetric Gaussian on the upper triangle (0.4 of the share);
3. :math:`V = \frac1n\sum_i \psi(r_i)^2 z_i z_i^\top`, :math:`\psi(r) = \operatorname{clip}(w_{\max}
   r, -1, 1)`, likewise (0.4);
4. LAD's score :math:`S = \frac1n\sum_i \operatorname{sign}(r_i)\, z_i`, Gaussian (0.1): near 0 at LAD's own fit,
   far from it where the :math:`w_{\max}` knot moved the fit away from LAD (a response with few distinct values:
   :mod:`dpmoments.estimators._irls_knot`). The sites of a multi-site run release the same four at the same
   split (:mod:`dpmoments.multisite.irls_sampling`).

Then :math:`H \approx \tilde K_h / h` (Powell's kernel estimate of :math:`E[f(0\mid x)\,x x^\top]`
times :math:`2`, in the IRLS map's own units: :math:`w_{\max}\cdot 2/w_{\max} = 2`) and :math:`V`
give the sandwich :math:`H^{-1}VH^{-1}/n` (:mod:`dpmoments.estimators._irls_error`). The exact statistics are computed in
:mod:`dpmoments.moments.irls_sandwich`, which the sites of a multi-site run call too.

Privacy
-------
Replace-one, ``n`` public. Each row enters each statistic once, through a term bounded after
clipping: :math:`0 \le \min(|r_i|, r) \le r`, so :math:`s` has sensitivity :math:`r / n`; the
weights :math:`1\{\cdot\}` and :math:`\psi^2` lie in :math:`[0, 1]` and :math:`\|z_i\| \le R`, so
the upper triangles of :math:`K_h` and :math:`V` have L2 sensitivity :math:`\sqrt2 R^2 / n` (as a
second moment's); each row's term :math:`\operatorname{sign}(r_i) z_i` of :math:`S` has norm at most
:math:`R`, so :math:`S` has L2 sensitivity :math:`2R/n`. :math:`\theta`, :math:`h`, :math:`R`, :math:`r` and
:math:`w_{\max}` are public or outputs of earlier private steps. Each is a Gaussian mechanism in zCDP
(:math:`\rho = \Delta^2 / 2\sigma^2`); the share's :math:`\rho` is split 0.1 / 0.4 / 0.4 / 0.1
(:data:`ONE_MACHINE_SPLIT`) and the four compose with the iterations in zCDP (:func:`dpmoments.privacy.compose`).
"""

import math

import numpy as np

from ..mechanisms import gaussian_noise, symmetric_matrix_noise
from ..moments.irls_sandwich import (SPLIT, bandwidth, residual_scale, sandwich_sensitivities, sandwich_statistics,
                                     sign_score, sign_sensitivity)
from ..privacy import zcdp_gaussian_sigma

__all__ = ["SPLIT", "ONE_MACHINE_SPLIT", "sampling_scales", "release_sampling", "bandwidth", "sandwich_statistics",
           "sandwich_parts"]

#: The split of the sampling share (of rho), one machine's and the sites' (:data:`SPLIT`, one set of defaults).
ONE_MACHINE_SPLIT = SPLIT


def sampling_scales(rho, n, row_bound, response_bound):
    """The Gaussian sd of each sampling release from the share's ``rho`` (0: exact, at epsilon = inf)."""
    sens = sandwich_sensitivities(n, row_bound, response_bound)  # the statistics' own (moments.irls_sandwich)
    sens["sign"] = sign_sensitivity(n, row_bound)
    if math.isinf(rho):
        return {k: 0.0 for k in sens}, sens
    return {k: zcdp_gaussian_sigma(ONE_MACHINE_SPLIT[k] * rho, sens[k]) for k in sens}, sens


def release_sampling(Z, y, theta, *, w_max, response_bound, scales, rng):
    """The three sampling releases at ``theta`` (rows ``Z`` and responses ``y`` already clipped).

    Returns ``{"scale", "h", "K", "V", "sign"}``: the released residual scale, the bandwidth it gives,
    the two released matrices and LAD's score (noisy; exact where ``scales`` are 0; no ``sign`` where
    ``scales`` has none).
    """
    n, d = Z.shape
    r = y - Z @ theta
    scale = residual_scale(Z, y, theta, response_bound)
    if scales["scale"] > 0:
        scale += float(gaussian_noise((), scales["scale"], rng))
    h = bandwidth(scale, n, w_max)  # post-processing of the released scale
    out = {"scale": scale, "h": h}
    for key, M in sandwich_statistics(Z, r, h, w_max).items():
        out[key] = M + symmetric_matrix_noise(d, scales[key], rng) if scales[key] > 0 else M
    if "sign" in scales:  # drawn last: the three before it draw as they did without it
        S = sign_score(Z, r)
        out["sign"] = S + gaussian_noise((d,), scales["sign"], rng) if scales["sign"] > 0 else S
    return out


def sandwich_parts(released, scales, d, n=None, row_bound=None):
    """``{"H", "H_floor", "V"}`` for the error budget: post-processing of the releases; with LAD's score
    released (and the public ``n`` and row bound), ``"sign"`` and ``"sign_null_sd"``, the root mean square
    its norm would have where the fit is LAD's up to sampling (sampling's size, its zero residuals' terms, ``d R / n``
    at most, and its noise)."""
    h = released["h"]
    floor = 2.0 * math.sqrt(d) * scales["K"] / h
    lam, Q = np.linalg.eigh(released["V"])
    V = (Q * np.maximum(lam, 0.0)) @ Q.T
    parts = {"H": released["K"] / h, "H_floor": max(floor, 1e-12), "V": V, "h": h, "scale": released["scale"]}
    if released.get("sign") is not None and n is not None:
        parts["sign"] = released["sign"]
        # at the rows' own LAD fit the score is 0 but for its zero residuals (d of them at a vertex, each term's norm
        # at most R); the smoothed fit differs from it by sampling's size, which moves the score by about
        # sqrt(E||z||^2 / n), with E||z||^2 <= tr V + tr K_h (psi^2 = 1 beyond the knot, K_h's weight 1 within it:
        # h >= 1/w_max) plus twice their traces' noise, never above R^2; and the release's noise
        spread = float(np.trace(V) + np.trace(released["K"])) + 2.0 * math.sqrt(d) * (scales["K"] + scales["V"])
        sampling = min(float(row_bound) ** 2, max(spread, 0.0)) / n
        parts["sign_null_sd"] = math.sqrt(sampling + (d * float(row_bound) / n) ** 2 + d * scales["sign"] ** 2)
    return parts
