"""Eigenvalue flooring: a positive semi-definite matrix from a noisy one.

A noisy second-moment matrix ``S + E`` is in general indefinite, and the
graphical lasso has no solution when no positive definite matrix lies near it
(``docs/algorithms.md`` §0.5). Flooring its eigenvalues gives a usable matrix.
"""

import numpy as np

from .._validation import check_data, check_nonnegative
from .symmetry import symmetrise_matrix

__all__ = ["project_psd", "SymmetricSpectrum"]


class SymmetricSpectrum:
    """The eigendecomposition of ``sym(M)``, made on first use and shared by every reader of the same ``M``.

    A full ``eigh`` is about 9 d^3 flops, most of a covariance command at large d: the estimate's PSD
    projection and its error budget's projection of the same matrix (shifted by a multiple of the
    identity, the noise's diagonal mean and the centre's) read one decomposition instead of two. Where
    no reader needs it (a Cholesky test found the matrix positive definite), it is never made.
    Post-processing of a released matrix: no data, no privacy cost.
    """

    def __init__(self, M):
        self.matrix, self._pairs = M, None

    def pairs(self):
        """``(eigenvalues ascending, eigenvectors as columns)`` of ``(M + M^T) / 2``, as ``np.linalg.eigh``."""
        if self._pairs is None:  # (M + M^T) / 2 as symmetrise_matrix forms it, without its finite check: a
            M = np.asarray(self.matrix, dtype=float)  # reader that accepts a non-finite matrix gets eigh's NaNs
            if _exactly_symmetric(M):  # a release is: (M + M^T) / 2 is M, bit for bit (eigh copies its input), and
                sym = M  # the eigendecomposition's peak holds one d x d array fewer (800 MB at d = 10 000)
            else:
                sym = M + M.T
                sym /= 2.0  # in place: the same bits as (M + M.T) / 2.0, one d x d array fewer
            self._pairs = np.linalg.eigh(sym)
        return self._pairs

    def release(self):
        """Forget the eigenvectors (d x d) once every reader has them; a later reader decomposes again."""
        self._pairs = None

    def check_of(self, M, name):
        if M is not self.matrix:
            raise ValueError(f"'spectrum' must be the SymmetricSpectrum of this '{name}' (another matrix's was given).")
        return self


def _exactly_symmetric(M, rows=512):
    """``M == M.T`` entry for entry (NaN never equal), compared a block of rows at a time: no d x d mask."""
    d = M.shape[0]
    return M.ndim == 2 and M.shape == (d, d) and all(
        np.array_equal(M[lo:lo + rows], M[:, lo:lo + rows].T) for lo in range(0, d, rows))


def project_psd(S, floor=0.0, spectrum=None):
    r"""Floor the eigenvalues of a symmetric matrix at ``floor``.

    .. math::

        S = Q \Lambda Q^\top \;\mapsto\; Q \max(\Lambda, \eta) Q^\top

    With ``floor = 0`` this is the Frobenius-nearest positive semi-definite
    matrix to ``S``; with ``floor = eta > 0`` the result is positive definite
    with smallest eigenvalue ``eta``.

    Parameters
    ----------
    S : array-like of shape (d, d)
        A finite square matrix. It is symmetrised, ``(S + S^T) / 2``, first.
    floor : float, default=0.0
        The eigenvalue floor ``eta >= 0``.
    spectrum : SymmetricSpectrum of ``S``, optional
        Its decomposition, shared with other readers (made here where needed and not made yet).

    Returns
    -------
    S_psd : ndarray of shape (d, d), float64
        An exactly symmetric matrix whose eigenvalues are all ``>= floor``
        (up to rounding of order ``1e-15 * ||S||``). When no eigenvalue is
        below ``floor``, this is the symmetrised ``S`` itself.
    n_clipped : int
        How many eigenvalues were below ``floor`` and raised to it. Report it
        with the estimate: it says whether the projection changed anything.

    Notes
    -----
    The projection is **biased**: raising negative eigenvalues inflates the
    matrix (its trace grows by the total amount clipped), and the bias grows
    with the noise. It is not a substitute for enough data or budget.

    Privacy
    -------
    Post-processing of an already released matrix: it reads no data and
    costs no privacy budget. ``n_clipped`` is a function of the released
    matrix only, so it may be published too.

    Examples
    --------
    >>> import numpy as np
    >>> S_psd, n_clipped = project_psd(np.array([[1.0, 0.0], [0.0, -0.5]]))
    >>> S_psd
    array([[1., 0.],
           [0., 0.]])
    >>> n_clipped
    1
    """
    shared = None if spectrum is None else spectrum.check_of(S, "S")
    S = check_data(S, name="S")
    if S.shape[0] != S.shape[1]:
        raise ValueError(f"'S' must be a square matrix of shape (d, d); got shape {S.shape}.")
    S = symmetrise_matrix(S)
    floor = check_nonnegative(floor, "floor")
    if _clearly_above(S, floor):
        return S, 0
    eigvals, Q = np.linalg.eigh(S) if shared is None else shared.pairs()  # of the same symmetrised S
    low = eigvals < floor
    n_clipped = int(np.count_nonzero(low))
    if n_clipped == 0:
        return S, 0
    raised = np.where(low, floor, eigvals)
    scaled = Q * raised
    out = scaled @ Q.T
    del scaled
    return symmetrise_matrix(out), n_clipped  # (out + out.T) / 2, without a third d x d array


def _clearly_above(S, floor):
    """Whether every eigenvalue of ``S`` is above ``floor`` by more than rounding: one Cholesky test, d^3/3 flops.

    A full ``eigh`` costs about 9 d^3 (a quarter of a covariance command at d = 2000) and, when nothing
    is below the floor, returns ``S`` unchanged. The test factors ``S - (floor + margin) I``: it succeeds
    only if the smallest eigenvalue exceeds ``floor + margin`` less Cholesky's backward error (at most
    a few ``d eps ||S||``), far more than ``eigh``'s own error, so where it succeeds ``eigh`` would have
    found nothing below the floor and the result is the same ``S``. Where it fails (an eigenvalue below
    or within ``margin`` of the floor), ``eigh`` decides as before.
    """
    d = S.shape[0]
    margin = 16.0 * d * np.finfo(float).eps * float(np.linalg.norm(S))  # Frobenius >= spectral norm
    shifted = S.copy()
    shifted[np.diag_indices(d)] -= floor + margin  # S - (floor + margin) I, without an identity matrix
    try:
        np.linalg.cholesky(shifted)
    except np.linalg.LinAlgError:
        return False
    return True
