"""``release_*``: data -> clipped exact moments -> noise -> :class:`Release`.

Each function touches the data once (one streaming pass), adds noise once and
returns a :class:`Release` recording the guarantee. Inputs may be a numpy
array, an iterable of chunks, a path to ``.npy``/``.csv``/``.parquet``
(see :func:`dpmoments.moments.readers.iter_chunks`), or a dask array or
DataFrame, reduced by per-block partial sums on the active dask scheduler
(:func:`dpmoments.moments.dask_moments.dask_moment_sums`).
"""

import math
import warnings


from .._rng import as_generator
from .._validation import check_delta, check_epsilon, check_option, check_positive, check_sensitivity, check_vector
from ..exceptions import NotPrivateWarning, UncertifiedPrivacyWarning
from ..mechanisms import gaussian_noise, laplace_noise, symmetric_matrix_noise, symmetric_tensor_noise, wishart_noise
from ..privacy.calibration import CALIBRATIONS, calibrate_gaussian, calibrate_laplace
from ..privacy.guarantees import ApproxDP, PureDP, Uncertified
from ..privacy.wishart import wishart_degrees_of_freedom, wishart_delta
from .accumulate import accumulate_moments
from .dask_moments import dask_moment_sums, is_dask_collection
from .readers import iter_chunks
from .release import Release, randomness_of
from .secure_noise import secure_noisy
from .sensitivity import NEIGHBOURS, moment_sensitivity
from .sparse_sums import is_sparse_source
from .symmetry import symmetrise_matrix, symmetrise_tensor

__all__ = ["release_second_moment", "release_cross_moment", "release_third_moment", "MECHANISMS"]

MECHANISMS = ("gaussian", "laplace", "wishart", "wishart-approx")
_WISHART_REASON = (
    "Wishart noise with d+1 degrees of freedom is not epsilon-DP: the support of the output depends on the "
    "data (algorithms.md §1.5.1; diffprivlib#23). What holds is computed exactly in dpmoments.privacy.wishart."
)


def _check_privacy(epsilon, delta, mechanism, neighbours, calibration, allowed):
    epsilon = check_epsilon(epsilon)
    mechanism = check_option(mechanism, "mechanism", allowed)
    neighbours = check_option(neighbours, "neighbours", NEIGHBOURS)
    calibration = check_option(calibration, "calibration", CALIBRATIONS)
    needs_delta = mechanism in ("gaussian", "wishart-approx") and not math.isinf(epsilon)
    if needs_delta and delta is None:
        raise ValueError(f"mechanism={mechanism!r} needs 'delta' in (0, 1); got None.")
    if delta is not None:
        delta = check_delta(delta, allow_zero=not needs_delta)
    return epsilon, delta, mechanism, neighbours, calibration


def _sums(X, y, *, row_norm, response_bound, center, third, chunk_size):
    if is_dask_collection(X):
        # A dask array / DataFrame: one partial sum per block inside the block's task, merged in a tree
        # (dask_moments.py), instead of computing its blocks one by one here. ``chunk_size`` does not apply.
        return dask_moment_sums(X, y, row_norm=row_norm, response_bound=response_bound, third=third, center=center)
    if is_sparse_source(X):  # scipy.sparse: summed from its non-zeros in one call (no chunking needed)
        return accumulate_moments(X if y is None else (X, y), row_norm=row_norm, response_bound=response_bound,
                                  third=third, center=center)
    chunks = iter_chunks(X if y is None else (X, y), chunk_size=chunk_size)
    return accumulate_moments(chunks, row_norm=row_norm, response_bound=response_bound, third=third, center=center)


def _check_center(center):
    return None if center is None else check_vector(center, "center")


def bounded_sensitivity(statistic, **kwargs):
    """:func:`moment_sensitivity`, refused in one line (naming the bounds) where it leaves the float range."""
    try:
        sens = moment_sensitivity(statistic, **kwargs)
    except OverflowError:
        sens = math.inf
    r = kwargs.get("response_bound")
    cause = f"'row_norm' = {kwargs['row_norm']:g}" + ("" if r is None else f" with 'response_bound' = {r:g}")
    return check_sensitivity(sens, cause)


def _gaussian_or_laplace(statistic, sums, epsilon, delta, mechanism, neighbours, calibration, row_norm, r=None):
    """Noise scale, sensitivity, its norm and the guarantee for additive noise."""
    norm = "l2" if mechanism == "gaussian" else "l1"
    sens = bounded_sensitivity(
        statistic, norm=norm, n_samples=sums.n, n_features=sums.n_features,
        neighbours=neighbours, row_norm=row_norm, response_bound=r,
    )
    if mechanism == "gaussian":
        scale, guarantee = calibrate_gaussian(epsilon, delta, sens, calibration)
    else:
        scale, guarantee = calibrate_laplace(epsilon, sens)
    return scale, sens, norm, guarantee


