r"""Where clipping may turn the first principal component: its eigenvalue's upper end past first order.

Clipping removed a positive semi-definite :math:`D` from the second moment. The first-order upper end of
:math:`\lambda_1(S + D)` (:mod:`.eigenvalue_budget`) adds the loss along the released component, :math:`w^\top D w`:
it holds while the loss cannot turn the component, and fails where it can (star98 at epsilon 1: clipping shrank the
first eigenvalue 8-fold and turned its component about 50 degrees, so the loss along the released component was a
tenth of what the eigenvalue lost; 3 of the 6 first eigenvalues that excluded 0 missed the full-data value, grunfeld
1 of 4). With ``u`` the unit direction of :math:`P D w` (``P`` the projection off the released components down to
``w``), every unit vector is :math:`\cos\theta\, w + \sin\theta\, x` with ``x`` off them, and
:math:`S + D` is bounded on it by the 2 x 2 matrix

.. math:: \begin{pmatrix} \lambda_1 + a & b \\ b & \lambda_2 + c \end{pmatrix},
          \qquad a = w^\top D w,\; b = \|P D w\|,\; c = \lambda_1(P D P),

whose top eigenvalue is the turn-proof upper end (Courant-Fischer; about :math:`\lambda_1 + a + b^2/\mathrm{gap}` while
the eigengap stands, :math:`\max(\lambda_1 + a, \lambda_2 + c) + b` whatever). It is used only where the release says
the first-order end is unreliable (:func:`turn_parts`): where the loss matrix's released mass off the component,
above what its noise puts there, is at least half the released eigengap below it (``TURN_GAP_SHARE``), or its
released top loss off the component is at least twice that gap (``TURN_OVERTAKE``: another direction may overtake).
There ``a`` is the first-order allowance itself (the loss, its noise, noise and sampling, the centre's bias), and
``b`` and ``c`` the released loss matrix's, times the tail factor, their noise left in (a norm and a top eigenvalue of
a noisy matrix: above the noise-free ones on average). Elsewhere the first-order end stands.

**The first component only.** Its direction gathers the largest rows, and with them the loss; applied to every
component the rule flags most later ones (their eigengaps below are small, near-ties, and the released mass off them
is mostly noise) and doubled the median widths on every table (RAND HIE 0.79 -> 1.86, the Gaussian simulation 24 ->
54, breast cancer 147 -> 499 times the full-data value, ``COVERAGE_ANALYSES=pca python -m benchmarks coverage``)
where no later eigenvalue had missed. A later component's turn is what its interval leaves out
(``error_budget["clipping"]["may_turn"]`` says so). Released values and the released components only: no rows.
"""

import numpy as np

from .._lazy import lazy_module

linalg = lazy_module("scipy.linalg")  # imported when a turn is first bounded
sparse_linalg = lazy_module("scipy.sparse.linalg")

DENSE_UP_TO = 200

__all__ = ["TURN_GAP_SHARE", "TURN_OVERTAKE", "TURN_TEXT", "turn_parts", "turned_upper"]

# The released off-component mass (above its noise) against the released eigengap below, and the released top loss
# off the component against it, above which the first-order upper end is not trusted. Measured (`python -m benchmarks
# coverage`, 20 fits, epsilon 1): the first eigenvalues that missed (star98, grunfeld) had mass / gap 0.7-5.7 or top
# loss / gap 5-28; where first order held on RAND HIE and the Gaussian simulation, mass / gap 0.02-0.23 and top loss /
# gap 0.2-1.4.
TURN_GAP_SHARE = 0.5
TURN_OVERTAKE = 2.0

TURN_TEXT = ("first component only: where the loss matrix's released mass off it (above its noise) is at least half "
             "its released eigengap below, or the released top loss off it at least twice that gap, clipping may turn "
             "it, and its upper end is the top eigenvalue of the 2 x 2 bound [[lambda_1 + first-order allowance, b], "
             "[b, lambda_2 + c]] (b the released mass off it, c the released top loss off it, both times the tail "
             "factor); later components keep first order: a turn of theirs is not covered")


