"""``release_*``: data -> clipped exact moments -> noise -> :class:`Release`.

Each function touches the data once (one streaming pass), adds noise once and
returns a :class:`Release` recording the guarantee. Inputs may be a numpy
array, an iterable of chunks, a path to ``.npy``/``.csv``/``.parquet``
(see :func:`dpmoments.data.iter_chunks`), or a dask array or
DataFrame, reduced by per-block partial sums on the active dask scheduler
(:func:`dpmoments.moments.dask_moments.dask_moment_sums`).
"""

import math

import numpy as np

from .._rng import as_generator
from .._validation import check_positive, check_vector
from ..mechanisms import laws, wishart_noise
from ..privacy.guarantees import PureDP
from .accumulate import accumulate_moments
from .auto_release import check_bound_budget_used, is_auto, release_with_private_bounds
from .counts import COUNT_SHARE
from .dask_moments import dask_moment_sums
from ..data import as_source, iter_chunks
from .ranges import ranged_public_release, with_indicator_ranges
from .release import Release, randomness_of
from .statistics import CROSS, SECOND, THIRD
from .release_noise import _check_privacy, _exact, _finish, _noised, _wishart, bounded_sensitivity
from .sums import MomentSums
from .symmetry import symmetrise_matrix, symmetrise_tensor

__all__ = ["release_public_second_moment", "release_cross_moment", "release_third_moment", "MECHANISMS"]

MECHANISMS = laws.names(laws.SECOND_MOMENT)  # the names a second moment may be asked for by


def _sums(X, y, *, row_norm, response_bound, center, third, chunk_size):
    sums = _unchecked_sums(X, y, row_norm=row_norm, response_bound=response_bound, center=center, third=third,
                           chunk_size=chunk_size)
    # Finite rows within a finite bound whose products still overflow when added up (n R^2 > 1e308).
    if not all(np.all(np.isfinite(a)) for a in (sums.xtx, sums.third) if a is not None):
        raise ValueError(f"the sums of the clipped rows overflow the float range at 'row_norm' = {row_norm:g} (each "
                         "row adds up to row_norm^2, row_norm^3 to a third moment); restate the data in other units.")
    if not all(np.all(np.isfinite(a)) for a in (sums.xty, sums.yty) if a is not None):  # x y <= max(R^2, r^2)
        raise ValueError(f"the sums of the clipped responses overflow the float range at 'response_bound' = "
                         f"{response_bound:g} (each row adds up to response_bound^2); restate y in other units.")
    return sums


def _unchecked_sums(X, y, *, row_norm, response_bound, center, third, chunk_size):
    if isinstance(X, MomentSums):  # summed already, by the pass that chose the bound (binned_sums.py)
        return _presummed(X, y, row_norm, response_bound, center, third)
    src = as_source(X)
    if src.kind == "dask":
        # A dask array / DataFrame: one partial sum per block inside the block's task, merged in a tree
        # (dask_moments.py), instead of computing its blocks one by one here. ``chunk_size`` does not apply.
        return dask_moment_sums(X, y, row_norm=row_norm, response_bound=response_bound, third=third, center=center)
    if src.sparse:  # scipy.sparse: summed from its non-zeros in one call (no chunking needed)
        return accumulate_moments(X if y is None else (X, y), row_norm=row_norm, response_bound=response_bound,
                                  third=third, center=center)
    chunks = iter_chunks(X if y is None else (X, y), chunk_size=chunk_size)
    return accumulate_moments(chunks, row_norm=row_norm, response_bound=response_bound, third=third, center=center)


def _presummed(sums, y, row_norm, response_bound, center, third):
    """Sums made by an earlier pass, accepted only under the very bounds and centre of this release."""
    same = (y is None and sums.row_norm == row_norm and sums.response_bound == response_bound
            and (sums.third is not None) == third and (sums.xty is not None) == (response_bound is not None)
            and (center is None) == (sums.center is None)
            and (center is None or np.array_equal(center, sums.center)))
    if not same:
        raise ValueError("moment sums given as 'X' must be summed with this release's 'row_norm', "
                         "'response_bound' and 'center' (and without 'y').")
    return sums


