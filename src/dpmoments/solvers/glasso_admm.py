"""The ADMM for the graphical lasso of Boyd et al. (2011, §6.5), as in ``covsel.m``.

Paper-faithful: this is the solver of the DP-AGL reproduction (Su et al., ρ = 100),
specified in ``docs/algorithms.md`` §5.4. For speed use
:func:`dpmoments.solvers.graphical_lasso`.
"""

import math

import numpy as np
from scipy import linalg

from .._validation import check_int, check_positive
from ._glasso_common import GlassoResult, _objective, check_alpha, check_cov, pd_inverse

__all__ = ["graphical_lasso_admm"]

_MU, _TAU = 10.0, 2.0  # residual balancing (Boyd et al. 2011, eq. 3.13)


def _soft(A, kappa, penalize_diagonal):
    Z = np.sign(A) * np.maximum(np.abs(A) - kappa, 0.0)
    if not penalize_diagonal:
        np.fill_diagonal(Z, np.diag(A))
    return Z


def graphical_lasso_admm(S, alpha, *, rho=100.0, penalize_diagonal=True, abs_tol=1e-4, rel_tol=1e-2,
                         max_iter=1000, over_relaxation=1.0, residual_balancing=False, Z0=None, U0=None):
    """Graphical lasso by ADMM (Boyd et al. 2011 §6.5), exactly as ``covsel.m``.

    Solves

    .. math::

        \\min_{\\Theta \\succ 0}\\; -\\log\\det\\Theta + \\operatorname{tr}(S\\Theta)
            + \\alpha \\|\\Theta\\|_1
        \\quad\\text{split as}\\quad \\Theta - Z = 0,

    with the iteration (scaled dual ``U``)

    .. math::

        \\rho(Z^k - U^k) - S &= Q \\operatorname{diag}(l) Q^T, \\qquad
        \\Theta^{k+1} = Q \\operatorname{diag}\\Big(\\frac{l_i + \\sqrt{l_i^2 + 4\\rho}}{2\\rho}\\Big) Q^T, \\\\
        \\hat\\Theta &= a\\,\\Theta^{k+1} + (1 - a) Z^k, \\qquad
        Z^{k+1} = \\mathcal S_{\\alpha/\\rho}(\\hat\\Theta + U^k), \\qquad
        U^{k+1} = U^k + \\hat\\Theta - Z^{k+1},

    stopping when ``||Θ - Z||_F <= p·abs_tol + rel_tol·max(||Θ||_F, ||Z||_F)`` and
    ``ρ||Z^{k+1} - Z^k||_F <= p·abs_tol + rel_tol·||ρU||_F``.

    Parameters
    ----------
    S : array_like, shape (p, p)
        Symmetric covariance (may be indefinite, e.g. noisy).
    alpha : float
        Penalty ``>= 0``.
    rho : float, default 100.0
        ADMM penalty (the papers use 100; Boyd's code uses 1).
    penalize_diagonal : bool, default True
        Penalise ``|Θ_ii|`` too (papers, Boyd); False is scikit-learn's convention
        (the diagonal of ``Z`` is then not thresholded).
    abs_tol, rel_tol : float, default 1e-4, 1e-2
        Boyd's ``ABSTOL`` and ``RELTOL``.
    max_iter : int, default 1000
    over_relaxation : float, default 1.0
        ``a`` in ``[1, 1.8]`` is usual; must lie in ``(0, 2)``.
    residual_balancing : bool, default False
        Adapt ``rho`` (×/÷ 2 when one residual exceeds 10× the other), rescaling ``U``.
    Z0, U0 : array_like, shape (p, p), optional
        Starting ``Z`` and scaled dual ``U`` (default zeros, as in Boyd's code).

    Returns
    -------
    GlassoResult
        ``precision`` is the sparse iterate ``Z`` when it is positive definite,
        else the dense ``Θ`` iterate; ``covariance`` is its inverse;
        ``info`` holds ``rho``, ``primal_residual``, ``dual_residual`` and
        ``returned`` (``"Z"`` or ``"Theta"``). If the iterates blow up (an
        indefinite ``S`` with no solution at this ``alpha``, 
        ``docs/algorithms.md`` §0.5) the run stops early with ``converged=False``
        and a message; the result is still finite.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.solvers import graphical_lasso_admm
    >>> S = np.array([[1.0, 0.5], [0.5, 1.0]])
    >>> res = graphical_lasso_admm(S, 0.1, rho=1.0, abs_tol=1e-8, rel_tol=1e-8)
    >>> res.converged, res.precision.shape
    (True, (2, 2))
    """
    S = check_cov(S, "S")
    alpha = check_alpha(alpha)
    rho = check_positive(rho, "rho")
    abs_tol = check_positive(abs_tol, "abs_tol")
    rel_tol = check_positive(rel_tol, "rel_tol")
    max_iter = check_int(max_iter, "max_iter")
    a = check_positive(over_relaxation, "over_relaxation")
    if not a < 2:
        raise ValueError(f"'over_relaxation' must be in (0, 2); got {a}.")
    Z, U = _start(S, Z0, U0)
    bound = 1e12 * (1.0 + float(np.max(np.abs(S))))  # an iterate this large has left every solution
    X = None
    r = s = math.inf
    converged = diverged = False
    k = 0
    for k in range(1, max_iter + 1):
        Xn, Zn, Un, r, s = _admm_step(S, Z, U, rho, a, alpha, penalize_diagonal)
        if _diverging(r, s, Zn, Un, bound * max(1.0, rho, 1.0 / rho)):
            diverged = True
            if X is None:
                X = Xn if np.all(np.isfinite(Xn)) else np.eye(S.shape[0])
            break
        X, Z, U = Xn, Zn, Un
        if _meets_stopping_rule(r, s, X, Z, U, rho, abs_tol, rel_tol):
            converged = True
            break
        if residual_balancing:
            rho, U = _balance(r, s, rho, U)
    returned, precision, covariance = _estimate(Z, X)
    return GlassoResult(
        precision=precision, covariance=covariance,
        objective=_objective(S, precision, alpha, penalize_diagonal),
        n_iter=k, converged=converged, solver="admm", alpha=alpha, penalize_diagonal=bool(penalize_diagonal),
        message=_message(diverged, converged, k, max_iter),
        info={"rho": rho, "primal_residual": r, "dual_residual": s, "returned": returned, "diverged": diverged},
    )


