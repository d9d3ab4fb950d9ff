r"""What clipping removed from each variance, released privately, so that intervals can count it.

Clipping a row :math:`z` to :math:`\|z\|\le R` multiplies it by :math:`b = \min(1, R/\|z\|)`, so the
second moment loses :math:`\frac1n\sum_i z_i z_i^\top (1 - b_i^2)`: a positive semi-definite matrix
whose diagonal is what each column's variance lost. A column with a heavy tail can lose a quarter of
its variance while under 1% of rows are clipped (statsmodels' RAND HIE ``mdvis``). That loss is a
statistic of the data like any other: this module releases, with its own share of the budget, its
diagonal between :math:`R` and a larger public multiple :math:`R' = \kappa R`,

.. math:: v_j = \frac1n \sum_i z_{ij}^2\,(a_i^2 - b_i^2), \qquad a_i = \min(1, R'/\|z_i\|),

and, beside it, the noisy number of rows beyond :math:`R'`, whose loss beyond :math:`R'` the
release cannot see (``COUNT_FRACTION`` of the part's share). With an L2 law (Gaussian noise) and at most
``LOSS_MATRIX_FEATURES`` columns the vector is the diagonal of a released *matrix*, the whole loss
:math:`L = \frac1n \sum_i z_i z_i^\top (a_i^2 - b_i^2)` (``loss_matrix``), at the same share and guarantee
(below): along any direction :math:`w` its noise has sd :math:`\tau \|w\|^2`, ``tau`` the vector's, where the
diagonal alone bounds :math:`w^\top L w` only through the columns' caps and every column's noise.

Privacy
-------
Per row the vector :math:`w_i = (z_{i1}^2(a_i^2-b_i^2), \dots, z_{id}^2(a_i^2-b_i^2))` has
non-negative entries summing to :math:`\|z_i\|^2(a_i^2 - b_i^2) \le (\kappa^2 - 1)R^2`, so
:math:`\|w_i\|_2 \le \|w_i\|_1 \le (\kappa^2-1)R^2`, and two such vectors differ by at most
:math:`\sqrt{\|w\|^2 + \|w'\|^2} \le \sqrt2(\kappa^2-1)R^2` in L2 (non-negative vectors) and
:math:`2(\kappa^2-1)R^2` in L1. Their mean is released with Gaussian noise (L2 sensitivity
:math:`\sqrt2(\kappa^2-1)R^2/n` under replace-one, :math:`(\kappa^2-1)R^2/n` under zero-out) or
Laplace noise (L1, :math:`2(\kappa^2-1)R^2/n` and :math:`(\kappa^2-1)R^2/n`). Under add-remove the
sum is released (L2 and L1 sensitivity :math:`(\kappa^2-1)R^2`) and divided by the main release's
noisy count (post-processing). The count beyond :math:`R'` has sensitivity 1 under every relation
(Gaussian of sd :math:`1/\sqrt{2\rho}`, rho-zCDP, or Laplace :math:`1/\epsilon`). ``R``,
``kappa``, the centre and the scales are outputs of earlier private steps or public; ``n`` is public
under replace-one and zero-out. The two releases compose (:func:`dpmoments.privacy.compose`).

The matrix: each row adds the positive semi-definite :math:`M_i = (a_i^2 - b_i^2) z_i z_i^\top`, of Frobenius
norm :math:`\|z_i\|^2 (a_i^2 - b_i^2) \le (\kappa^2-1)R^2`, and two such differ by at most
:math:`\sqrt{\|M\|_F^2 + \|M'\|_F^2} \le \sqrt2(\kappa^2-1)R^2` (:math:`\operatorname{tr}(MM') \ge 0`): the
L2 sensitivities above. It is released as the vector :math:`(L_{jj}, \sqrt2 L_{jk})_{j<k}` (an isometry of the
Frobenius norm) with the same noise on every coordinate: the diagonal is the vector's own release (the same draws,
so the vector is unchanged) and each off-diagonal entry carries noise of sd :math:`\tau/\sqrt2`. The same
Gaussian mechanism at the same sensitivity, so the same guarantee; an L1 law (Laplace) would need a sensitivity
``d`` times larger and releases the vector only.
"""

