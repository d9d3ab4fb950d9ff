r"""Least squares inside an L1 ball, from sufficient statistics.

Lei et al. (2018) score a model :math:`M \subseteq \{1, \dots, d\}` by

.. math::

    Q_R(M) = \min_{\beta:\ \operatorname{supp}\beta \subseteq M,\ \lVert\beta\rVert_1 \le R}
             \; c - 2 b^\top \beta + \beta^\top G \beta ,

with ``G = X^T X``, ``b = X^T y`` and ``c = y^T y`` (``docs/algorithms.md`` §4.2):
the residual sum of squares of the best coefficient vector on ``M`` in the
L1 ball of radius ``R``. The data are read once, to form ``(G, b, c)``; each
model is then a small convex quadratic programme.

The solver is exact to rounding:

1. if the unconstrained least-squares solution on ``M`` exists and lies in
   the ball, it is the answer;
2. otherwise accelerated projected gradient (FISTA with adaptive restart,
   Euclidean projection onto the L1 ball by the sort-based method of Duchi et
   al. 2008) runs until the Frank--Wolfe duality gap certifies the objective
   to ``tol`` relative to the size of its terms (the scale of its rounding);
3. the active set and signs it found are then *polished*: the KKT system
   :math:`G_{SS}\beta_S - b_S + \tfrac{\lambda}{2} s_S = 0,\ s_S^\top\beta_S = R`
   is solved directly and accepted when it is optimal (signs consistent,
   :math:`|2(G\beta - b)_j| \le \lambda` off the support) and no worse.

Pure numerics: no privacy is spent here.
"""

from dataclasses import dataclass

import numpy as np

from .._validation import check_int, check_positive

__all__ = ["L1BallResult", "project_l1_ball", "l1_ball_least_squares", "l1_ball_duality_gap"]


@dataclass(frozen=True)
class L1BallResult:
    """The solution of :func:`l1_ball_least_squares`.

    Attributes
    ----------
    coef : ndarray of shape (d,)
        The minimiser (zero outside the support).
    objective : float
        :math:`c - 2 b^\\top\\beta + \\beta^\\top G\\beta` at ``coef``.
    gap : float
        The Frank--Wolfe duality gap at ``coef``: an upper bound on
        ``objective - optimum``.
    n_iter : int
        Projected-gradient iterations (0 when the answer was closed form).
    method : str
        ``"unconstrained"``, ``"polished"`` or ``"projected-gradient"``.
    """

    coef: np.ndarray
    objective: float
    gap: float
    n_iter: int
    method: str


def project_l1_ball(v, radius):
    r"""Euclidean projection of ``v`` onto :math:`\{x : \lVert x\rVert_1 \le R\}`.

    The sort-based algorithm of Duchi, Shalev-Shwartz, Singer & Chandra
    (ICML 2008, Fig. 1), :math:`O(d \log d)`.

    Parameters
    ----------
    v : array-like of shape (d,)
    radius : float > 0

    Returns
    -------
    x : ndarray of shape (d,)

    Examples
    --------
    >>> project_l1_ball([3.0, -1.0, 0.5], 2.0)
    array([2., 0., 0.])
    >>> project_l1_ball([0.5, -0.5], 2.0)
    array([ 0.5, -0.5])
    """
    v = np.asarray(v, dtype=np.float64)
    radius = check_positive(radius, "radius")
    return _project(v, radius)


def _project(v, radius):
    a = np.abs(v)
    if a.sum() <= radius:
        return v.copy()
    u = np.sort(a)[::-1]
    css = np.cumsum(u) - radius
    k = np.arange(1, u.size + 1)
    rho = np.nonzero(u * k > css)[0][-1]
    theta = css[rho] / (rho + 1.0)
    return np.sign(v) * np.maximum(a - theta, 0.0) + 0.0  # + 0.0 turns -0.0 into 0.0


def _objective(G, b, c, beta):
    return float(c - 2.0 * b @ beta + beta @ G @ beta)


def l1_ball_duality_gap(G, b, beta, radius):
    r"""Frank--Wolfe gap :math:`\nabla f^\top\beta + R\lVert\nabla f\rVert_\infty \ge f(\beta) - f^*`.

    Valid for any feasible ``beta`` of the convex objective
    :math:`f = c - 2b^\top\beta + \beta^\top G\beta` (``G`` PSD).
    """
    grad = 2.0 * (G @ beta - b)
    return float(grad @ beta + radius * np.max(np.abs(grad), initial=0.0))