def _exact(epsilon):
    if math.isinf(epsilon):
        warnings.warn("epsilon=inf: the exact statistic is released, with no privacy.", NotPrivateWarning, stacklevel=3)
        return True
    return False


def _wishart(sums, epsilon, delta, mechanism, neighbours, row_norm):
    """Scale (a variance), degrees of freedom and guarantee of a Wishart release."""
    d, n = sums.n_features, sums.n
    check_sensitivity(row_norm * row_norm, f"'row_norm' = {row_norm:g}")  # the Wishart scale is R^2 / n
    if mechanism == "wishart":
        # Jiang, Xie & Zhang (2016), as used by Wang et al. and Park & Welling: C = 3 R^2 / (2 n eps).
        scale_un = 3.0 * row_norm**2 / (2.0 * epsilon)
        df = d + 1
        real_delta = wishart_delta(epsilon, d, df, row_norm**2 / scale_un, neighbours)
        holds = ApproxDP(epsilon, real_delta) if real_delta < 1 else None
        warnings.warn(_WISHART_REASON, UncertifiedPrivacyWarning, stacklevel=3)
        return scale_un / n, df, Uncertified(PureDP(epsilon), _WISHART_REASON, holds=holds)
    df = wishart_degrees_of_freedom(d, epsilon, delta, neighbours)
    return row_norm**2 / n, df, ApproxDP(epsilon, delta)