import functools
import math

import numpy as np

from .._rng import spawn
from ..mechanisms import gaussian_noise, laplace_noise
from ..privacy import ZCDP, PureDP, compose
from ..data import as_source, iter_chunks
from .calibrated import calibrate
from .accumulate import _block_rows
from .binned_sums import compiled_binned
from .dask_moments import dask_moment_sums_with

__all__ = ["OUTER_FACTOR", "COUNT_FRACTION", "clipping_excess_sums", "release_clipping_excess",
           "record_clipping_excess", "ExcessTap", "excess_row_bound", "excess_sensitivity", "excess_mean",
           "excess_released", "LOSS_MATRIX_FEATURES", "wants_loss_matrix"]

OUTER_FACTOR = 2.0  # kappa: R' = 2R. The noise grows with kappa^2 - 1; rows beyond 2R are counted instead
COUNT_FRACTION = 0.1  # of the part's share, for the count of rows beyond R'
# The loss matrix is summed and released up to this many columns: beyond, a second d x d array (8 d^2 bytes, 800 MB
# at d = 10 000) beside the second moment's, with its d^2 / 2 draws, would cost the large tables what they cannot spare
LOSS_MATRIX_FEATURES = 1000


def wants_loss_matrix(n_features):
    """Whether the loss matrix is summed beside the vector (module docstring): up to ``LOSS_MATRIX_FEATURES``."""
    return int(n_features) <= LOSS_MATRIX_FEATURES


def excess_row_bound(row_norm, outer_factor=OUTER_FACTOR):
    """The most one row adds to the loss vector, in L1 (hence L2) and per entry: ``(kappa^2 - 1) R^2``."""
    return (outer_factor**2 - 1.0) * float(row_norm) ** 2


def excess_sensitivity(row_norm, n, neighbours, norm="l2", outer_factor=OUTER_FACTOR):
    """Sensitivity of the mean loss vector over ``n`` rows (module docstring): L2 ``sqrt(2) u / n`` under
    replace-one, ``u / n`` under zero-out; L1 ``2 u / n`` and ``u / n``; ``u`` (the sum's) under add-remove,
    with ``u = (kappa^2 - 1) R^2``."""
    unit = excess_row_bound(row_norm, outer_factor)
    if neighbours == "add-remove":
        return unit
    factor = (math.sqrt(2.0) if norm == "l2" else 2.0) if neighbours == "replace-one" else 1.0
    return factor * unit / n


def excess_mean(X, center, row_norm, outer_factor=OUTER_FACTOR):
    """The exact mean loss vector ``(1/n) sum_i w_i`` of ``X``'s rows about ``center`` (never publish it)."""
    rows, sums, _ = clipping_excess_sums(X, center, None, row_norm, outer_factor)
    return sums / max(rows, 1)


def clipping_excess_sums(X, center, scale, row_norm, outer_factor=OUTER_FACTOR, matrix=False):
    """Exact ``(n, sum of w_i, rows beyond R')`` of the module docstring over the rows of ``X``: never publish them.

    ``matrix``: a fourth member, the sum of the rows' loss matrices ``M_i`` (d, d). A dask collection is summed
    inside its blocks' own tasks and merged in a tree, never pulled through the client (as the moment sums are).
    """
    if as_source(X).kind == "dask":
        return _dask_sums(X, center, scale, row_norm, outer_factor, matrix)
    return _merge(*(_chunk_sums(chunk, center, scale, row_norm, outer_factor, matrix) for chunk in iter_chunks(X)))


