r"""Minima of :math:`Q_R(M)` for a family of models, each within a public tolerance, by work independent of the data.

Lei et al.'s score of a model :math:`M` is the exact minimum

.. math::

    Q_R(M) = \min_{\operatorname{supp}\beta \subseteq M,\ \lVert\beta\rVert_1 \le R}
             c - 2 b^\top \beta + \beta^\top G \beta ,

whose sensitivity is proven for the exact minimum only. :func:`certified_objectives` returns, for
every model, the objective :math:`q = f(\hat\beta)` at a feasible :math:`\hat\beta` (so
:math:`Q_R(M) \le q`) with :math:`q \le Q_R(M) + \tau` for **every** input, where ``tau`` is the
public ``tolerance``: the value's sensitivity is then that of the exact minimum plus ``tau``, with no
refusal and no data-dependent branch. Two sources, both run in full for every model:

1. the fast path of before: the unconstrained candidate, exactly ``n_iter`` accelerated projected
   gradient steps (FISTA with adaptive restart, no early exit; the projection always sorts) and a
   fixed-size KKT "polish"; each candidate's Frank--Wolfe gap
   :math:`g = \nabla f(\hat\beta)^\top\hat\beta + R\lVert\nabla f(\hat\beta)_M\rVert_\infty` bounds
   :math:`f(\hat\beta) - Q_R(M)`, and where one is at most ``tau`` the least such objective is kept
   (the value this module returned before, unchanged to the bit);
2. otherwise the best of all the feasible points, among them the best centre of the central-cut
   ellipsoid method (:mod:`dpmoments.solvers.l1_ball_ellipsoid`), run for a number of steps fixed
   by the model's size, the public ``spread`` (an upper bound of :math:`\max f - \min f` on the
   ball) and ``tau``, after which the ellipsoid bound guarantees :math:`f - Q_R(M) < \tau` whatever
   the data. The best of several feasible points is no worse than the ellipsoid's.

Either way the value lies in :math:`[Q_R(M), Q_R(M) + \tau]`; which of the two it came from depends
on the data but decides nothing else: the same operations run on arrays of the same shapes. What
still varies with the data: the comparisons inside the sort, and the floating-point unit's speed on
subnormal numbers (rare here); the work is otherwise a function of the public shapes (number of
models, ``d``), ``n_iter``, ``spread`` and ``tau``.

Pure numerics: no privacy is spent here.
"""

import numpy as np

from .._validation import check_int, check_positive
from .l1_ball_ellipsoid import ellipsoid_objectives, ellipsoid_steps

__all__ = ["certified_objectives"]

_BATCH = 512


def _masks(supports, d):
    mask = np.zeros((len(supports), d), dtype=bool)
    for i, support in enumerate(supports):
        mask[i, list(support)] = True
    return mask


def _project(V, radius):
    """Row-wise Euclidean projection onto the L1 ball (Duchi et al. 2008), with no data-dependent shortcut."""
    A = np.abs(V)
    U = -np.sort(-A, axis=1)
    css = np.cumsum(U, axis=1) - radius
    k = np.arange(1, V.shape[1] + 1)
    last = np.maximum((U * k > css).sum(axis=1) - 1, 0)  # the largest index with u_k k > css_k (a prefix)
    theta = np.maximum(np.take_along_axis(css, last[:, None], axis=1) / (last[:, None] + 1.0), 0.0)
    inside = A.sum(axis=1, keepdims=True) <= radius
    return np.where(inside, V, np.sign(V) * np.maximum(A - theta, 0.0)) + 0.0


def _feasible(B, radius):
    """``B`` moved onto the L1 ball where rounding left it just outside, so that ``||b||_1 <= R`` exactly.

    The shrink margin covers the rounding of the float sum itself (at most ``d`` ulps).
    """
    margin = 1.0 - 4.0 * B.shape[1] * np.finfo(float).eps
    total = np.abs(B).sum(axis=1, keepdims=True)
    outside = total > radius * margin
    return np.where(outside, B * (radius * margin / np.where(outside, total, 1.0)), B)


def _objective(G, b, c, B):
    return c - 2.0 * np.einsum("md,d->m", B, b) + np.einsum("md,mde,me->m", B, G, B)


def _gap(G, b, B, mask, radius):
    grad = 2.0 * (np.einsum("mde,me->md", G, B) - b * mask)
    return np.einsum("md,md->m", grad, B) + radius * np.max(np.abs(grad) * mask, axis=1)


