r"""Certified minima of :math:`Q_R(M)` for a whole family of models, with work that does not depend on the data.

Lei et al.'s score of a model :math:`M` is the exact minimum

.. math::

    Q_R(M) = \min_{\operatorname{supp}\beta \subseteq M,\ \lVert\beta\rVert_1 \le R}
             c - 2 b^\top \beta + \beta^\top G \beta ,

whose sensitivity is proven for the exact minimum only. A solver returns the
objective :math:`\hat Q = f(\hat\beta)` at a feasible :math:`\hat\beta` and the
Frank--Wolfe gap :math:`g = \nabla f(\hat\beta)^\top\hat\beta + R\lVert\nabla f(\hat\beta)_M\rVert_\infty`,
which bounds :math:`\hat Q - Q_R(M)` from above; since :math:`\hat\beta` is
feasible, :math:`Q_R(M) \le \hat Q \le Q_R(M) + g`. :func:`certified_objectives`
returns :math:`\hat Q` only when :math:`g \le` ``tolerance`` and refuses otherwise,
so every returned value lies in :math:`[Q_R(M), Q_R(M) + \tau]`.

Constant work: for every model the same operations run on arrays of the same
shape, whatever the data: two batched eigendecompositions (the Lipschitz
constant and the unconstrained candidate), exactly ``n_iter`` accelerated
projected-gradient steps (FISTA, no early exit; the projection always sorts),
one fixed-size KKT "polish" solve and the gaps of the three candidates, of
which the certified one with the least objective is kept. What still varies
with the data: the comparisons inside the sort, and the floating-point unit's
speed on subnormal numbers (rare here); the work is otherwise a function of
the public shapes (number of models, ``d``) and ``n_iter``.

Pure numerics: no privacy is spent here.
"""

import numpy as np

from .._validation import check_int, check_positive

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


def certified_objectives(G, b, c, radius, supports, *, tolerance, n_iter=500):
    """Objectives within ``tolerance`` of the exact minima :math:`Q_R(M)`, for every model, or refuse.

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
        The largest duality gap accepted: every returned value ``q`` has
        ``Q_R(M) <= q <= Q_R(M) + tolerance``.
    n_iter : int, default=500
        Projected-gradient iterations, run in full for every model.

    Returns
    -------
    objectives, gaps : ndarray of shape (n_models,)

    Raises
    ------
    ValueError
        When some model's best candidate is not certified to ``tolerance``
        (raise ``n_iter``). The message carries no data-dependent detail.
    """
    radius = check_positive(radius, "radius")
    tolerance = check_positive(tolerance, "tolerance")
    n_iter = check_int(n_iter, "n_iter", minimum=1)
    G = np.asarray(G, dtype=np.float64)
    G, b = 0.5 * (G + G.T), np.asarray(b, dtype=np.float64)
    supports = list(supports)
    parts = [_certify(G, b, float(c), radius, supports[i:i + _BATCH], tolerance, n_iter)
             for i in range(0, len(supports), _BATCH)]  # bounded memory: a fixed number of models at a time
    objectives, gaps = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    if np.isnan(objectives).any():  # the message says which bound to raise, never which or how many models failed
        raise ValueError(f"could not certify every Q_R to the duality gap {tolerance:.3g} within 'qp_iterations'; "
                         "raise it (or 'gap_tolerance').")
    return objectives, gaps


def _certify(G, b, c, radius, supports, tolerance, n_iter):
    """One batch: the certified objective and gap of each model (NaN where none is certified)."""
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
    best = np.argmin(np.where(ok, objectives, np.inf), axis=0)
    rows = np.arange(mask.shape[0])
    certified = ok.any(axis=0)
    return np.where(certified, objectives[best, rows], np.nan), np.where(certified, gaps[best, rows], np.nan)
