r"""Matrix losses and support-recovery curves for precision-matrix estimates.

Relative losses (Su, Guo & Zhang, ``docs/algorithms.md`` §5.6) compare a private
estimate with a reference (the non-private estimate or the truth); ROC
curves over a regularisation path measure recovery of the off-diagonal
support (the conditional-independence graph).

These functions compare matrices that are already computed; they touch no
data and spend no privacy budget.
"""

import numpy as np

from ._validation import check_nonnegative, check_option

__all__ = ["relative_loss", "support", "tpr_fpr", "roc_curve", "auc"]

_NORM_ORD = {"l1": 1, "fro": "fro", "spectral": 2}


def _matrix(A, name, square=False):
    if isinstance(A, (str, bytes)) or A is None:
        raise TypeError(f"'{name}' must be a 2-D array of numbers; got {type(A).__name__}.")
    try:
        arr = np.asarray(A)
    except Exception as exc:  # ragged lists and similar
        raise TypeError(f"'{name}' must be a 2-D array of numbers; could not convert it: {exc}") from exc
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"'{name}' must hold real numbers (or booleans); got dtype {arr.dtype}.")
    arr = arr.astype(np.float64, copy=False)
    if arr.ndim != 2 or (square and arr.shape[0] != arr.shape[1]) or arr.size == 0:
        kind = "a non-empty square 2-D array" if square else "a non-empty 2-D array"
        raise ValueError(f"'{name}' must be {kind}; got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"'{name}' contains NaN or infinite values; it must be finite.")
    return arr


def relative_loss(estimate, reference, norm="fro"):
    r"""Relative matrix loss of ``estimate`` with respect to ``reference``.

    .. math::

        L(\hat A, A) = \frac{\lVert \hat A - A \rVert}{\lVert A \rVert}

    with one of the norms

    * ``"l1"``: the matrix :math:`\ell_1` (operator) norm, the maximum
      absolute column sum :math:`\lVert B\rVert_1 = \max_j \sum_i |b_{ij}|`;
    * ``"fro"``: the Frobenius norm :math:`(\sum_{ij} b_{ij}^2)^{1/2}`;
    * ``"spectral"``: the operator 2-norm, the largest singular value of ``B``.

    Parameters
    ----------
    estimate : array-like of shape (n_rows, n_cols)
        The estimate, e.g. a private precision matrix.
    reference : array-like of shape (n_rows, n_cols)
        The reference, e.g. the non-private estimate (as in Su et al.) or the
        true precision matrix. Must not be the zero matrix.
    norm : {"l1", "fro", "spectral"}, default="fro"

    Returns
    -------
    loss : float

    Examples
    --------
    >>> import numpy as np
    >>> relative_loss(np.array([[2.0, 0.0], [0.0, 1.0]]), np.eye(2), norm="l1")
    1.0
    >>> round(relative_loss(np.array([[2.0, 0.0], [0.0, 1.0]]), np.eye(2), norm="fro"), 6)
    0.707107
    """
    norm = check_option(norm, "norm", set(_NORM_ORD))
    estimate = _matrix(estimate, "estimate")
    reference = _matrix(reference, "reference")
    if estimate.shape != reference.shape:
        raise ValueError(
            f"'estimate' and 'reference' must have the same shape; got {estimate.shape} and {reference.shape}."
        )
    ord_ = _NORM_ORD[norm]
    denominator = np.linalg.norm(reference, ord_)
    if denominator == 0:
        raise ValueError("'reference' must be nonzero; the relative loss is undefined for a zero reference.")
    return float(np.linalg.norm(estimate - reference, ord_) / denominator)


def support(Theta, tol=1e-8):
    r"""Off-diagonal support (edge pattern) of a square matrix.

    .. math::

        E_{ij} = \mathbb{1}\{ i \ne j,\ |\theta_{ij}| > \mathrm{tol} \}

    Parameters
    ----------
    Theta : array-like of shape (n_features, n_features)
        A precision-matrix estimate, or a boolean adjacency matrix.
    tol : float, default=1e-8
        Entries with absolute value at most ``tol`` count as zero.

    Returns
    -------
    edges : ndarray of shape (n_features, n_features), bool
        The diagonal is always ``False``. Symmetric when ``Theta`` is.

    Examples
    --------
    >>> import numpy as np
    >>> support(np.array([[1.0, 0.3, 0.0], [0.3, 1.0, 1e-12], [0.0, 1e-12, 1.0]])).astype(int)
    array([[0, 1, 0],
           [1, 0, 0],
           [0, 0, 0]])
    """
    Theta = _matrix(Theta, "Theta", square=True)
    tol = check_nonnegative(tol, "tol")
    edges = np.abs(Theta) > tol
    np.fill_diagonal(edges, False)
    return edges


def _upper_pairs(A, tol, name):
    """Edge indicator over the unordered pairs i < j (either triangle counts)."""
    edges = np.abs(_matrix(A, name, square=True)) > check_nonnegative(tol, "tol")
    rows, cols = np.triu_indices(edges.shape[0], k=1)
    return edges[rows, cols] | edges[cols, rows]


def _truth_pairs(truth, tol):
    true_pairs = _upper_pairs(truth, tol, "truth")
    positives = int(true_pairs.sum())
    if positives == 0 or positives == true_pairs.size:
        raise ValueError(
            "'truth' must have at least one edge and one non-edge (off the diagonal) for TPR and FPR "
            f"to be defined; got {positives} edge(s) out of {true_pairs.size} pairs."
        )
    return true_pairs


def _rates(est_pairs, true_pairs):
    tp = np.count_nonzero(est_pairs & true_pairs)
    fp = np.count_nonzero(est_pairs & ~true_pairs)
    return tp / np.count_nonzero(true_pairs), fp / np.count_nonzero(~true_pairs)


def tpr_fpr(estimate, truth, tol=1e-8):
    r"""True- and false-positive rates of an estimated edge set.

    Over the unordered pairs :math:`i < j` (an edge is present if either
    :math:`|\hat\theta_{ij}|` or :math:`|\hat\theta_{ji}|` exceeds ``tol``):

    .. math::

        \mathrm{TPR} = \frac{|\hat E \cap E|}{|E|}, \qquad
        \mathrm{FPR} = \frac{|\hat E \setminus E|}{\binom{p}{2} - |E|}

    Parameters
    ----------
    estimate : array-like of shape (n_features, n_features)
        Estimated precision matrix (or adjacency).
    truth : array-like of shape (n_features, n_features)
        True precision matrix or boolean adjacency; it must have at least one
        edge and one non-edge.
    tol : float, default=1e-8
        Threshold below which an entry counts as zero (both matrices).

    Returns
    -------
    tpr, fpr : float
        Always exactly these two numbers.

    Examples
    --------
    >>> import numpy as np
    >>> truth = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]])
    >>> est = np.array([[1, .2, .1], [.2, 1, 0], [.1, 0, 1]])
    >>> tpr_fpr(est, truth)
    (1.0, 0.5)
    """
    est_pairs = _upper_pairs(estimate, tol, "estimate")
    true_pairs = _truth_pairs(truth, tol)
    if est_pairs.shape != true_pairs.shape:
        raise ValueError(
            f"'estimate' and 'truth' must have the same shape; got {np.shape(estimate)} and {np.shape(truth)}."
        )
    tpr, fpr = _rates(est_pairs, true_pairs)
    return float(tpr), float(fpr)


def roc_curve(estimates_over_lambda, truth, tol=1e-8):
    r"""ROC curve of support recovery along a regularisation path.

    Each estimate :math:`\hat\Theta(\lambda_k)` gives one point
    :math:`(\mathrm{FPR}_k, \mathrm{TPR}_k)` (see :func:`tpr_fpr`). The points
    are joined with the endpoints :math:`(0, 0)` (empty graph) and
    :math:`(1, 1)` (complete graph) and sorted by FPR, then TPR, so the
    result can be passed to :func:`auc`.

    Parameters
    ----------
    estimates_over_lambda : sequence of array-like, or array of shape (n_lambdas, n_features, n_features)
        One estimate per value of the regularisation parameter, in any order.
    truth : array-like of shape (n_features, n_features)
        True precision matrix or adjacency, with at least one edge and one non-edge.
    tol : float, default=1e-8
        Zero threshold, as in :func:`support`.

    Returns
    -------
    fpr, tpr : ndarray of shape (n_lambdas + 2,)
        Sorted by ``fpr`` (ties by ``tpr``); ``fpr[0] = tpr[0] = 0`` and
        ``fpr[-1] = tpr[-1] = 1``.

    Examples
    --------
    >>> import numpy as np
    >>> truth = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]])
    >>> path = [truth, np.ones((3, 3))]
    >>> fpr, tpr = roc_curve(path, truth)
    >>> fpr.tolist(), tpr.tolist()
    ([0.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 1.0])
    """
    if isinstance(estimates_over_lambda, (str, bytes)) or estimates_over_lambda is None:
        raise TypeError(
            "'estimates_over_lambda' must be a sequence of square matrices; "
            f"got {type(estimates_over_lambda).__name__}."
        )
    true_pairs = _truth_pairs(truth, tol)
    points = [(0.0, 0.0), (1.0, 1.0)]
    for k, estimate in enumerate(estimates_over_lambda):
        est_pairs = _upper_pairs(estimate, tol, f"estimates_over_lambda[{k}]")
        if est_pairs.shape != true_pairs.shape:
            raise ValueError(
                f"'estimates_over_lambda[{k}]' must have the shape of 'truth' {np.shape(truth)}; "
                f"got {np.shape(estimate)}."
            )
        tpr, fpr = _rates(est_pairs, true_pairs)
        points.append((fpr, tpr))
    points.sort()
    fpr, tpr = (np.array(v, dtype=np.float64) for v in zip(*points))
    return fpr, tpr


def auc(fpr, tpr):
    r"""Area under a curve by the trapezoid rule.

    .. math::

        \mathrm{AUC} = \sum_{k=1}^{m-1} (x_{k+1} - x_k)\,\frac{y_k + y_{k+1}}{2}

    Parameters
    ----------
    fpr : array-like of shape (m,)
        Abscissae, non-decreasing (as returned by :func:`roc_curve`), ``m >= 2``.
    tpr : array-like of shape (m,)
        Ordinates.

    Returns
    -------
    area : float

    Examples
    --------
    >>> auc([0.0, 0.0, 1.0], [0.0, 1.0, 1.0])
    1.0
    >>> auc([0.0, 1.0], [0.0, 1.0])
    0.5
    """
    x = np.asarray(fpr, dtype=np.float64)
    y = np.asarray(tpr, dtype=np.float64)
    if x.ndim != 1 or y.shape != x.shape or x.size < 2:
        raise ValueError(
            f"'fpr' and 'tpr' must be 1-D arrays of the same length >= 2; got shapes {x.shape} and {y.shape}."
        )
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("'fpr' and 'tpr' must be finite.")
    if np.any(np.diff(x) < 0):
        raise ValueError("'fpr' must be non-decreasing; sort the points (roc_curve does).")
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0))
