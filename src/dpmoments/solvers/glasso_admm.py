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
    p = S.shape[0]
    Z = np.zeros((p, p)) if Z0 is None else check_cov(Z0, "Z0")
    U = np.zeros((p, p)) if U0 is None else check_cov(U0, "U0")
    for name, M in (("Z0", Z), ("U0", U)):
        if M.shape != S.shape:
            raise ValueError(f"'{name}' must have the shape of 'S' {S.shape}; got {M.shape}.")
    Z, U = Z.copy(), U.copy()
    scale = 1.0 + float(np.max(np.abs(S)))
    X = None
    r = s = math.inf
    converged = diverged = False
    k = 0
    for k in range(1, max_iter + 1):
        l, Q = linalg.eigh(rho * (Z - U) - S, check_finite=False)
        th = (l + np.sqrt(l * l + 4.0 * rho)) / (2.0 * rho)
        Xn = (Q * th) @ Q.T
        Xn = 0.5 * (Xn + Xn.T)
        Xh = a * Xn + (1.0 - a) * Z if a != 1.0 else Xn
        Zn = _soft(Xh + U, alpha / rho, penalize_diagonal)
        Un = U + Xh - Zn
        r = float(np.linalg.norm(Xn - Zn))
        s = rho * float(np.linalg.norm(Zn - Z))
        bound = 1e12 * scale * max(1.0, rho, 1.0 / rho)
        if not (np.isfinite(r) and np.isfinite(s) and np.all(np.isfinite(Un)) and np.max(np.abs(Un)) < bound
                and np.max(np.abs(Zn)) < bound):
            diverged = True
            if X is None:
                X = Xn if np.all(np.isfinite(Xn)) else np.eye(p)
            break
        X, Z, U = Xn, Zn, Un
        eps_pri = p * abs_tol + rel_tol * max(float(np.linalg.norm(X)), float(np.linalg.norm(Z)))
        eps_dual = p * abs_tol + rel_tol * rho * float(np.linalg.norm(U))
        if r <= eps_pri and s <= eps_dual:
            converged = True
            break
        if residual_balancing:
            if r > _MU * s:
                rho *= _TAU
                U /= _TAU
            elif s > _MU * r:
                rho /= _TAU
                U *= _TAU
    returned = "Z"
    precision = Z
    covariance = pd_inverse(Z) if np.any(Z) else None
    if covariance is None:
        returned, precision = "Theta", X
        covariance = pd_inverse(X)
        if covariance is None:  # Θ from the eigen formula is PD in exact arithmetic
            l, Q = linalg.eigh(X, check_finite=False)
            l = np.maximum(l, 1e-12 * max(1.0, float(l.max())))
            precision = (Q * l) @ Q.T
            covariance = (Q / l) @ Q.T
    if diverged:
        message = ("ADMM diverged: the noisy S has no graphical-lasso solution at this alpha (the objective is "
                   "unbounded below, docs/algorithms.md §0.5); project S to the PSD cone first (Release.project_psd) "
                   "or increase alpha. The last finite iterate is returned.")
    elif converged:
        message = f"converged in {k} iterations"
    else:
        message = f"did not meet the stopping rule in max_iter={max_iter} iterations"
    return GlassoResult(
        precision=precision, covariance=covariance,
        objective=_objective(S, precision, alpha, penalize_diagonal),
        n_iter=k, converged=converged, solver="admm", alpha=alpha, penalize_diagonal=bool(penalize_diagonal),
        message=message,
        info={"rho": rho, "primal_residual": r, "dual_residual": s, "returned": returned, "diverged": diverged},
    )