def _fista(G, b, mask, radius, lipschitz, n_iter):
    step = (1.0 / lipschitz)[:, None]
    bm = b * mask
    X = np.zeros(mask.shape)
    Z, t = X.copy(), np.ones((mask.shape[0], 1))
    for _ in range(n_iter):
        X_new = _project(Z - step * 2.0 * (np.einsum("mde,me->md", G, Z) - bm), radius)
        restart = np.einsum("md,md->m", Z - X_new, X_new - X)[:, None] > 0  # adaptive restart, per model
        t = np.where(restart, 1.0, t)
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        Z = X_new + ((t - 1.0) / t_new) * (X_new - X)
        X, t = X_new, t_new
    return X


def _polish(G, b, mask, radius, B):
    """Solve the KKT system on the support and signs of ``B`` (same shape for every model)."""
    m, d = B.shape
    scale = np.maximum(np.abs(B).max(axis=1, keepdims=True), 1e-300)
    on = (np.abs(B) > 1e-9 * scale) & mask
    s = np.sign(B) * on
    K = np.zeros((m, d + 1, d + 1))
    K[:, :d, :d] = np.where(on[:, :, None] & on[:, None, :], G, 0.0) + np.eye(d) * ~on[:, :, None]
    K[:, :d, d] = 0.5 * s
    K[:, d, :d] = s
    rhs = np.concatenate([b * on, np.full((m, 1), radius)], axis=1)
    sol = np.einsum("mij,mj->mi", np.linalg.pinv(K), rhs)
    return np.where(on, sol[:, :d], 0.0)


def _unconstrained(G, b, mask, top):
    # The least-squares solution on the support; off the support the diagonal is set to the top eigenvalue,
    # so that the matrix is invertible there without changing the scale of its spectrum.
    d = mask.shape[1]
    lam, Q = np.linalg.eigh(G + np.eye(d) * (~mask * top[:, None])[:, :, None])
    keep = lam > 1e-12 * top[:, None]
    coeffs = np.einsum("mdk,md->mk", Q, b * mask) / np.where(keep, lam, 1.0) * keep
    return np.einsum("mdk,mk->md", Q, coeffs) * mask


def certified_objectives(G, b, c, radius, supports, *, tolerance, spread, n_iter=500):
    """Objectives within ``tolerance`` of the exact minima :math:`Q_R(M)`, for every model and every input.

    Parameters
    ----------
    G : ndarray of shape (d, d)
        Symmetric positive semi-definite (``X^T X``).
    b : ndarray of shape (d,)
    c : float
    radius : float > 0
    supports : sequence of sequences of int
        The models (column indices; may be empty).
    tolerance : float > 0
        Every returned value ``q`` has ``Q_R(M) <= q <= Q_R(M) + tolerance``.
    spread : float > 0
        A public upper bound of ``max f - min f`` over the ball, for every model: ``n (r + bR)^2``
        when the rows are clipped to ``|x_ij| <= b`` and ``|y_i| <= r``. The guarantee holds
        only if it is one; the ellipsoid's number of steps grows with its logarithm.
    n_iter : int, default=500
        Projected-gradient iterations of the fast path, run in full for every model.

    Returns
    -------
    objectives : ndarray of shape (n_models,)
    bounds : ndarray of shape (n_models,)
        An upper bound of ``objective - Q_R(M)`` for each model, at most ``tolerance``: the
        computed duality gap where the fast path certified it, the ellipsoid's guarantee otherwise.
    """
    radius = check_positive(radius, "radius")
    tolerance = check_positive(tolerance, "tolerance")
    spread = check_positive(spread, "spread")
    n_iter = check_int(n_iter, "n_iter", minimum=1)
    G = np.asarray(G, dtype=np.float64)
    G, b = 0.5 * (G + G.T), np.asarray(b, dtype=np.float64)
    supports = list(supports)
    ellipsoid = _ellipsoid_values(G, b, float(c), radius, supports, spread, tolerance)
    parts = [_certify(G, b, float(c), radius, supports[i:i + _BATCH], ellipsoid[i:i + _BATCH], tolerance, n_iter)
             for i in range(0, len(supports), _BATCH)]  # bounded memory: a fixed number of models at a time
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _ellipsoid_values(G, b, c, radius, supports, spread, tolerance):
    """Each model's objective at its best ellipsoid centre.

    The models run in groups of sizes (:func:`_ellipsoid_plan`), each for the steps its largest size
    needs (:func:`ellipsoid_steps`; more only shrink the ellipsoids further) on blocks of that size:
    the work depends on the family, ``spread`` and ``tolerance`` only.
    """
    supports = [sorted({int(j) for j in support}) for support in supports]
    values = np.full(len(supports), c)  # the empty model's only point is 0
    for sizes in _ellipsoid_plan([len(m) for m in supports], spread, tolerance):
        rows = [i for i, m in enumerate(supports) if len(m) in sizes]
        width, steps = max(sizes), ellipsoid_steps(max(sizes), spread, tolerance)
        for start in range(0, len(rows), _BATCH):
            chunk = rows[start:start + _BATCH]
            idx = np.zeros((len(chunk), width), dtype=np.intp)  # padded with column 0, masked out
            mask = np.zeros((len(chunk), width), dtype=bool)
            for k, i in enumerate(chunk):
                idx[k, :len(supports[i])], mask[k, :len(supports[i])] = supports[i], True
            both = mask[:, :, None] & mask[:, None, :]
            block = np.where(both, G[idx[:, :, None], idx[:, None, :]], 0.0)
            values[chunk] = ellipsoid_objectives(block, np.where(mask, b[idx], 0.0), c, radius, mask, steps)
    return values


