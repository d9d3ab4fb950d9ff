r"""Least squares in an L1 ball to a guaranteed accuracy in a number of steps fixed by public values.

For every model :math:`M` (``s = |M|`` coordinates) the central-cut ellipsoid method minimises
:math:`f(\beta) = c - 2b^\top\beta + \beta^\top G\beta` over :math:`X = \{\beta:
\operatorname{supp}\beta\subseteq M,\ \lVert\beta\rVert_1\le R\}`, starting from the Euclidean
ball of radius ``R`` (which contains ``X``). At a centre outside ``X`` it cuts with the sign
vector (every point of ``X`` has :math:`\operatorname{sign}(c)^\top z \le \lVert z\rVert_1 \le R <
\lVert c\rVert_1`, so none is cut); at a centre inside it cuts with the gradient and records
:math:`f` there. The best recorded centre :math:`\hat\beta` is feasible, so
:math:`Q_R(M) \le f(\hat\beta)`, and after ``N`` steps

.. math::

    f(\hat\beta) - Q_R(M) \le \Big(\frac{\operatorname{vol} E_N}{\operatorname{vol} X}\Big)^{1/s}
    \big(\max_X f - \min_X f\big)
    \le \rho_s\, r_s^{N / s}\ V ,

whatever ``G``, ``b`` and ``c`` are (Nemirovski & Yudin 1983; e.g. Nemirovski's *Information-based
complexity of convex programming*, lecture 3). Why: let :math:`\varepsilon` be the middle term,
:math:`\beta^*` a minimiser and :math:`X_\varepsilon = \beta^* + \varepsilon'(X - \beta^*)` for
:math:`\varepsilon < \varepsilon' < 1`; its volume exceeds :math:`\operatorname{vol}E_N`, so one of
its points ``z`` was cut at some step ``k``. Not by a feasibility cut (:math:`X_\varepsilon
\subseteq X`), so by a gradient cut at a feasible centre :math:`c_k`, which removes the points with
:math:`\nabla f(c_k)^\top(z - c_k) > 0`; then :math:`f(c_k) \le
f(c_k) + \nabla f(c_k)^\top(z - c_k) \le f(z) \le (1 - \varepsilon') Q_R + \varepsilon' \max_X f`
(convexity twice). Here :math:`V` is any upper bound of :math:`\max_X f - \min_X f` (for rows
clipped to :math:`|x_{ij}| \le b,\ |y_i| \le r`, every squared residual on ``X`` lies in
:math:`[0, (r + bR)^2]`, so :math:`V = n (r + bR)^2`), each central cut multiplies the ellipsoid's volume by
:math:`r_s = \frac{s}{s+1}\big(\frac{s^2}{s^2-1}\big)^{(s-1)/2} \le e^{-1/(2(s+1))}` (by 1/2 for
:math:`s = 1`), and :math:`\rho_s = (\operatorname{vol}B_2^s / \operatorname{vol}B_1^s)^{1/s}` is the
start's excess volume. :func:`ellipsoid_steps` inverts this
bound: the number of steps depends on ``s``, ``V`` and the tolerance only, so the work is fixed
before the data are seen and the accuracy holds for every input, converged-looking or not.

The ellipsoid is kept as a factor ``J`` (``P = J J^T``), updated by a rank-one product, so that ``P``
stays positive semi-definite under rounding. Floating-point rounding is outside this bound, as for
every float computation here.

Pure numerics: no privacy is spent here.
"""

import math

import numpy as np

from .._validation import check_positive

__all__ = ["ellipsoid_steps", "ellipsoid_objectives"]


def ellipsoid_steps(size, spread, tolerance):
    """The number of central cuts after which the best feasible centre is within ``tolerance`` of the minimum.

    Parameters
    ----------
    size : int >= 0
        ``s``, the number of free coordinates (0: no step is needed).
    spread : float > 0
        An upper bound of ``max f - min f`` on the ball (public: ``n (r + bR)^2`` for clipped rows).
    tolerance : float > 0

    Returns
    -------
    int
        The least ``N`` with ``rho_s r_s^(N / s) spread < tolerance`` (at least 1), where ``r_s`` is the
        volume ratio of one cut (at most ``exp(-1 / (2 (s + 1)))``).
    """
    spread, tolerance = check_positive(spread, "spread"), check_positive(tolerance, "tolerance")
    if size < 1:
        return 0
    s = int(size)
    # log of vol(B_2^s) / vol(B_1^s) = pi^(s/2) / Gamma(s/2 + 1) / (2^s / s!)
    log_excess = 0.5 * s * math.log(math.pi) - math.lgamma(0.5 * s + 1) + math.lgamma(s + 1) - s * math.log(2.0)
    needed = s * (math.log(spread / tolerance) + log_excess / s) / _log_shrink(s)
    return max(1, math.floor(needed) + 1)