def _standardised(X, center, scale, out=None):
    """``X / scale - center`` (either may be None), into ``out`` where given."""
    Z = X if scale is None else np.divide(X, scale, out=out)
    return Z if center is None else np.subtract(Z, center, out=out)


def _chunk_sums(chunk, center, scale, row_norm, outer_factor, matrix=False):
    R, outer = float(row_norm), float(row_norm) * outer_factor
    X = np.asarray(chunk[0] if isinstance(chunk, tuple) else chunk, dtype=float)
    norms = _row_norms(X, center, scale)
    huge = ~np.isfinite(norms)  # squares overflow: inf * kept would make a column NaN, one row's mark on the release
    beyond = np.flatnonzero((norms > R) & ~huge)  # a row within R loses nothing (a_i = b_i = 1): only those beyond
    far = norms[beyond]
    kept = np.minimum(1.0, (outer / far) ** 2) - (R / far) ** 2
    Z_beyond = _standardised(X[beyond], center, scale)
    sums = np.einsum("i,ij,ij->j", kept, Z_beyond, Z_beyond)
    loss = (Z_beyond * kept[:, None]).T @ Z_beyond if matrix else None
    if huge.any():  # beyond R': each adds (R'^2 - R^2) u^2, u its direction (scaled first, so nothing overflows)
        Z_huge = _standardised(X[huge], center, scale)
        u = Z_huge / np.abs(Z_huge).max(axis=1, keepdims=True)
        sums = sums + (outer**2 - R**2) * (u**2 / (u**2).sum(axis=1, keepdims=True)).sum(axis=0)
        if matrix:  # the same rows' (R'^2 - R^2) u u^T / ||u||^2
            unit = u / np.sqrt((u**2).sum(axis=1, keepdims=True))
            loss = loss + (outer**2 - R**2) * (unit.T @ unit)
    counts = X.shape[0], sums, int(np.count_nonzero(norms > outer))
    return counts + (loss,) if matrix else counts


def _row_norms(X, center, scale):
    """``||(x / scale) - center||`` of every row: the release's pass reads each chunk from memory once more only.

    Without scales, compiled (``_binned.row_norms``: summed as the release's row clipping sums them, so
    the rows counted beyond ``R`` are the rows it clips); else a cache-sized block at a time in one reused buffer.
    """
    d = X.shape[1]
    center_array = None if center is None else np.ascontiguousarray(center, dtype=np.float64).reshape(-1)
    if compiled_binned() is not None and scale is None and X.flags.c_contiguous and X.dtype == np.float64 \
            and d <= 4096 and (center_array is None or center_array.size == d):
        norms = np.empty(X.shape[0])
        compiled_binned().row_norms(X, np.empty(0) if center_array is None else center_array, norms, d)
        return norms
    step = _block_rows(d)
    buf, norms = np.empty((min(step, X.shape[0]), d)), np.empty(X.shape[0])
    with np.errstate(over="ignore"):
        for lo in range(0, X.shape[0], step):
            B = X[lo:lo + step]
            Z = _standardised(B, center, scale, buf[:B.shape[0]])
            np.sqrt(np.einsum("ij,ij->i", Z, Z), out=norms[lo:lo + step])
    return norms


