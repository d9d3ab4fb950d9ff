r"""The second moment an estimator releases, with its centre, column scales and row bound chosen privately.

Up to five passes over the data, each paid from a stated share of the budget
and composed at the end (:func:`dpmoments.privacy.composition.compose`):

1. **location** (``center="private"`` without a public prior): private
   column medians, one exponential-mechanism draw per column on the public
   signed grid (``CenterBudget.location``);
2. **scales** (``scale="private"``): private 0.95-quantiles of
   ``|x_j - m_j|``, one draw per column (half of ``bound_budget``);
3. **row bound** (``row_norm="auto"``): a private quantile of
   ``||(x - m) / s||`` and the noisy count of rows beyond it (the rest of
   ``bound_budget``, :mod:`dpmoments.moments.auto_release`);
4. **mean** (``center="private"``): the mean of the clipped
   ``(x - m) / s`` (``CenterBudget.mean``), as before;
5. **second moment** of the clipped ``(x - c) / s`` about that private mean,
   with the rest of epsilon and of delta.

The release is of the standardised rows ``z = (x - c) / s``; it records
``center = c`` and ``column_scale = s`` (``None`` without scaling), and the
estimators map their estimate back to the original units (post-processing).
"""

import dataclasses
import math

import numpy as np

from .._rng import spawn
from ..moments import iter_chunks, release_cross_moment, release_second_moment
from ..moments.auto_release import (as_bound_budget, check_auto_privacy, check_auto_source, clip_target, is_auto,
                                    warn_clipped, warn_range_end, warn_unreliable)
from ..moments.dask_moments import is_dask_collection, row_ones
from ..moments.private_bounds import exponential_budget, noisy_clipped_count, quantile_pass, select_quantiles
from ..moments.release import Part, randomness_of
from ..privacy import PureDP, compose

__all__ = ["private_second_moment", "needs_private_choices"]

SCALE_SHARE = 0.5  # of bound_budget, when both scales and the row bound are chosen privately


def needs_private_choices(row_norm, center, scale):
    return is_auto(row_norm) or isinstance(center, str) or scale is not None


def _check_scale(scale):
    if scale is not None and not (isinstance(scale, str) and scale == "private"):
        raise ValueError(f"'scale' must be None or 'private'; got {scale!r}.")


class _Budget:
    """Shares of (epsilon, delta) handed out in order; delta a part did not use goes to the last one."""

    def __init__(self, epsilon, delta):
        self.epsilon, self.delta, self.delta_used, self.parts = epsilon, delta, 0.0, []

    def take(self, share):
        return share * self.epsilon, None if self.delta is None else share * self.delta

    def rest_of_delta(self):
        return None if self.delta is None else max(self.delta - self.delta_used, 0.0)

    def record(self, label, guarantee, share, **released):
        self.delta_used += getattr(guarantee, "delta", 0.0) or 0.0
        self.parts.append(Part(label, guarantee, share, released))


def _shares(center, center_budget, scale, row_norm, bound_budget):
    private_center = isinstance(center, str)
    shares = {
        "location": center_budget.location if private_center and center_budget.prior is None else 0.0,
        "mean": center_budget.mean if private_center else 0.0,
        "bound": bound_budget.share if (is_auto(row_norm) or scale is not None) else 0.0,
    }
    if sum(shares.values()) >= 1:
        raise ValueError(f"the budget shares {', '.join(f'{k}={v:g}' for k, v in shares.items() if v)} add up to "
                         "1 or more and leave nothing for the second moment; lower them.")
    return shares


def _source(X, scale, with_ones):
    """The rows divided by the column scales (paired with a response of ones for the mean), read afresh.

    An array or a dask collection stays one (a pair ``(Z, ones)`` for the mean);
    anything else becomes a new stream of chunks, so each pass reads the source again.
    """
    if scale is None and not with_ones:
        return X
    if is_dask_collection(X):
        Z = X if scale is None else X / scale
        return (Z, row_ones(Z)) if with_ones else Z
    if scale is None and isinstance(X, np.ndarray):
        return X, np.ones(X.shape[0])

    def chunks():
        for chunk in iter_chunks(X):
            Z = chunk if scale is None else chunk / scale
            yield (Z, np.ones(Z.shape[0])) if with_ones else Z

    return chunks()


def _location(X, budget, share, center_budget, search, rng):
    if share == 0.0:
        return None if center_budget.prior is None else np.asarray(center_budget.prior, dtype=float)
    (counts,), d = quantile_pass(X, [("column", None, None)], search=search)
    eps, delta = budget.take(share)
    each, guarantee = exponential_budget(eps, delta, d)
    m, outside = select_quantiles(counts, search.edges(signed=True), epsilon_each=each, quantile=0.5, rng=rng)
    budget.record("location", guarantee, share, statistic="column medians", at_range_end=int(outside.sum()))
    if outside.any():
        warn_range_end("column median", search)
    return m


def _scales(X, m, budget, share, bounds, rng):
    (counts,), d = quantile_pass(X, [("abs-column", m, None)], search=bounds.search)
    eps, delta = budget.take(share)
    each, guarantee = exponential_budget(eps, delta, d)
    q = bounds.fixed_quantile()
    s, outside = select_quantiles(counts, bounds.search.edges(), epsilon_each=each, quantile=q, rng=rng)
    budget.record("column scales", guarantee, share, statistic=f"{q:g}-quantiles of |x_j - m_j|",
                  at_range_end=int(outside.sum()))
    if outside.any():
        warn_range_end("column scale", bounds.search)
    return s