def _log_shrink(s):
    """``-log`` of the volume ratio of one central cut in dimension ``s``: ``s/(s+1) (s^2/(s^2-1))^((s-1)/2)``.

    At least ``1 / (2 (s + 1))``; for ``s = 1`` the cut halves the interval.
    """
    if s == 1:
        return math.log(2.0)
    return -(math.log(s / (s + 1.0)) + 0.5 * (s - 1) * math.log(s * s / (s * s - 1.0)))


def ellipsoid_objectives(G, b, c, radius, mask, n_steps):
    """``f`` at the best feasible centre of ``n_steps`` central cuts, for each model at once.

    Parameters
    ----------
    G : ndarray of shape (m, d, d)
        Each model's Gram matrix, zero outside its support.
    b : ndarray of shape (d,) or (m, d)
    c : float
    radius : float > 0
    mask : ndarray of bool, shape (m, d)
        Each model's support.
    n_steps : int
        The same for every model (at least :func:`ellipsoid_steps` of the largest support):
        more steps only shrink the ellipsoids further.

    Returns
    -------
    ndarray of shape (m,)
        ``f`` at the best feasible centre (``c`` for an empty support): each at least the minimum
        over the ball, and less than ``tolerance`` above it after :func:`ellipsoid_steps`.
    """
    m, d = mask.shape
    size = mask.sum(axis=1).astype(float)[:, None]
    many = size > 1
    # Central cut, s >= 2: P+ = s^2/(s^2-1) (P - 2/(s+1) P g g^T P / g^T P g). For s = 1 the ellipsoid
    # is an interval and the cut halves it: P+ = P / 4, i.e. expansion 1 and shrink 3/4. The expansion
    # is kept apart, as one factor per model (J_true = scale * J), to spare a pass over J each step.
    expand = np.sqrt(np.where(many, size * size / np.maximum(size * size - 1.0, 1.0), 1.0))
    kappa = 1.0 - np.sqrt(1.0 - np.where(many, 2.0 / (size + 1.0), 0.75))  # (I - kappa uu^T)^2 = I - shrink uu^T
    move = 1.0 / (size + 1.0)
    bm = b * mask
    centre = np.zeros((m, d))
    J = radius * (np.eye(d)[None] * mask[:, :, None])  # the Euclidean ball of radius R on the support
    scale = np.ones((m, 1))
    best = np.full(m, np.inf)
    for _ in range(n_steps):
        best, direction = _record_and_cut(G, bm, c, radius, centre, best)
        w = np.einsum("mdk,md->mk", J, direction)  # J^T g (up to the scale: u is a unit vector)
        u = w / (np.sqrt(np.einsum("mk,mk->m", w, w))[:, None] + _TINY)  # g = 0 at a feasible centre: optimal
        Ju = np.einsum("mdk,mk->md", J, u)
        centre -= (move * scale) * Ju
        J -= np.einsum("md,mk->mdk", kappa * Ju, u)
        scale *= expand
    return _record_and_cut(G, bm, c, radius, centre, best)[0]


_TINY = 1e-300  # a zero direction stays zero (the centre does not move)


def _record_and_cut(G, bm, c, radius, centre, best):
    """Record ``f`` at a feasible centre; return the cut's direction (the gradient, or the sign vector outside)."""
    half_gradient = np.einsum("mde,me->md", G, centre) - bm
    feasible = np.abs(centre).sum(axis=1) <= radius
    value = c + np.einsum("md,md->m", centre, half_gradient - bm)  # c - 2 b'beta + beta'G beta
    best = np.minimum(best, np.where(feasible, value, np.inf))
    return best, np.where(feasible[:, None], half_gradient, np.sign(centre))