def _start(S, Z0, U0):
    """Copies of the starting ``Z`` and scaled dual ``U`` (zeros unless given)."""
    p = S.shape[0]
    Z = np.zeros((p, p)) if Z0 is None else check_cov(Z0, "Z0")
    U = np.zeros((p, p)) if U0 is None else check_cov(U0, "U0")
    for name, M in (("Z0", Z), ("U0", U)):
        if M.shape != S.shape:
            raise ValueError(f"'{name}' must have the shape of 'S' {S.shape}; got {M.shape}.")
    return Z.copy(), U.copy()


def _admm_step(S, Z, U, rho, a, alpha, penalize_diagonal):
    """One ADMM iteration: the X update in closed form by an eigendecomposition, then Z and U."""
    l, Q = linalg.eigh(rho * (Z - U) - S, check_finite=False)
    th = (l + np.sqrt(l * l + 4.0 * rho)) / (2.0 * rho)
    Xn = (Q * th) @ Q.T
    Xn = 0.5 * (Xn + Xn.T)
    Xh = a * Xn + (1.0 - a) * Z if a != 1.0 else Xn  # over-relaxation
    Zn = _soft(Xh + U, alpha / rho, penalize_diagonal)
    Un = U + Xh - Zn
    return Xn, Zn, Un, float(np.linalg.norm(Xn - Zn)), rho * float(np.linalg.norm(Zn - Z))


def _diverging(r, s, Zn, Un, bound):
    finite = np.isfinite(r) and np.isfinite(s) and np.all(np.isfinite(Un))
    return not (finite and np.max(np.abs(Un)) < bound and np.max(np.abs(Zn)) < bound)


def _meets_stopping_rule(r, s, X, Z, U, rho, abs_tol, rel_tol):
    """Boyd et al.'s primal and dual residual tolerances (2011, §3.3.1)."""
    p = X.shape[0]
    eps_pri = p * abs_tol + rel_tol * max(float(np.linalg.norm(X)), float(np.linalg.norm(Z)))
    eps_dual = p * abs_tol + rel_tol * rho * float(np.linalg.norm(U))
    return r <= eps_pri and s <= eps_dual


def _balance(r, s, rho, U):
    """Residual balancing: move rho towards the lagging residual, rescaling the scaled dual with it."""
    if r > _MU * s:
        return rho * _TAU, U / _TAU
    if s > _MU * r:
        return rho / _TAU, U * _TAU
    return rho, U


def _estimate(Z, X):
    """``(which iterate, precision, covariance)``: the sparse Z when it is PD, else the eigen-formula X."""
    covariance = pd_inverse(Z) if np.any(Z) else None
    if covariance is not None:
        return "Z", Z, covariance
    covariance = pd_inverse(X)
    if covariance is not None:
        return "Theta", X, covariance
    # Θ from the eigen formula is PD in exact arithmetic
    l, Q = linalg.eigh(X, check_finite=False)
    l = np.maximum(l, 1e-12 * max(1.0, float(l.max())))
    return "Theta", (Q * l) @ Q.T, (Q / l) @ Q.T


def _message(diverged, converged, k, max_iter):
    if diverged:
        return ("ADMM diverged: the noisy S has no graphical-lasso solution at this alpha (the objective is "
                "unbounded below, docs/algorithms.md §0.5); project S to the PSD cone first (Release.project_psd) "
                "or increase alpha. The last finite iterate is returned.")
    if converged:
        return f"converged in {k} iterations"
    return f"did not meet the stopping rule in max_iter={max_iter} iterations"