def release_second_moment(
    X, *, epsilon, delta=None, row_norm, mechanism="gaussian", neighbours="replace-one",
    calibration="analytic", center=None, rng=None, chunk_size=65536, secure=False,
):
    r"""Release the second-moment matrix :math:`\frac1n\sum_i x_i x_i^\top` with differential privacy.

    Rows are (optionally centred by a public ``center`` and) clipped to
    :math:`\|x_i\|_2 \le R` (``row_norm``), the exact sum is accumulated in
    one streaming pass, divided by ``n``, and noise is added once.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), iterable of chunks, path, dask array or scipy.sparse matrix
        A sparse matrix is summed from its non-zeros (:func:`~dpmoments.moments.sparse_moment_sums`;
        no ``center``).
    epsilon : float in (0, inf]
        ``inf`` releases the exact statistic (reported as not private).
    delta : float in (0, 1), optional
        Required for ``"gaussian"`` and ``"wishart-approx"``.
    row_norm : float > 0
        The public bound R. Never computed from the data.
    mechanism : {"gaussian", "laplace", "wishart", "wishart-approx"}, default="gaussian"
    neighbours : {"replace-one", "add-remove"}, default="replace-one"
    calibration : {"analytic", "classic", "zcdp"}, default="analytic"
        Gaussian only; see :func:`dpmoments.privacy.calibrate_gaussian`.
    center : array-like of shape (n_features,), optional
        A public centre subtracted from every row before clipping.
    rng : None, int or numpy.random.Generator
        ``None`` draws OS entropy; a seed gives a reproducible, non-secure run.
        With ``secure=True``: ``None`` (the OS CSPRNG) or a ``random.Random``
        (tests only, reported as seeded).
    chunk_size : int, default=65536
        Rows per chunk of the streaming pass.
    secure : bool, default=False
        Exact discrete Gaussian (zCDP-calibrated) or discrete Laplace noise on
        a ``2^-k`` grid from the OS CSPRNG, immune to floating-point attacks
        (:mod:`dpmoments.moments.secure_noise`); ~0.5 s at d = 200.

    Returns
    -------
    Release
        With ``second_moment`` set.

    Privacy
    -------
    * ``"gaussian"``: symmetric Gaussian noise (upper triangle with diagonal
      drawn i.i.d., mirrored), L2 sensitivity :math:`\sqrt2 R^2/n`
      (replace-one) or :math:`R^2/n` (add-remove) on those coordinates;
      analytic calibration (Balle & Wang 2018) gives (epsilon, delta)-DP.
    * ``"laplace"``: symmetric Laplace noise, L1 sensitivity
      :math:`(d+1)R^2/n` (replace-one) or :math:`(d+1)R^2/(2n)`; epsilon-DP.
    * ``"wishart"``: the papers' :math:`W_d(d+1, \frac{3R^2}{2n\epsilon}I)`
      (Jiang et al. 2016). **Not epsilon-DP** (support mismatch); returned
      as :class:`~dpmoments.Uncertified` with the (epsilon, delta) that really
      holds, and an :class:`~dpmoments.exceptions.UncertifiedPrivacyWarning`.
    * ``"wishart-approx"``: :math:`W_d(k, \frac{R^2}{n} I)` with the smallest
      ``k`` for which our exact analysis (:mod:`dpmoments.privacy.wishart`)
      gives (epsilon, delta)-DP; Sheffet's (2019) regime, with a known PSD
      bias of mean :math:`k R^2/n \cdot I`.

    ``n`` is treated as public.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments import release_second_moment
    >>> X = np.random.default_rng(0).normal(size=(1000, 3)) / 4
    >>> r = release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=1)
    >>> r.second_moment.shape, str(r.guarantee)
    ((3, 3), '(1, 1e-06)-DP')
    """
    epsilon, delta, mechanism, neighbours, calibration = _check_privacy(
        epsilon, delta, mechanism, neighbours, calibration, MECHANISMS
    )
    row_norm = check_positive(row_norm, "row_norm")
    center = _check_center(center)
    sums = _sums(X, None, row_norm=row_norm, response_bound=None, center=center, third=False, chunk_size=chunk_size)
    S = symmetrise_matrix(sums.xtx / sums.n)
    common = dict(n=sums.n, n_features=sums.n_features, row_norm=row_norm, neighbours=neighbours,
                  center=center, randomness=randomness_of(rng, epsilon))
    if _exact(epsilon):
        return Release(second_moment=S, mechanism="none", noise_scale=0.0, guarantee=PureDP(math.inf), **common)
    if secure:
        noisy, fields = secure_noisy(S, sensitivity_of=lambda norm: bounded_sensitivity(
            "second", norm=norm, n_samples=sums.n, n_features=sums.n_features, neighbours=neighbours,
            row_norm=row_norm), epsilon=epsilon, delta=delta, mechanism=mechanism, symmetric=True, rng=rng)
        return Release(second_moment=noisy, **{**common, **fields})
    gen = as_generator(rng)
    if mechanism.startswith("wishart"):
        scale, df, guarantee = _wishart(sums, epsilon, delta, mechanism, neighbours, row_norm)
        noisy = symmetrise_matrix(S + wishart_noise(sums.n_features, df, scale, gen))
        return Release(second_moment=noisy, mechanism=mechanism, noise_scale=scale, noise_df=df,
                       guarantee=guarantee, **common)
    scale, sens, norm, guarantee = _gaussian_or_laplace(
        "second", sums, epsilon, delta, mechanism, neighbours, calibration, row_norm
    )
    noisy = S + symmetric_matrix_noise(sums.n_features, scale, gen, distribution=mechanism)
    return Release(second_moment=noisy, mechanism=mechanism, noise_scale=scale, sensitivity=sens,
                   sensitivity_norm=norm, guarantee=guarantee,
                   calibration=calibration if mechanism == "gaussian" else None, **common)