# The cost model of one ellipsoid step that chooses the plan: a fixed overhead per batch, plus a time per
# model and per entry of its (s, s) block (seconds, measured on one core with numpy's einsum).
_STEP_OVERHEAD, _STEP_PER_MODEL, _STEP_PER_ENTRY = 35e-6, 1e-7, 7e-9


def _ellipsoid_plan(sizes, spread, tolerance):
    """Groups of consecutive model sizes to run together, padded to the group's largest: the cheapest plan.

    A group runs for the steps its largest size needs, so merging saves steps (and their fixed overhead)
    and costs wider blocks. Public values only (the sizes of the family's models, ``spread``,
    ``tolerance``); dynamic programming over the distinct sizes.
    """
    counts = {s: sizes.count(s) for s in set(sizes) if s > 0}
    distinct = sorted(counts)

    def cost(group):
        width, models = max(group), sum(counts[s] for s in group)
        per_step = -(-models // _BATCH) * _STEP_OVERHEAD + models * (_STEP_PER_MODEL + width * width * _STEP_PER_ENTRY)
        return ellipsoid_steps(width, spread, tolerance) * per_step

    best = [(0.0, [])]  # best[k]: the cheapest plan of the k smallest sizes
    for k in range(1, len(distinct) + 1):
        best.append(min((best[i][0] + cost(distinct[i:k]), best[i][1] + [distinct[i:k]]) for i in range(k)))
    return best[-1][1]


def _certify(G, b, c, radius, supports, ellipsoid, tolerance, n_iter):
    """One batch: each model's value and the bound on its distance above the exact minimum.

    The fast path's certified value where it has one (bit for bit the value of before), otherwise the
    least objective of every feasible candidate and of the ellipsoid's best centre (``ellipsoid``).
    """
    mask = _masks(supports, b.size)
    Gm = G[None] * (mask[:, :, None] & mask[:, None, :])
    top = np.maximum(np.linalg.eigvalsh(Gm)[:, -1], 1e-300)
    free = _unconstrained(Gm, b, mask, top)
    fista = _fista(Gm, b, mask, radius, 2.0 * top, n_iter)
    polished = _project(_polish(Gm, b, mask, radius, fista), radius)
    candidates = np.stack([_feasible(B, radius) for B in (free, fista, polished)])  # (3, m, d), all in the ball
    objectives = np.stack([_objective(Gm, b, c, B) for B in candidates])
    gaps = np.maximum(np.stack([_gap(Gm, b, B, mask, radius) for B in candidates]), 0.0)
    ok = (gaps <= tolerance) & np.isfinite(objectives)
    rows = np.arange(mask.shape[0])
    fast = np.argmin(np.where(ok, objectives, np.inf), axis=0)
    guaranteed = np.minimum(np.min(np.where(np.isfinite(objectives), objectives, np.inf), axis=0), ellipsoid)
    certified = ok.any(axis=0)
    values = np.where(certified, objectives[fast, rows], guaranteed)
    return values, np.where(certified, gaps[fast, rows], tolerance)