def _row_bound(X, m, s, budget, share, bounds, main, rng):
    """Private row bound on (x - m)/s and the noisy clipped count: (R, noisy count or None, epsilon per draw)."""
    (counts,), d = quantile_pass(X, [("row-norm", m, s)], search=bounds.search)
    diag = bounds.diagnostic * share if math.isfinite(budget.epsilon) else 0.0
    eps = (share - diag) * budget.epsilon
    mechanism, neighbours, calibration, main_share = main
    eps_main, delta_main = budget.take(main_share)
    quantile, clipped = clip_target(bounds, "second", mechanism, d, eps_main, delta_main, neighbours, calibration, eps)
    gen_draw, gen_count = spawn(rng, 2)
    values, outside = select_quantiles(counts, bounds.search.edges(), epsilon_each=eps, quantile=quantile,
                                       clipped_rows=clipped, rng=gen_draw)
    R = float(values[0])
    target = f"{quantile:g}-quantile" if clipped is None else f"clip about {clipped:.3g} rows"
    budget.record("row_norm", PureDP(eps), share - diag, row_norm=R, target=target, at_range_end=bool(outside[0]))
    if outside[0]:
        warn_range_end("row_norm", bounds.search)
    count = noisy_clipped_count(counts, bounds.search.edges(), R, diag * budget.epsilon, gen_count) if diag else None
    return R, count, eps


def private_second_moment(X, *, epsilon, delta, row_norm, center, center_budget, scale, bound_budget, mechanism,
                          neighbours, calibration, rng):
    """The second moment of the clipped, privately centred and scaled rows (module docstring).

    Returns
    -------
    Release
        ``guarantee`` composes every part; ``parts`` lists them.

    Privacy
    -------
    Basic composition of the parts, each under the release's relation:
    exponential-mechanism draws (sensitivity 1; columns composed in zCDP
    when better), a Laplace count (sensitivity 1), a Gaussian or Laplace
    mean (L2 sensitivity ``2R/n``) and the second moment (``sqrt(2) R^2/n``
    under replace-one), all of standardised rows clipped to ``R``.
    """
    _check_scale(scale)
    bounds = as_bound_budget(bound_budget)
    if is_auto(row_norm) or scale is not None:
        check_auto_privacy(mechanism, False, what="row_norm='auto'" if is_auto(row_norm) else
                           "scale='private'")
    if is_auto(row_norm) or scale is not None or (isinstance(center, str) and center_budget.prior is None):
        check_auto_source(X, "a private centre, scale or bound")
    shares = _shares(center, center_budget, scale, row_norm, bounds)
    main_share = 1.0 - sum(shares.values())
    budget = _Budget(epsilon, delta)
    rng_mean, rng_cov, rng_loc, rng_scale, rng_bound = spawn(rng, 5)
    private_center = isinstance(center, str)
    m = _location(X, budget, shares["location"], center_budget, bounds.search, rng_loc) if private_center else center
    bound_share = shares["bound"] * (SCALE_SHARE if is_auto(row_norm) else 1.0)
    s = _scales(X, m, budget, bound_share, bounds, rng_scale) if scale is not None else None
    R, count, eps_draw = row_norm, None, None
    if is_auto(row_norm):
        R, count, eps_draw = _row_bound(X, m, s, budget, shares["bound"] - (bound_share if s is not None else 0.0),
                                        bounds, (mechanism, neighbours, calibration, main_share), rng_bound)
    kwargs = dict(row_norm=R, mechanism=mechanism, neighbours=neighbours, calibration=calibration)
    m_z = None if m is None else (m if s is None else m / s)
    if private_center:
        eps, delta_mean = budget.take(shares["mean"])
        if m_z is None:
            m_z = np.zeros(_width(X))
        mean = _mean(X, s, m_z, eps, delta_mean, rng_mean, kwargs)
        budget.record("mean", mean.guarantee, shares["mean"])
        m_z = m_z + mean.cross_moment
    rel = release_second_moment(_source(X, s, False), epsilon=main_share * epsilon, delta=budget.rest_of_delta(),
                                center=m_z, rng=rng_cov, **kwargs)
    return _finish(rel, budget, main_share, s, count, eps_draw, bounds, rng, epsilon)


def _width(X):
    from ._moment_base import n_features_of  # the base imports this module

    return n_features_of(X)


def _mean(X, s, m_z, eps, delta, rng, kwargs):
    """The mean of the clipped ``x / s - m_z``: the cross moment with the constant response 1 (bound 1)."""
    source = _source(X, s, True)
    Z, ones = source if isinstance(source, tuple) else (source, None)  # else a stream of (Z, 1) chunks
    return release_cross_moment(Z, ones, epsilon=eps, delta=delta, response_bound=1.0, center=m_z, rng=rng,
                                **kwargs)


def _finish(rel, budget, main_share, s, count, eps_draw, bounds, rng, epsilon):
    budget.record("second moment", rel.guarantee, main_share)
    parts = budget.parts
    if count is not None:
        fraction, sd = count.value / rel.n, count.noise_sd / rel.n
        parts.insert(-1, Part("clipped rows", count.guarantee, count.guarantee.epsilon / epsilon,
                              {"clipped_fraction": fraction, "clipped_fraction_noise_sd": sd}))
        warn_clipped(fraction, sd)
    if eps_draw is not None:
        warn_unreliable(eps_draw, bounds.search, rel.n, "row bound")
    center = rel.center if (rel.center is None or s is None) else rel.center * s
    steps = rel.postprocessing + (("standardised by private column scales; estimates are mapped back",)
                                  if s is not None else ())
    return dataclasses.replace(rel, center=center, column_scale=s, guarantee=compose([p.guarantee for p in parts]),
                               parts=tuple(parts), randomness=randomness_of(rng, epsilon), postprocessing=steps)