def _check_center(center):
    return None if center is None else check_vector(center, "center")


def release_public_second_moment(
    X, *, epsilon, delta=None, row_norm=None, mechanism="gaussian", neighbours="replace-one",
    calibration="analytic", center=None, rng=None, chunk_size=65536, secure=False, count_share=COUNT_SHARE,
    bound_budget=0.1, ranges=None,
):
    r"""The second-moment matrix :math:`\frac1n\sum_i x_i x_i^\top` about a PUBLIC centre (or the origin).

    What :func:`~dpmoments.moments.release_second_moment` makes when the
    centre is public (``center=None`` or a vector): rows are (centred by
    ``center`` and) clipped to :math:`\|x_i\|_2 \le R` (``row_norm``), the
    exact sum is accumulated in one streaming pass, divided by ``n``, and
    noise is added once. The private centre and scales are
    :mod:`~dpmoments.moments.private_release`'s.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), iterable of chunks, path, dask array or scipy.sparse matrix
        A sparse matrix is summed from its non-zeros (:func:`~dpmoments.moments.sparse_moment_sums`;
        no ``center``).
        A :class:`~dpmoments.moments.MomentSums` summed at this ``row_norm``
        and ``center`` is released as it is (the pass that chose the bound
        summed it: :mod:`dpmoments.moments.binned_sums`).
    epsilon : float in (0, inf]
        ``inf`` releases the exact statistic (reported as not private).
    delta : float in (0, 1), optional
        Required for ``"gaussian"`` and ``"wishart-approx"``.
    row_norm : float > 0 or "auto"
        The public bound R (required unless every column has a range). Never
        computed from the data, except by ``"auto"``: a private quantile of
        ``||x - center||`` paid from ``bound_budget``
        (:mod:`dpmoments.moments.auto_release`). With ``ranges``, in the
        standardised units.
    mechanism : {"gaussian", "laplace", "wishart", "wishart-approx"}, default="gaussian"
    neighbours : {"replace-one", "zero-out", "add-remove"}, default="replace-one"
        The relation the guarantee holds under (:mod:`dpmoments.privacy.relations`):
        ``"replace-one"``, one row replaced by another, n public;
        ``"zero-out"``, one row replaced by the zero row, n public (the
        papers' 1/n sensitivity); ``"add-remove"``, one row added or removed,
        n private: the count is released with noise from ``count_share`` of
        the budget and the statistic is the noisy sum over the noisy count.
        The Wishart mechanisms refuse ``"add-remove"``.
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
    count_share : float in (0, 1), default=0.05
        Add-remove only: the share of epsilon (and of delta) spent on the
        noisy row count; the sums get the rest.
    bound_budget : float in (0, 1) or BoundBudget, default=0.1
        With ``row_norm="auto"``: the share of epsilon that chooses the bound
        (and releases a noisy count of clipped rows); the release gets the
        rest and the whole ``delta``. Ignored for a public ``row_norm``.
    ranges : dict, optional
        PUBLIC per-column ranges ``{column: (lower, upper)}`` (names of a
        DataFrame's or file's columns, or positions): each ranged value is
        clipped to its range and the column standardised by its midpoint and
        half-width (:mod:`dpmoments.moments.ranges`); the release is of those
        rows about the midpoints (``center``, mapped back, is the midpoints, or
        the public ``center`` given) and records ``column_scale``; without
        ``row_norm`` (every column ranged) the box's bound ``sqrt(k)`` is used,
        for free. The ranges enter no guarantee as data.

    Returns
    -------
    Release
        With ``second_moment`` set.

    Privacy
    -------
    * ``"gaussian"``: symmetric Gaussian noise (upper triangle with diagonal
      drawn i.i.d., mirrored), L2 sensitivity :math:`\sqrt2 R^2/n`
      (replace-one) or :math:`R^2/n` (zero-out) on those coordinates;
      analytic calibration (Balle & Wang 2018) gives (epsilon, delta)-DP.
    * ``"laplace"``: symmetric Laplace noise, L1 sensitivity
      :math:`(d+1)R^2/n` (replace-one) or :math:`(d+1)R^2/(2n)` (zero-out);
      epsilon-DP.
    * ``"wishart"``: the papers' :math:`W_d(d+1, \frac{3R^2}{2n\epsilon}I)`
      (Jiang et al. 2016). **Not epsilon-DP** (support mismatch); returned
      as :class:`~dpmoments.Uncertified` with the (epsilon, delta) that really
      holds, and an :class:`~dpmoments.exceptions.UncertifiedPrivacyWarning`.
    * ``"wishart-approx"``: :math:`W_d(k, \frac{R^2}{n} I)` with the smallest
      ``k`` for which our exact analysis (:mod:`dpmoments.privacy.wishart`)
      gives (epsilon, delta)-DP; Sheffet's (2019) regime, with a known PSD
      bias of mean :math:`k R^2/n \cdot I`.

    Under replace-one and zero-out ``n`` is public (fixed by the relation).
    Under add-remove the count gets ``count_share`` of (epsilon, delta)
    (sensitivity 1, the same noise family) and the *sum* the rest, with the
    sum's sensitivity :math:`R^2` (L2) or :math:`(d+1)R^2/2` (L1); the two
    compose (:func:`dpmoments.privacy.compose`) to the reported guarantee,
    and the division by the noisy count is post-processing. A ``delta`` of
    ``1/n`` or more (the noisy n under add-remove) is warned about
    (:class:`~dpmoments.exceptions.PrivacyLeakWarning`).

    With ``row_norm="auto"`` the private bound (and the noisy clipped-row
    count) compose with the release (:func:`dpmoments.privacy.compose`);
    ``guarantee`` is the total and ``parts`` lists each share. The bound's
    draw has sensitivity 1 under all three relations.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments.moments.releases import release_public_second_moment
    >>> X = np.random.default_rng(0).normal(size=(1000, 3)) / 4
    >>> r = release_public_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=1)
    >>> r.second_moment.shape, str(r.guarantee)
    ((3, 3), '(1, 1e-06)-DP')
    """
    ranges = with_indicator_ranges(ranges, X)  # an opened table's one-hot and :missing columns: 0 to 1
    if ranges is not None:
        return ranged_public_release(release_public_second_moment, X, ranges, center=center, row_norm=row_norm,
                                     epsilon=epsilon, delta=delta, mechanism=mechanism, neighbours=neighbours,
                                     calibration=calibration, rng=rng, chunk_size=chunk_size, secure=secure,
                                     count_share=count_share, bound_budget=bound_budget)
    if row_norm is None:
        raise ValueError("'row_norm' is required (a public bound stated before seeing the data, 'auto', or "
                         "'ranges' for every column); got None.")
    p = _check_privacy(epsilon, delta, mechanism, neighbours, calibration, laws.SECOND_MOMENT, count_share)
    check_bound_budget_used(bound_budget, row_norm, None)
    center = _check_center(center)
    X = as_source(X).data  # a Source is read as the input it holds
    if is_auto(row_norm):
        return release_with_private_bounds(
            release_public_second_moment, X, statistic=SECOND, epsilon=p.epsilon, delta=p.delta, row_norm=row_norm,
            bound_budget=bound_budget, center=center, mechanism=p.mechanism, neighbours=p.neighbours,
            calibration=p.calibration, rng=rng, chunk_size=chunk_size, secure=secure, count_share=p.count_share)
    row_norm = check_positive(row_norm, "row_norm")
    sums = _sums(X, None, row_norm=row_norm, response_bound=None, center=center, third=False, chunk_size=chunk_size)
    common = dict(n=sums.n, n_features=sums.n_features, row_norm=row_norm, neighbours=p.neighbours,
                  center=center, randomness=randomness_of(rng, p.epsilon))
    divided_by = lambda k: symmetrise_matrix(sums.xtx / k)  # noqa: E731
    if _exact(p.epsilon):
        return Release(second_moment=divided_by(sums.n), mechanism="none", noise_scale=0.0,
                       guarantee=PureDP(math.inf), **common)
    if not p.mechanism.additive and not secure:  # (secure=True refuses Wishart below)
        scale, df, guarantee = _wishart(sums, p.epsilon, p.delta, p.mechanism, p.neighbours, row_norm)
        noise = wishart_noise(sums.n_features, df, scale, as_generator(rng))
        fields = dict(mechanism=p.mechanism.name, noise_scale=scale, noise_df=df, guarantee=guarantee)
        return _finish(symmetrise_matrix(divided_by(sums.n) + noise), fields, p, common, SECOND)

    def sensitivity_of(norm, n):
        return bounded_sensitivity(SECOND, norm=norm, n_samples=n, n_features=sums.n_features,
                                  neighbours=p.neighbours, row_norm=row_norm)

    noisy, fields = _noised(SECOND, divided_by, sums.n, p, sensitivity_of, secure, rng)
    return _finish(noisy, fields, p, common, SECOND)