class ExcessTap:
    """The chunks of ``source`` on every iteration, summing what clipping at ``row_norm`` removes as they pass.

    The release's own pass reads the rows through it, so the loss is summed in
    that pass instead of a pass of its own (a dask collection's release sums
    both in its blocks' tasks: :meth:`moment_sums`); :meth:`sums` gives the sums of the
    last complete iteration (exact statistics: never publish them).
    """

    def __init__(self, source, center, row_norm, outer_factor=OUTER_FACTOR, matrix=False):
        self.source, self.center, self.row_norm, self.outer_factor = source, center, row_norm, outer_factor
        self.matrix, self.done = matrix, None

    def __iter__(self):
        parts = []
        for chunk in iter_chunks(self.source):
            parts.append(_chunk_sums(chunk, self.center, None, self.row_norm, self.outer_factor, self.matrix))
            yield chunk
        self.done = _merge(*parts)

    def moment_sums(self):
        """A dask source's moment sums at the tap's bound and centre (no further clipping: ``row_norm``).

        Each block's task sums both its moments and its loss, so the
        cluster reads the rows once for the two, as :meth:`__iter__` does on one machine.
        """
        per_block = functools.partial(_chunk_sums, center=self.center, scale=None, row_norm=self.row_norm,
                                      outer_factor=self.outer_factor, matrix=self.matrix)
        sums, self.done = dask_moment_sums_with(self.source, (per_block, _merge), row_norm=self.row_norm,
                                                center=self.center)
        return sums

    def sums(self):
        if self.done is None:
            raise RuntimeError("the release's pass did not read every chunk through the tap.")
        return self.done


def _merge(*parts):
    n, total, beyond, loss = 0, 0.0, 0, 0.0
    for rows, sums, far, *matrix in parts:
        n, total, beyond = n + rows, total + sums, beyond + far
        loss = loss + matrix[0] if matrix else None
    merged = n, np.asarray(total, dtype=float), beyond
    return merged + (np.asarray(loss, dtype=float),) if parts and len(parts[0]) == 4 else merged


def _dask_sums(X, center, scale, row_norm, outer_factor, matrix=False):
    from .dask_moments import _SPLIT_EVERY, _import_dask, _x_blocks

    dask, _ = _import_dask()
    block = dask.delayed(_chunk_sums, pure=True)
    parts = [block(b, center, scale, row_norm, outer_factor, matrix) for b in _x_blocks(X)]
    merge = dask.delayed(_merge, pure=True)
    while len(parts) > 1:
        parts = [merge(*parts[i:i + _SPLIT_EVERY]) for i in range(0, len(parts), _SPLIT_EVERY)]
    (result,) = dask.compute(parts[0]) if parts else ((0, np.zeros(0), 0),)
    return result


def release_clipping_excess(X, *, center, scale, row_norm, privacy, count_privacy, mechanism, neighbours, rng,
                            n=None, outer_factor=OUTER_FACTOR, sums=None):
    """Release what clipping at ``row_norm`` removed from each variance (up to ``outer_factor * row_norm``).

    ``X`` in the data's units; ``center`` and ``scale`` (or ``None``) those
    of the release it serves, in the standardised units ``(x / scale) - center``.
    ``privacy``: the vector's ``(epsilon, delta, calibration)``;
    ``count_privacy``: the count's ``rho`` (Gaussian) or ``epsilon`` (Laplace).
    ``n``: the main release's (noisy, under add-remove) row count that
    normalises the sum there. ``sums``: the exact sums where a pass already
    made them (:class:`ExcessTap`), else ``X`` is read. Returns ``(guarantee, released)``, ``released``
    a JSON-able dict: ``variance_lost`` (per column, standardised units),
    ``noise_sd`` (of each), ``rows_beyond_outer`` and its ``rows_beyond_noise_sd``
    (counts of rows), ``row_norm``, ``outer_norm``, and with an L2 law and at most ``LOSS_MATRIX_FEATURES`` columns
    ``loss_matrix`` (d, d; its diagonal ``variance_lost``). Privacy: module docstring.
    """
    if sums is None:
        with_matrix = mechanism.norm == "l2" and wants_loss_matrix(as_source(X).n_features)
        sums = clipping_excess_sums(X, center, scale, row_norm, outer_factor, matrix=with_matrix)
    rows, sums, beyond, *loss = sums
    gen_vector, gen_count = spawn(rng, 2)
    l2 = excess_sensitivity(row_norm, rows, neighbours, "l2", outer_factor)
    l1 = excess_sensitivity(row_norm, rows, neighbours, "l1", outer_factor)
    divisor, mean = (float(n or rows), sums) if neighbours == "add-remove" else (1.0, sums / rows)
    scale, guarantee = calibrate(mechanism, privacy["epsilon"], privacy["delta"], {"l2": l2, "l1": l1}[mechanism.norm],
                                 privacy["calibration"])
    noisy, sd = mean + mechanism.vector(mean.shape, scale, gen_vector), mechanism.sd(scale)
    matrix = None
    if loss and loss[0] is not None and mechanism.norm == "l2":  # after the vector's draws: the vector is unchanged
        matrix = _noisy_loss_matrix(loss[0] / (1.0 if neighbours == "add-remove" else rows), noisy, mechanism, scale,
                                    gen_vector) / divisor
    count, count_sd, count_guarantee = _noisy_count(beyond, count_privacy, gen_count)
    return compose([guarantee, count_guarantee]), excess_released(noisy / divisor, sd / divisor, count, count_sd,
                                                                  row_norm, outer_factor, matrix)