def turn_parts(matrix, components, scales, spectrum, tail, noise_sd):
    """``(b, c, below, turned)`` (k,) for the released ``components`` (k, d, orthonormal in the data's units): the loss
    matrix's released mass off the first component and its top eigenvalue off it (the data's units, times ``tail``; 0
    for the later components), the released eigenvalue below it (``-inf`` for the last of the spectrum), and where
    the first component may be turned (module docstring; later components never). ``noise_sd`` the loss matrix's
    diagonal noise sd (off it ``noise_sd / sqrt 2``). ``None`` without a loss matrix or a spectrum."""
    if matrix is None or spectrum is None:
        return None
    values = np.asarray(spectrum, dtype=float)
    k, d = components.shape
    with np.errstate(over="ignore", invalid="ignore"):
        L = np.asarray(matrix, dtype=float) * np.multiply.outer(scales, scales)  # the loss in the data's units
    if not np.all(np.isfinite(L)):  # scales past 1e154 overflow: no turn-proof bound, first order stands
        return None
    b, c = np.zeros(k), np.zeros(k)  # the first component's only (module docstring); 0 for the later ones
    w = components[0]
    Lw = L @ w
    b[0] = np.linalg.norm(Lw - (w @ Lw) * w)
    if d > 1:
        c[0] = _top_off(L, w)
    # the noise's share of b^2: (N W)_i has variance about tau^2 ||W||^2 / 2 (W = s v, the entries off the diagonal of
    # sd tau / sqrt 2), and the data's units scale entry i by s_i; what stands above it is the mass the release sees
    noise_sq = float(noise_sd) ** 2 / 2.0 * np.sum((components * scales) ** 2, axis=1) * float(np.sum(scales**2))
    seen = tail * np.sqrt(np.maximum(b**2 - noise_sq, 0.0))
    b, c = tail * b, tail * np.maximum(c, 0.0)
    below = np.append(values[1:], -np.inf)[:k]
    gap = values[:k] - below
    turned = (seen >= TURN_GAP_SHARE * gap) | (c >= TURN_OVERTAKE * gap)
    turned[1:] = False  # the first component only (module docstring)
    return b, c, below, turned


def _top_off(L, w):
    """The top eigenvalue of ``P L P``, ``P = I - w w'``: dense below ``DENSE_UP_TO`` columns, else by Lanczos on the
    product (no second d x d array: a dense one took 0.7 s at d = 1000), from a fixed start (deterministic; not a
    draw)."""
    d = len(w)

    def off(x):
        x = x - (w @ x) * w
        y = L @ x
        return y - (w @ y) * w

    if d <= DENSE_UP_TO:
        return _dense_top_off(L, w)
    operator = sparse_linalg.LinearOperator((d, d), matvec=off, dtype=float)
    try:
        start = np.sin(np.arange(1.0, d + 1.0))  # generic: no eigenvector of P L P in practice, not a draw
        return float(sparse_linalg.eigsh(operator, k=1, which="LA", v0=start, tol=1e-8, return_eigenvectors=False)[0])
    except sparse_linalg.ArpackError:  # Lanczos did not settle (or broke down): the dense way, slower but sure
        return _dense_top_off(L, w)


def _dense_top_off(L, w):
    """The top eigenvalue of ``P L P`` formed densely (up to ``DENSE_UP_TO`` columns, or where Lanczos fails)."""
    P = np.eye(len(w)) - np.outer(w, w)
    return float(linalg.eigh(P @ L @ P, eigvals_only=True, subset_by_index=[len(w) - 1, len(w) - 1])[0])


def turned_upper(first_order_upper, below, b, c):
    """The 2 x 2 bound's top eigenvalue (module docstring), its first diagonal entry the first-order upper end
    (``lambda_1 + a``), ``below`` the released eigenvalue under the component (``-inf``: the first-order end stands);
    never below the first-order end."""
    bottom = np.where(np.isfinite(below), below + c, -np.inf)
    with np.errstate(invalid="ignore"):
        value = (first_order_upper + bottom) / 2 + np.sqrt(((first_order_upper - bottom) / 2) ** 2 + b**2)
    return np.where(np.isfinite(bottom), np.maximum(value, first_order_upper), first_order_upper)
