r"""``release_second_moment``: the second moment with the library's defaults, centre and bound chosen privately.

The one entry point for a second-moment release from data. Its defaults are
those of every estimator and of the command line: rows centred about a
private mean (``center="private"``) and clipped at a privately drawn bound
(``row_norm="auto"``). It routes to the module that makes each kind of
release, deciding from its arguments alone (never from the data):

* a private centre or ``scale="private"``:
  :func:`~dpmoments.moments.private_release.private_second_moment`, or with
  ``ranges``, :func:`~dpmoments.moments.ranged_release.ranged_second_moment`;
* a public centre (a vector) or none (``center=None``, the papers'
  uncentred second moment):
  :func:`~dpmoments.moments.releases.release_public_second_moment`.
"""

from ..data import as_source
from ..mechanisms import laws
from .choice_budget import CenterBudget
from .counts import COUNT_SHARE
from .private_release import private_second_moment
from .ranged_release import ranged_second_moment
from .ranges import with_indicator_ranges
from .releases import release_public_second_moment

__all__ = ["release_second_moment"]


def release_second_moment(
    X, *, epsilon, delta=None, row_norm="auto", mechanism="gaussian", neighbours="replace-one",
    calibration="analytic", center="private", center_budget=None, scale=None, rng=None, chunk_size=65536,
    secure=False, count_share=COUNT_SHARE, bound_budget=0.1, ranges=None,
):
    r"""Release the second moment of the rows about their centre, :math:`\frac1n\sum_i (x_i - c)(x_i - c)^\top`.

    By default nothing about the data needs stating beyond ``epsilon`` and
    ``delta``: the centre ``c`` is a private mean and the row bound a private
    draw, each paid from a stated share of the budget and listed in
    ``parts`` (the same defaults as every estimator and the command line).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), iterable of chunks, path, dask array or scipy.sparse matrix
        A sparse matrix or a one-pass stream needs public values (a
        ``row_norm`` and ``center=None`` or a vector): the private choices
        read the rows more than once.
    epsilon : float in (0, inf]
        ``inf`` releases the exact statistic (reported as not private).
    delta : float in (0, 1), optional
        Required for ``"gaussian"`` and ``"wishart-approx"``.
    row_norm : "auto", float > 0 or None, default="auto"
        The bound R on each (centred) row's L2 norm. ``"auto"``: a private
        quantile of ``||x - c||`` paid from ``bound_budget``
        (:mod:`dpmoments.moments.auto_release`); a number: a public bound,
        free; ``None`` with ``ranges`` on every column and a public centre:
        the box's bound, free.
    mechanism : {"gaussian", "laplace", "wishart", "wishart-approx"}, default="gaussian"
        A private centre, bound or scale needs ``"gaussian"`` or ``"laplace"``.
    neighbours : {"replace-one", "zero-out", "add-remove"}, default="replace-one"
    calibration : {"analytic", "classic", "zcdp"}, default="analytic"
    center : "private", array-like of shape (n_features,) or None, default="private"
        ``"private"``: a private mean paid from ``center_budget``; a vector:
        a public centre, free; ``None``: the second moment about the origin
        (the papers' choice for data centred by design).
    center_budget : CenterBudget, optional
        The private centre's shares (``None``: ``CenterBudget()``).
    scale : None or "private", default=None
        ``"private"``: the columns standardised by private scales before
        clipping (``column_scale`` records them).
    rng : None, int or numpy.random.Generator
        ``None`` draws OS entropy; a seed gives a reproducible, non-secure run.
    chunk_size : int, default=65536
    secure : bool, default=False
        Exact discrete noise from the OS CSPRNG: public values only.
    count_share : float in (0, 1), default=0.05
        Add-remove only: the share spent on each noisy row count.
    bound_budget : float in (0, 1) or BoundBudget, default=0.1
        The share that chooses the row bound (and scales); with a private
        bound, ``BoundBudget.bias`` (0.1 of the budget by default, as every
        estimator's) releases what clipping removed, which the estimators'
        intervals count (``BoundBudget(bias=0)``: none).
    ranges : dict, optional
        PUBLIC per-column ranges ``{column: (lower, upper)}``
        (:mod:`dpmoments.moments.ranges`); they enter no guarantee as data.

    Returns
    -------
    Release
        With ``second_moment`` set, ``center`` the centre used and, with
        scales, ``column_scale``.

    Privacy
    -------
    With public values, that of
    :func:`~dpmoments.moments.releases.release_public_second_moment` (L2
    sensitivity :math:`\sqrt2 R^2/n` under replace-one). With private
    choices, the composition (:func:`dpmoments.privacy.compose`) that
    :func:`~dpmoments.moments.private_release.private_second_moment` reports
    in ``parts``: exponential-mechanism draws (sensitivity 1), the mean
    (:math:`2R/n`) and the second moment (:math:`\sqrt2 R^2/n`) of the rows
    clipped at the private bound, under the chosen relation; ``guarantee``
    is the total.

    Examples
    --------
    >>> import numpy as np
    >>> from dpmoments import release_second_moment
    >>> X = np.random.default_rng(0).normal(loc=3.0, size=(20000, 3))
    >>> r = release_second_moment(X, epsilon=1.0, delta=1e-6, rng=1)
    >>> r.second_moment.shape, str(r.guarantee), r.parts[-1].label
    ((3, 3), '(1, 1e-06)-DP', 'second moment')
    >>> raw = release_second_moment(X / 10, epsilon=1.0, delta=1e-6, row_norm=1.0, center=None, rng=1)
    >>> raw.center is None
    True
    """
    ranges = with_indicator_ranges(ranges, X)  # an opened table's one-hot and :missing columns: 0 to 1
    if not (isinstance(center, str) or scale is not None):
        return release_public_second_moment(
            X, epsilon=epsilon, delta=delta, row_norm=row_norm, mechanism=mechanism, neighbours=neighbours,
            calibration=calibration, center=center, rng=rng, chunk_size=chunk_size, secure=secure,
            count_share=count_share, bound_budget=bound_budget, ranges=ranges)
    if isinstance(center, str) and center != "private":
        raise ValueError(f"'center' must be 'private', a public vector or None; got {center!r}.")
    if secure:
        raise ValueError("a private centre, bound or scale is not available with secure=True: give public "
                         "values (a row_norm and center=None or a vector).")
    if as_source(X).sparse:  # before the private path's own refusal, which would ask for a public bound alone
        raise ValueError("a private centre, bound or scale needs dense X: for scipy.sparse input give public "
                         "values (a row_norm and center=None; a centre would make the rows dense).")
    center_budget = CenterBudget() if center_budget is None else center_budget
    if not isinstance(center_budget, CenterBudget):
        raise TypeError(f"'center_budget' must be a CenterBudget (or None for the defaults); got {center_budget!r}.")
    if laws.named(mechanism) not in laws.ADDITIVE:
        raise ValueError(f"center='private' supports mechanism {laws.offered(laws.ADDITIVE)}; got {str(mechanism)!r}: give "
                         "public values instead (center=None or a vector, and a row_norm).")
    kwargs = dict(epsilon=epsilon, delta=delta, row_norm=row_norm, center=center, center_budget=center_budget,
                  scale=scale, bound_budget=bound_budget, mechanism=laws.named(mechanism), neighbours=neighbours,
                  calibration=calibration, rng=rng, count_share=count_share)
    if ranges is None:
        return private_second_moment(X, **kwargs)
    source = as_source(X)
    names = [str(n) for n in (source.feature_names or [f"x{j}" for j in range(source.n_features)])]
    return ranged_second_moment(source.data, ranges, names, **kwargs)