def release_cross_moment(
    X, y, *, epsilon, delta=None, row_norm, response_bound, mechanism="gaussian",
    neighbours="replace-one", calibration="analytic", center=None, rng=None, chunk_size=65536, secure=False,
    count_share=COUNT_SHARE, bound_budget=0.1,
):
    r"""Release the cross moment :math:`\frac1n\sum_i x_i y_i` with differential privacy.

    Rows are clipped to :math:`\|x_i\|_2 \le R` and responses to
    :math:`|y_i| \le r` (``response_bound``), both public.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    epsilon, delta, row_norm, mechanism, neighbours, calibration, center, rng, chunk_size, secure
        As in :func:`release_public_second_moment`; ``mechanism`` is ``"gaussian"``
        or ``"laplace"``.
    count_share, bound_budget
        As in :func:`release_public_second_moment` (``bound_budget`` pays for every
        ``"auto"`` bound).
    response_bound : float > 0 or "auto"
        The public bound r on ``|y|``; ``"auto"``: a private quantile of
        ``|y|`` paid from ``bound_budget``, like ``row_norm="auto"``.

    Returns
    -------
    Release
        With ``cross_moment`` set.

    Privacy
    -------
    Gaussian: L2 sensitivity :math:`2Rr/n` (replace-one) or :math:`Rr/n`
    (zero-out), analytic calibration, (epsilon, delta)-DP. Laplace: L1
    sensitivity :math:`2\sqrt d Rr/n` or :math:`\sqrt d Rr/n`, epsilon-DP.
    Add-remove: a noisy count and the sum (sensitivity :math:`Rr`, L1
    :math:`\sqrt d Rr`), composed, as in :func:`release_public_second_moment`.

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
    p = _check_privacy(epsilon, delta, mechanism, neighbours, calibration, laws.ADDITIVE, count_share)
    center = _check_center(center)
    if is_auto(row_norm) or is_auto(response_bound):
        return release_with_private_bounds(
            release_cross_moment, X, y, statistic=CROSS, epsilon=p.epsilon, delta=p.delta, row_norm=row_norm,
            response_bound=response_bound, bound_budget=bound_budget, center=center, mechanism=p.mechanism,
            neighbours=p.neighbours, calibration=p.calibration, rng=rng, chunk_size=chunk_size, secure=secure,
            count_share=p.count_share)
    row_norm = check_positive(row_norm, "row_norm")
    response_bound = check_positive(response_bound, "response_bound")
    sums = _sums(X, y, row_norm=row_norm, response_bound=response_bound, center=center, third=False,
                 chunk_size=chunk_size)
    common = dict(n=sums.n, n_features=sums.n_features, row_norm=row_norm, response_bound=response_bound,
                  neighbours=p.neighbours, center=center, randomness=randomness_of(rng, p.epsilon))
    divided_by = lambda k: sums.xty / k  # noqa: E731
    if _exact(p.epsilon):
        return Release(cross_moment=divided_by(sums.n), mechanism="none", noise_scale=0.0,
                       guarantee=PureDP(math.inf), **common)

    def sensitivity_of(norm, n):
        return bounded_sensitivity(CROSS, norm=norm, n_samples=n, n_features=sums.n_features,
                                  neighbours=p.neighbours, row_norm=row_norm, response_bound=response_bound)

    noisy, fields = _noised(CROSS, divided_by, sums.n, p, sensitivity_of, secure, rng)
    return _finish(noisy, fields, p, common, CROSS)


def release_third_moment(
    X, *, epsilon, delta=None, row_norm, mechanism="gaussian", neighbours="replace-one",
    calibration="analytic", center=None, rng=None, chunk_size=65536, count_share=COUNT_SHARE, bound_budget=0.1,
):
    r"""Release the symmetric third moment :math:`\frac1n\sum_i x_i\otimes x_i\otimes x_i`.

    The statistic is symmetrised (a no-op here, but it makes the guarantee
    independent of rounding) and one noise value is drawn per index orbit
    ``i <= j <= k`` and copied to every permutation.

    Parameters
    ----------
    As in :func:`release_public_second_moment`; ``mechanism`` is ``"gaussian"`` or
    ``"laplace"``.

    Returns
    -------
    Release
        With ``third_moment`` of shape (d, d, d) set.

    Privacy
    -------
    Gaussian on the orbit vector: L2 sensitivity :math:`2R^3/n`
    (replace-one; tight at ``y = -x``) or :math:`R^3/n` (zero-out).
    Laplace: L1 sensitivity :math:`2 h_3(d) R^3/n` with
    :math:`h_3(d) = (d^{3/2} + 3\sqrt d + 2)/6`, or half of it.
    Add-remove: a noisy count and the sum (sensitivity :math:`R^3`, L1
    :math:`h_3(d) R^3`), composed, as in :func:`release_public_second_moment`.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments import release_third_moment
    >>> X = np.random.default_rng(0).normal(size=(500, 3)) / 3
    >>> release_third_moment(X, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=1).third_moment.shape
    (3, 3, 3)
    """
    p = _check_privacy(epsilon, delta, mechanism, neighbours, calibration, laws.ADDITIVE, count_share)
    center = _check_center(center)
    if is_auto(row_norm):
        return release_with_private_bounds(
            release_third_moment, X, statistic=THIRD, epsilon=p.epsilon, delta=p.delta, row_norm=row_norm,
            bound_budget=bound_budget, center=center, mechanism=p.mechanism, neighbours=p.neighbours,
            calibration=p.calibration, rng=rng, chunk_size=chunk_size, count_share=p.count_share)
    row_norm = check_positive(row_norm, "row_norm")
    sums = _sums(X, None, row_norm=row_norm, response_bound=None, center=center, third=True, chunk_size=chunk_size)
    common = dict(n=sums.n, n_features=sums.n_features, row_norm=row_norm, neighbours=p.neighbours,
                  center=center, randomness=randomness_of(rng, p.epsilon))
    divided_by = lambda k: symmetrise_tensor(sums.third / k)  # noqa: E731
    if _exact(p.epsilon):
        return Release(third_moment=divided_by(sums.n), mechanism="none", noise_scale=0.0,
                       guarantee=PureDP(math.inf), **common)

    def sensitivity_of(norm, n):
        return bounded_sensitivity(THIRD, norm=norm, n_samples=n, n_features=sums.n_features,
                                  neighbours=p.neighbours, row_norm=row_norm)

    noisy, fields = _noised(THIRD, divided_by, sums.n, p, sensitivity_of, False, rng)
    return _finish(noisy, fields, p, common, THIRD)