def release_cross_moment(
    X, y, *, epsilon, delta=None, row_norm, response_bound, mechanism="gaussian",
    neighbours="replace-one", calibration="analytic", center=None, rng=None, chunk_size=65536, secure=False,
):
    r"""Release the cross moment :math:`\frac1n\sum_i x_i y_i` with differential privacy.

    Rows are clipped to :math:`\|x_i\|_2 \le R` and responses to
    :math:`|y_i| \le r` (``response_bound``), both public.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    epsilon, delta, row_norm, mechanism, neighbours, calibration, center, rng, chunk_size, secure
        As in :func:`release_second_moment`; ``mechanism`` is ``"gaussian"``
        or ``"laplace"``.
    response_bound : float > 0
        The public bound r on ``|y|``.

    Returns
    -------
    Release
        With ``cross_moment`` set.

    Privacy
    -------
    Gaussian: L2 sensitivity :math:`2Rr/n` (replace-one) or :math:`Rr/n`
    (add-remove), analytic calibration, (epsilon, delta)-DP. Laplace: L1
    sensitivity :math:`2\sqrt d Rr/n` or :math:`\sqrt d Rr/n`, epsilon-DP.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments import release_cross_moment
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 2)) / 3; y = X @ [1.0, -1.0]
    >>> r = release_cross_moment(X, y, epsilon=1.0, delta=1e-6, row_norm=1.0, response_bound=2.0, rng=1)
    >>> r.cross_moment.shape
    (2,)
    """
    epsilon, delta, mechanism, neighbours, calibration = _check_privacy(
        epsilon, delta, mechanism, neighbours, calibration, ("gaussian", "laplace")
    )
    row_norm = check_positive(row_norm, "row_norm")
    response_bound = check_positive(response_bound, "response_bound")
    center = _check_center(center)
    sums = _sums(X, y, row_norm=row_norm, response_bound=response_bound, center=center, third=False,
                 chunk_size=chunk_size)
    b = sums.xty / sums.n
    common = dict(n=sums.n, n_features=sums.n_features, row_norm=row_norm, response_bound=response_bound,
                  neighbours=neighbours, center=center, randomness=randomness_of(rng, epsilon))
    if _exact(epsilon):
        return Release(cross_moment=b, mechanism="none", noise_scale=0.0, guarantee=PureDP(math.inf), **common)
    if secure:
        noisy, fields = secure_noisy(b, sensitivity_of=lambda norm: bounded_sensitivity(
            "cross", norm=norm, n_samples=sums.n, n_features=sums.n_features, neighbours=neighbours,
            row_norm=row_norm, response_bound=response_bound), epsilon=epsilon, delta=delta, mechanism=mechanism,
            symmetric=False, rng=rng)
        return Release(cross_moment=noisy, **{**common, **fields})
    scale, sens, norm, guarantee = _gaussian_or_laplace(
        "cross", sums, epsilon, delta, mechanism, neighbours, calibration, row_norm, response_bound
    )
    draw = gaussian_noise if mechanism == "gaussian" else laplace_noise
    noisy = b + draw(sums.n_features, scale, as_generator(rng))
    return Release(cross_moment=noisy, mechanism=mechanism, noise_scale=scale, sensitivity=sens,
                   sensitivity_norm=norm, guarantee=guarantee,
                   calibration=calibration if mechanism == "gaussian" else None, **common)


def release_third_moment(
    X, *, epsilon, delta=None, row_norm, mechanism="gaussian", neighbours="replace-one",
    calibration="analytic", center=None, rng=None, chunk_size=65536,
):
    r"""Release the symmetric third moment :math:`\frac1n\sum_i x_i\otimes x_i\otimes x_i`.

    The statistic is symmetrised (a no-op here, but it makes the guarantee
    independent of rounding) and one noise value is drawn per index orbit
    ``i <= j <= k`` and copied to every permutation.

    Parameters
    ----------
    As in :func:`release_second_moment`; ``mechanism`` is ``"gaussian"`` or
    ``"laplace"``.

    Returns
    -------
    Release
        With ``third_moment`` of shape (d, d, d) set.

    Privacy
    -------
    Gaussian on the orbit vector: L2 sensitivity :math:`2R^3/n`
    (replace-one; tight at ``y = -x``) or :math:`R^3/n` (add-remove).
    Laplace: L1 sensitivity :math:`2 h_3(d) R^3/n` with
    :math:`h_3(d) = (d^{3/2} + 3\sqrt d + 2)/6`, or half of it.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments import release_third_moment
    >>> X = np.random.default_rng(0).normal(size=(500, 3)) / 3
    >>> release_third_moment(X, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=1).third_moment.shape
    (3, 3, 3)
    """
    epsilon, delta, mechanism, neighbours, calibration = _check_privacy(
        epsilon, delta, mechanism, neighbours, calibration, ("gaussian", "laplace")
    )
    row_norm = check_positive(row_norm, "row_norm")
    center = _check_center(center)
    sums = _sums(X, None, row_norm=row_norm, response_bound=None, center=center, third=True, chunk_size=chunk_size)
    T = symmetrise_tensor(sums.third / sums.n)
    common = dict(n=sums.n, n_features=sums.n_features, row_norm=row_norm, neighbours=neighbours,
                  center=center, randomness=randomness_of(rng, epsilon))
    if _exact(epsilon):
        return Release(third_moment=T, mechanism="none", noise_scale=0.0, guarantee=PureDP(math.inf), **common)
    scale, sens, norm, guarantee = _gaussian_or_laplace(
        "third", sums, epsilon, delta, mechanism, neighbours, calibration, row_norm
    )
    noisy = T + symmetric_tensor_noise(sums.n_features, scale, as_generator(rng), distribution=mechanism)
    return Release(third_moment=noisy, mechanism=mechanism, noise_scale=scale, sensitivity=sens,
                   sensitivity_norm=norm, guarantee=guarantee,
                   calibration=calibration if mechanism == "gaussian" else None, **common)
