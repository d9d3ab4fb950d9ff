r"""The private iterations of :class:`~dpmoments.estimators.PrivateIRLS` (Park & Welling 2016).

The part of the fit that reads the rows (``docs/algorithms.md`` §3.4): the clipped design (with the
public intercept column), then ``n_iter`` iterations, each releasing the weighted moments ``A`` and
``B`` at the previous private iterate and solving :math:`\tilde B_+ \theta = \tilde A`. The plan (shares, sensitivities,
noise scales) is made before, from public values (:mod:`~dpmoments.estimators._irls_plan`); what
the releases say about the coefficients' error after (:mod:`~dpmoments.estimators._irls_error`).

Privacy: each iteration's ``A`` and ``B`` are released with the plan's noise scales, calibrated to
the sensitivities of rows clipped to ``||x|| <= R`` (augmented by the intercept column), responses
to ``|y| <= r`` and weights at most ``w_max`` (replace-one, ``N`` public): ``2 w_max R r / N`` (L2)
for ``A`` and ``sqrt(2) w_max R^2 / N`` for the upper triangle of ``B``. The weights depend only on
a row and the previous private iterate; everything else is post-processing.
"""

import numpy as np

from ..mechanisms import wishart_noise
from ..moments import clip_rows
from ..solvers.irls import auto_psd_floor, irls_weights, solve_weighted, weighted_moments

__all__ = ["clipped_design", "psd_floor_in_use", "private_iterations"]


def clipped_design(X, row_norm, intercept=None):
    """Rows clipped to ``||x|| <= row_norm``, with the public constant column ``intercept`` appended when given."""
    Z = clip_rows(X, row_norm)
    if intercept is not None:
        Z = np.hstack([Z, np.full((Z.shape[0], 1), float(intercept))])
    return Z


def psd_floor_in_use(psd_floor, second_moment, scale_b, d):
    """The eigenvalue floor of ``B~``: none, the public value, 0 for the paper's Wishart noise, or for ``"auto"``
    ``2 sqrt(d)`` times the noise sd of ``B`` (:func:`~dpmoments.solvers.irls.auto_psd_floor`; public)."""
    if psd_floor is None:
        return None
    if psd_floor != "auto":
        return float(psd_floor)
    if not second_moment.additive:  # the paper's Wishart noise
        return 0.0
    return auto_psd_floor(d, scale_b)


def private_iterations(Z, y, *, n_iter, w_max, p, floor, scales, first_moment, second_moment, rng):
    """``n_iter`` private iterations from ``theta = 0``: ``(theta, eigenvalues floored per iteration, releases)``.

    ``releases`` lists every iteration's released ``(A, B)``: what the error budget is computed from.
    """
    theta, clipped, released = np.zeros(Z.shape[1]), [], []
    for _ in range(n_iter):
        A, B = weighted_moments(Z, y, irls_weights(y - Z @ theta, w_max, p))
        A, B = _noisy(A, B, scales, first_moment, second_moment, rng)
        theta, k = solve_weighted(B, A, floor)
        clipped.append(k)
        released.append((A, B))
    return theta, tuple(clipped), released


def _noisy(A, B, scales, first_moment, second_moment, rng):
    """``A`` and ``B`` with the plan's noise (none at ``epsilon = inf``: the scales are 0)."""
    if scales["A"] == 0.0:
        return A, B
    d = A.size
    A = A + first_moment.vector(d, scales["A"], rng)
    if not second_moment.additive:  # the paper's Wishart W_d(d+1, cI), mean and all
        return A, B + wishart_noise(d, d + 1, scales["B"], rng)
    return A, B + second_moment.matrix(d, scales["B"], rng)
