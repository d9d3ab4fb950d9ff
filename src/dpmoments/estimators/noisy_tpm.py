r"""The Wang & Anandkumar (2016) noisy tensor power method: a baseline for private tensor decomposition."""

import math
from dataclasses import dataclass

import numpy as np

from .._rng import as_generator
from .._validation import check_delta, check_epsilon, check_int
from .._validation import check_positive
from ..privacy import ApproxDP, ZCDP, classic_gaussian_sigma, compose, gaussian_rho
from ..solvers.tensor_power import tensor_apply

__all__ = ["NoisyTensorPowerResult", "noisy_tensor_power_method"]


@dataclass(frozen=True, eq=False)
class NoisyTensorPowerResult:
    """Output of :func:`noisy_tensor_power_method`.

    Attributes
    ----------
    eigenvalues : ndarray of shape (n_components,)
        Noisy ``lambda_k``.
    eigenvectors : ndarray of shape (n_components, K)
    noise_scale : float
        ``nu``; each step's noise is ``nu ||u||_inf^2`` (vector) or
        ``nu ||u||_inf^3`` (eigenvalue).
    step_epsilon, step_delta : float
        The paper's per-step ``(epsilon', delta')``.
    n_steps : int
        ``K L (R + 1)`` Gaussian steps.
    claimed : ApproxDP
        The paper's ``(epsilon, delta)``.
    guarantee : ApproxDP
        What the ``n_steps`` Gaussian steps really compose to (zCDP, exact
        per-step ``rho``), at the same ``delta``.
    """

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    noise_scale: float
    step_epsilon: float
    step_delta: float
    n_steps: int
    claimed: ApproxDP
    guarantee: ApproxDP


def noisy_tensor_power_method(T, n_components, *, epsilon, delta, sensitivity_l1, n_restarts=10, n_iter=30,
                              rng=None):
    r"""Wang & Anandkumar's (2016) differentially private tensor power method (a baseline).

    Each step releases :math:`T(I,u,u) + \nu\|u\|_\infty^2 z` and each
    restart's eigenvalue :math:`T(u,u,u) + \nu\|u\|_\infty^3 z'`, with
    :math:`\epsilon' = \epsilon/\sqrt{K L (R+1)(4 + \ln(2/\delta))}`,
    :math:`\delta' = \delta/(2KL(R+1))` and
    :math:`\nu = (s/\epsilon')\sqrt{2\ln(1.25/\delta')}` (``docs/algorithms.md``
    §2.6; ``s = 2`` reproduces the reference code). The restart with the
    largest noisy eigenvalue is kept and deflated.

    Parameters
    ----------
    T : array-like of shape (K, K, K)
    n_components : int
    epsilon : float in (0, inf)
    delta : float in (0, 1)
    sensitivity_l1 : float > 0
        ``s``: a bound on the entrywise L1 norm :math:`\sum|T - T'|` over
        neighbouring inputs. Then :math:`\|(T-T')(I,u,u)\|_2 \le s\|u\|_\infty^2`
        and :math:`|(T-T')(u,u,u)| \le s\|u\|_\infty^3`, so every step is a
        Gaussian mechanism with sensitivity-to-noise ratio ``s / nu``.
    n_restarts, n_iter : int
        ``L`` and ``R``.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    NoisyTensorPowerResult
        ``claimed`` is the paper's (epsilon, delta); ``guarantee`` the
        (epsilon, delta) that zCDP composition of the steps certifies.
    """
    T = np.array(T, dtype=np.float64)
    if T.ndim != 3 or len(set(T.shape)) != 1:
        raise ValueError(f"'T' must be a cubic 3-tensor of shape (K, K, K); got shape {T.shape}.")
    K = T.shape[0]
    r = check_int(n_components, "n_components", minimum=1)
    if r > K:
        raise ValueError(f"'n_components' must be an integer in [1, {K}]; got {r}.")
    epsilon = check_epsilon(epsilon, allow_inf=False)
    delta = check_delta(delta, allow_zero=False)
    s = check_positive(sensitivity_l1, "sensitivity_l1")
    L, R = check_int(n_restarts, "n_restarts"), check_int(n_iter, "n_iter")
    m = r * L * (R + 1)
    eps_step = epsilon / math.sqrt(m * (4.0 + math.log(2.0 / delta)))
    delta_step = delta / (2.0 * m)
    nu = classic_gaussian_sigma(eps_step, delta_step, s, allow_large_epsilon=True)
    gen = as_generator(rng)
    lams, vecs = np.empty(r), np.empty((r, K))
    for k in range(r):
        u = gen.standard_normal((L, K))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        for _ in range(R):
            scale = nu * np.max(np.abs(u), axis=1, keepdims=True) ** 2
            u = tensor_apply(T, u) + scale * gen.standard_normal((L, K))
            u /= np.linalg.norm(u, axis=1, keepdims=True)
        noisy = np.einsum("li,li->l", tensor_apply(T, u), u) + nu * np.max(np.abs(u), axis=1) ** 3 * gen.standard_normal(L)
        best = int(np.argmax(noisy))
        lams[k], vecs[k] = noisy[best], u[best]
        T -= lams[k] * np.einsum("i,j,k->ijk", vecs[k], vecs[k], vecs[k])
    # What holds: the m steps, each a Gaussian mechanism with sensitivity-to-noise ratio s / nu, composed in zCDP.
    holds = compose([ZCDP(gaussian_rho(nu, s))] * m, composition="zcdp").as_approx(delta)
    return NoisyTensorPowerResult(eigenvalues=lams, eigenvectors=vecs, noise_scale=nu, step_epsilon=eps_step,
                                  step_delta=delta_step, n_steps=m, claimed=ApproxDP(epsilon, delta), guarantee=holds)