def _check_problem(G, b, c, radius):
    G = np.asarray(G, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise ValueError(f"'G' must be a square matrix of shape (d, d); got shape {G.shape}.")
    if b.shape != (G.shape[0],):
        raise ValueError(f"'b' must have shape ({G.shape[0]},) to match 'G'; got {b.shape}.")
    if not (np.all(np.isfinite(G)) and np.all(np.isfinite(b)) and np.isfinite(c)):
        raise ValueError("'G', 'b' and 'c' must be finite.")
    return 0.5 * (G + G.T), b, float(c), check_positive(radius, "radius")


def l1_ball_least_squares(G, b, c, radius, *, support=None, tol=1e-13, max_iter=20_000):
    r"""Minimise :math:`c - 2 b^\top\beta + \beta^\top G\beta` over the L1 ball, on a support.

    .. math::

        \min_{\beta \in \mathbb{R}^d:\ \beta_j = 0\ (j \notin M),\ \lVert\beta\rVert_1 \le R}
        c - 2 b^\top\beta + \beta^\top G\beta

    With ``G = X^T X``, ``b = X^T y``, ``c = y^T y`` this is the residual sum
    of squares :math:`\lVert y - X\beta\rVert^2` (Lei et al.'s :math:`Q_R`).

    Parameters
    ----------
    G : array-like of shape (d, d)
        Symmetric positive semi-definite (symmetrised here).
    b : array-like of shape (d,)
    c : float
    radius : float > 0
        The L1 radius ``R``.
    support : sequence of int, optional
        The model ``M`` (column indices); all ``d`` columns when ``None``. An
        empty support gives ``beta = 0`` and the objective ``c``.
    tol : float, default=1e-13
        Stop projected gradient when the duality gap is below ``tol * max(1, s)``,
        ``s = |c| + 2|b|^T|beta| + |beta|^T|G||beta|`` the size of the objective's terms
        (at least ``|objective|``; its rounding error is about ``1e-16 * s``).
    max_iter : int, default=20000
        Largest number of projected-gradient iterations.

    Returns
    -------
    L1BallResult

    Examples
    --------
    >>> import numpy as np
    >>> G, b = np.eye(2), np.array([2.0, 1.0])
    >>> res = l1_ball_least_squares(G, b, 5.0, radius=1.0)
    >>> res.coef, round(res.objective, 12)
    (array([1., 0.]), 2.0)
    """
    G, b, c, radius = _check_problem(G, b, c, radius)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    d = b.size
    idx = np.arange(d) if support is None else np.unique(np.asarray(support, dtype=np.intp))
    if idx.size and (idx.min() < 0 or idx.max() >= d):
        raise ValueError(f"'support' must hold column indices in [0, {d}); got {list(idx)}.")
    beta = np.zeros(d)
    if idx.size == 0:
        return L1BallResult(beta, c, 0.0, 0, "unconstrained")
    sub = _solve_sub(G[np.ix_(idx, idx)], b[idx], c, radius, tol, max_iter)
    beta[idx] = sub.coef
    return L1BallResult(beta, sub.objective, sub.gap, sub.n_iter, sub.method)


def _solve_sub(G, b, c, radius, tol, max_iter):
    free = _unconstrained(G, b)
    if free is not None and np.abs(free).sum() <= radius:
        return L1BallResult(free, _objective(G, b, c, free), 0.0, 0, "unconstrained")
    beta, n_iter = _fista(G, b, c, radius, tol, max_iter)
    method = "projected-gradient"
    polished = _polish(G, b, radius, beta)
    if polished is not None and _objective(G, b, c, polished) <= _objective(G, b, c, beta):
        beta, method = polished, "polished"
    gap = max(0.0, l1_ball_duality_gap(G, b, beta, radius))
    return L1BallResult(beta, _objective(G, b, c, beta), gap, n_iter, method)


def _unconstrained(G, b):
    try:
        L = np.linalg.cholesky(G)
    except np.linalg.LinAlgError:
        return None
    if np.min(np.diag(L)) <= 1e-12 * max(1.0, np.max(np.diag(L))):
        return None
    return np.linalg.solve(L.T, np.linalg.solve(L, b))


def _fista(G, b, c, radius, tol, max_iter):
    """Accelerated projected gradient with gradient-based restart (O'Donoghue & Candes 2015)."""
    lipschitz = 2.0 * max(np.linalg.eigvalsh(G)[-1], 1e-300)
    step = 1.0 / lipschitz
    x = _project(np.zeros_like(b), radius)
    z, t = x.copy(), 1.0
    for k in range(1, max_iter + 1):
        x_new = _project(z - step * 2.0 * (G @ z - b), radius)
        if (z - x_new) @ (x_new - x) > 0:  # restart momentum
            t = 1.0
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        z = x_new + ((t - 1.0) / t_new) * (x_new - x)
        x, t = x_new, t_new
        if k % 10 == 0 and l1_ball_duality_gap(G, b, x, radius) <= tol * max(1.0, _rounding_scale(G, b, c, x)):
            return x, k
    return x, max_iter


def _rounding_scale(G, b, c, beta):
    """The size of the terms whose sum is the objective: its rounding error is ``eps`` times this.

    It bounds ``|objective|`` from above, so stopping at ``tol`` times it never waits longer than
    ``tol * |objective|`` would; it stops far sooner where the terms cancel (a residual near zero,
    as when a projected-PSD Gram matrix is singular and ``y`` lies in its span). There the gap of a
    merely convex problem shrinks only like ``1 / k^2`` and, computed in floating point, never
    falls below ``eps * |c|``: a relative-to-objective target was unreachable and ran to ``max_iter``.
    """
    a = np.abs(beta)
    return float(abs(c) + 2.0 * np.abs(b) @ a + a @ np.abs(G) @ a)


def _polish(G, b, radius, beta):
    """Solve the KKT system on the support and signs of ``beta``; ``None`` if not optimal."""
    scale = max(np.abs(beta).max(initial=0.0), 1e-300)
    on = np.abs(beta) > 1e-9 * scale
    if not on.any():
        return None
    s = np.sign(beta[on])
    k = int(on.sum())
    K = np.zeros((k + 1, k + 1))
    K[:k, :k] = G[np.ix_(on, on)]
    K[:k, k] = 0.5 * s
    K[k, :k] = s
    rhs = np.append(b[on], radius)
    try:
        sol = np.linalg.solve(K, rhs)
    except np.linalg.LinAlgError:
        return None
    lam = sol[k]
    out = np.zeros_like(beta)
    out[on] = sol[:k]
    grad = 2.0 * (G @ out - b)
    slack = 1e-9 * max(1.0, np.abs(grad).max(initial=0.0))
    if lam < -slack or np.any(np.sign(sol[:k]) != s) or np.any(np.abs(grad[~on]) > lam + slack):
        return None
    return out