def _noisy_loss_matrix(exact, diagonal, mechanism, scale, rng):
    """The loss matrix with the vector's noisy ``diagonal`` and each entry above it released as ``sqrt(2) L_jk`` plus
    the law's noise at ``scale``, then divided by ``sqrt(2)`` (module docstring); symmetric."""
    d = len(diagonal)
    upper = np.triu_indices(d, 1)
    out = np.zeros((d, d))
    out[upper] = exact[upper] + mechanism.vector(upper[0].shape, scale, rng) / math.sqrt(2.0)
    out += out.T
    out[np.diag_indices(d)] = diagonal
    return out


def excess_released(variance_lost, noise_sd, rows_beyond, rows_beyond_sd, row_norm, outer_factor=OUTER_FACTOR,
                    loss_matrix=None):
    """The clipping-excess part's ``released`` dict, which the intervals read
    (:func:`dpmoments.estimators.error_budget.clipping_part`): the same on one machine and across sites (whose
    releases carry no ``loss_matrix``). The matrix, where released, is read-only; a report shows its shape."""
    out = {
        "statistic": "variance each column lost to clipping, between row_norm and outer_norm",
        "variance_lost": [float(v) for v in variance_lost], "noise_sd": float(noise_sd),
        "rows_beyond_outer": rows_beyond, "rows_beyond_noise_sd": rows_beyond_sd,
        "row_norm": float(row_norm), "outer_norm": float(row_norm) * outer_factor,
    }
    if loss_matrix is not None:
        out["loss_matrix"] = np.array(loss_matrix, dtype=float)
        out["loss_matrix"].flags.writeable = False
    return out


def _noisy_count(count, privacy, rng):
    """A count of sensitivity 1: Gaussian (``rho``, zCDP) or Laplace (``epsilon``); ``(value, sd, guarantee)``."""
    if privacy.get("rho") is not None:
        sd = 1.0 / math.sqrt(2.0 * privacy["rho"])
        return float(count + gaussian_noise(1, sd, rng)[0]), sd, ZCDP(privacy["rho"])
    scale = 1.0 / privacy["epsilon"]
    return float(count + laplace_noise(1, scale, rng)[0]), math.sqrt(2.0) * scale, PureDP(privacy["epsilon"])


def record_clipping_excess(X, scale, release, budget, share, rng, sums=None):
    """Release the loss of ``release``'s clipping from ``share`` of ``budget`` and record it as its part.

    ``budget``: the private choices' shares (``release``/``count``/``record``,
    :mod:`dpmoments.moments.private_release`); ``scale``: the column scales or ``None``.
    """
    guarantee, released = release_clipping_excess(
        X, center=release.center, scale=scale, row_norm=release.row_norm, mechanism=release.law,
        neighbours=release.neighbours, rng=rng, n=release.n, privacy=budget.release(share * (1 - COUNT_FRACTION)),
        count_privacy=budget.count(share * COUNT_FRACTION), sums=sums)
    budget.record("clipping excess", guarantee, share, **released)
