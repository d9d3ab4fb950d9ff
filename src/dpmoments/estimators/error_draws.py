r"""Draws of the released second moment that carry every part of its error, for estimates that are not linear in it.

The covariance's intervals add the parts of their error in closed form
(:mod:`~dpmoments.estimators.error_budget`). PCA's directions, the graphical lasso's partial
correlations and ridge precision are non-linear in the released matrix :math:`\hat M`, so they get a
parametric bootstrap instead, as for the noise (:func:`~dpmoments.estimators.uncertainty.redraw`),
but each draw carries all four parts of :math:`\hat M - \Sigma`:

.. math::

    M^* = \hat M + E^* + (b^* - e^*)(b^* - e^*)^\top - D^* + W^*

- :math:`E^*`: fresh noise of the release's law (the added noise);
- :math:`e^* \sim N(0, s^2 I)`: the private centre's error, ``s`` its ``"mean"`` part's noise
  scale (about :math:`\hat m` the second moment is the one about the mean plus :math:`(\beta - e)(\beta -
  e)^\top`, :math:`\beta` the centre's own clipping bias, :mod:`~dpmoments.estimators.centre_bias`); across
  sites, where the release is :math:`S - a a^\top` of moments about the location, that term is
  :math:`a(\beta - e)^\top + (\beta - e)a^\top + \beta\beta^\top - e e^\top` instead (``a`` the mean's
  released step, standing for the fixed :math:`\bar y - \beta`: :mod:`~dpmoments.estimators.centre_bias`);
- :math:`b^*`: that bias, unknown but bounded, :math:`|\beta_j| \le B_j`: at 0 in the sets below, and in one
  more set at a corner of the bound, :math:`b^*_j = \pm B_j` with signs drawn afresh each time (its square
  :math:`B_j^2` on the diagonal is the most it can add; off the diagonal :math:`\pm B_i B_j` both ways), scaled
  into the ball :math:`\|\beta\| \le N` over the columns that bound holds for (:mod:`~dpmoments.estimators.centre_bias`)
  where the corner lies outside it, so that
  the hull of the sets' intervals holds a bias anywhere in the bound (as the covariance's entries widen by it);
- :math:`D^*`: what clipping removed, positive semi-definite: its diagonal drawn from the released
  ``"clipping excess"`` part (:mod:`dpmoments.moments.clipping_bias`), each *detected* column's loss
  plus its noise, floored at 0, and off the diagonal :math:`\rho_{ij}\sqrt{D^*_{ii} D^*_{jj}}` with
  the released correlation (clipping shrinks elliptical rows along their own shape), except where the released
  entry's sign is unclear and the loss may be large (:func:`~.error_budget.entries_of_unclear_sign`: rows beyond the
  outer bound likely, or a tenth of the rows clipped): there neither its sign nor its size is known, and each draw
  takes it at :math:`\pm\sqrt{D^*_{ii} D^*_{jj}}`, the sign drawn afresh (grunfeld's and macrodata's graphical
  lasso at epsilon 1.4 held 0.67 and 0.68 of the full-data partial correlations with the released shape). A column is
  detected where its loss stands out of that release's noise (one-sided at ``1 - (1 - level) / d``,
  as the covariance's budget: at ``level`` per column, a Gaussian table's noise was detected as a loss
  of 40% of a variance in one column of four, and its ridge precision's draws spread fivefold; at
  this level RAND HIE's ``mdvis`` goes undetected in about one fit of three at epsilon 1, and its
  pc2 is then drawn 5 degrees from the fit while 23 from the full-data one). An undetected loss
  lies between 0 and its one-sided upper end (the released loss, if positive, plus its noise at
  ``level``, never above 3 times the column's released variance: ``loss_cap``; the covariance's tail factor,
  :func:`~.error_budget.tail_factor`, is not applied: it cost ridge's draws on the simulations 2.5-30 times their
  widths, for one more of 25 of macrodata's partial correlations held at epsilon 1.4): the draws are made
  twice, with it at 0 and at that end, and an interval is the hull of
  the two basic intervals (:func:`hull_interval`), as the covariance's upper ends move by it. Drawing
  it from its noise instead would add about half that noise's sd to every column whatever the truth,
  and swamp the small columns of a table in mixed units;
- :math:`W^* = \hat\Sigma^{1/2} (V/n - I) \hat\Sigma^{1/2}`, :math:`V \sim W_d(n, I)`: sampling
  under normal theory (``target="population"`` only), :math:`\hat\Sigma` the released matrix less
  the centre's bias, made positive semi-definite.

The estimate is refitted on each draw; the basic interval :math:`[2\hat\theta - q_{hi}, 2\hat\theta -
q_{lo}]` then moves the estimate by the centre's and clipping's biases (they have non-zero mean) and
widens it by all four spreads. Where rows beyond the clipping-excess release's outer bound are seen
and some column's loss stands out of its noise, the loss beyond that bound is unseen: no interval is
complete and :func:`every_part_unseen` says so (the estimators withhold theirs, as the covariance does).

Not counted: sampling beyond normal theory (heavy tails' fourth moments), and clipping's loss off the
diagonal beyond the elliptical shape; the centre's bias where the release does not bound it. Everything here
reads a release and public values only: no rows. All noise is drawn by :mod:`dpmoments.mechanisms`, on the bootstrap's own stream.
"""

import dataclasses
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._lazy import lazy_module
from ..mechanisms import gaussian_noise, wishart_noise
from .centre_bias import location_offset
from .diagnostics import _centre_noise_scale as centre_noise_scale
from .error_budget import (check_target, clipping_part, entries_of_unclear_sign, loss_beyond_outer_unseen, loss_cap,
                           release_centre_bias)
from .uncertainty import basic_interval, family_z, noise_law, redraw

special = lazy_module("scipy.special")  # imported when an interval is first computed

__all__ = ["ErrorParts", "error_parts", "draw_every_part", "every_part_draws", "every_part_unseen", "hull_interval"]


@dataclass(frozen=True)
class ErrorParts:
    """What a draw adds beside the noise, read from a release (standardised units)."""

    target: str
    centre_scale: float
    sigma_root: Optional[np.ndarray]  # (d, d): the released matrix's square root, for sampling; None for "sample"
    lost: Optional[np.ndarray]  # (d,): each variance's released clipping loss; None without that release
    lost_sd: float
    loss_upper: Optional[np.ndarray]  # (d,): an undetected loss's upper end (0 where detected); None without it
    correlation: np.ndarray  # (d, d): the released correlation, the shape of the clipping loss off the diagonal
    unseen: bool  # rows beyond the outer bound seen and some loss detected: no interval is complete
    n: int
    rescaled: bool = False  # rescaled to correlations: the centre's and clipping's parts are not drawn
    centre_bias: Optional[np.ndarray] = None  # (d,): the bound B on the centre's own clipping bias; None: not bounded
    offset: Optional[np.ndarray] = None  # (d,): across sites, the mean's step a from the location (centre_bias.py)
    centre_bias_norm: Optional[tuple] = None  # (N, columns): ||beta|| over those columns is at most N (centre_bias.py)
    unclear_sign: Optional[np.ndarray] = None  # (d, d): entries whose sign the release does not settle (error_budget)

    @property
    def centre_bias_drawn(self):
        """Whether the draws carry the centre's own clipping bias (a set at its bound's corners)."""
        return self.centre_bias is not None and bool(np.any(self.centre_bias > 0))

    def summary(self):
        """JSON-able: what the draws count."""
        if self.rescaled:
            return {"target": self.target, "not_counted": "a private centre's noise and own clipping bias, and "
                                                          "clipping: the release was rescaled to correlations, and "
                                                          "their units with it",
                    "sampling": "normal theory" if self.target == "population" else "not counted"}
        return {"target": self.target, "centre_noise_scale": self.centre_scale,
                "centre_bias": self._centre_bias_summary(),
                "sampling": "normal theory, Wishart(n) about the released matrix" if self.target == "population"
                else "not counted: the intervals are for these rows",
                "clipping": "not estimated: no clipping-excess release (a public row_norm)" if self.lost is None
                else {"variance_lost_detected": [None if np.isnan(v) else float(v) for v in self.lost],
                      "undetected_loss_upper": self.loss_upper.tolist(), "noise_sd": self.lost_sd,
                      "unclear_sign_pairs": 0 if self.unclear_sign is None else int(self.unclear_sign.sum()) // 2,
                      "loss_beyond_outer_unseen": self.unseen}}

    def in_words(self):
        """``(what the draws carry, the parts they leave out)`` in words: the centre's noise and bias are named only
        where the centre is private, clipping's loss only where it is released."""
        sampling = " and sampling (normal theory)" if self.target == "population" else ""
        if self.rescaled:
            return "the added noise" + sampling, ["a private centre's noise and own clipping bias, and clipping (the "
                                                  "release was rescaled to correlations)"] + (["sampling beyond normal theory (heavy "
                                                                          "tails)"] if sampling else [])
        counted, left = ["the added noise"], []
        if self.centre_scale > 0:
            counted.append("the private centre's noise")
            if self.centre_bias is None:
                left.append("the private centre's own clipping bias (not bounded: the release does not say how "
                            "many rows the centre's mean clipped)")
            else:
                counted.append("the private centre's own clipping bias (at 0 and at its bound's corners)")
        if self.lost is not None:
            counted.append("the clipping loss (an undetected one at 0 and at its upper end)")
            left.append("clipping's loss off the diagonal beyond elliptical rows")
        else:
            left.append("clipping bias (not estimated: no clipping-excess release)")
        if self.target == "population":
            left.insert(0, "sampling beyond normal theory (heavy tails)")
        return ", ".join(counted) + sampling, left

    def _centre_bias_summary(self):
        if self.centre_scale == 0:
            return "none: a public centre (or none)"
        if self.centre_bias is None:
            return "not bounded: the release does not say how many rows the centre's mean clipped"
        return {"bound": self.centre_bias.tolist(), "drawn": ("at 0, and in one more set at the bound's corners "
                                                              "(+-B_j, signs drawn)") if self.centre_bias_drawn
                else "not drawn: the bound is 0"}


def every_part_unseen(release, level):
    """True where rows beyond the clipping-excess release's outer bound are seen and some column's loss
    stands out of its noise (one-sided, Bonferroni over the columns): that loss beyond the bound is unknown."""
    part = clipping_part(release)
    return part is not None and loss_beyond_outer_unseen(part, level)


def error_parts(release, level, target):
    """The parts of the error of ``release`` beside its noise (module docstring); public values only."""
    target = check_target(target)
    d = release.n_features
    # a release rescaled to correlations (standardize_release) no longer has its parts' units: they are not drawn
    rescaled = any(step.startswith("scaled-to-correlation") for step in release.postprocessing)
    s = 0.0 if rescaled else float(centre_noise_scale(release) or 0.0)
    M = (release.second_moment + release.second_moment.T) / 2 - s**2 * np.eye(d)
    w, V = np.linalg.eigh(M)
    w = np.maximum(w, 0.0)
    sigma = (V * w) @ V.T
    sd = np.sqrt(np.maximum(np.diag(sigma), 1e-300))
    correlation = np.clip(sigma / np.outer(sd, sd), -1.0, 1.0)
    part = None if rescaled else clipping_part(release)
    lost = upper = None
    if part is not None:
        lost, sd = np.asarray(part["variance_lost"], dtype=float), float(part["noise_sd"])
        detected = lost - family_z(level, d) * sd > 0
        # an undetected loss lies in [0, its one-sided upper end] (as the covariance's budget counts it), never more
        # than 3 times the column's released variance at its upper end (a row keeps a third of its band loss)
        law = noise_law(release)
        cap = loss_cap(np.diagonal(release.second_moment) - law.diagonal_mean
                       + float(special.ndtri(level)) * law.diagonal_sd)
        upper = np.where(detected, 0.0, np.minimum(np.maximum(lost, 0.0) + float(special.ndtri(level)) * sd, cap))
        lost = np.where(detected, lost, np.nan)  # NaN: not detected, drawn at 0 or at its upper end
    return ErrorParts(target=target, centre_scale=s, sigma_root=(V * np.sqrt(w)) @ V.T if target == "population"
                      else None, lost=lost, lost_sd=0.0 if part is None else float(part["noise_sd"]),
                      loss_upper=upper,
                      correlation=correlation, unseen=not rescaled and every_part_unseen(release, level),
                      n=max(int(round(float(release.n))), 1), rescaled=rescaled,
                      **_centre_bias_parts(None if rescaled or s == 0 else release_centre_bias(release, level, True)),
                      offset=None if rescaled else location_offset(release),
                      unclear_sign=None if part is None else entries_of_unclear_sign(release, sigma, level))


def draw_every_part(release, parts, rng, at_upper=False, centre_bias=False):
    """One draw of ``release`` whose second moment carries every part of its error (module docstring).

    ``at_upper``: the undetected clipping losses at their upper ends (else 0); ``centre_bias``: the centre's own
    clipping bias at a corner of its bound (else 0). ``rng`` must be a bootstrap stream
    (:func:`~dpmoments.estimators.uncertainty.bootstrap_generator`).
    """
    drawn = redraw(release, rng)
    d = release.n_features
    M = drawn.second_moment
    if parts.centre_scale > 0:
        e = gaussian_noise(d, parts.centre_scale, rng)
        bias = np.zeros(d)
        if centre_bias:  # b* - e*, b*_j = +-B_j: signs from unit noise drawn by mechanisms/
            bias = _within_norm(np.copysign(parts.centre_bias, gaussian_noise(d, 1.0, rng)), parts.centre_bias_norm)
        step = bias - e
        if parts.offset is None:
            M = M + np.outer(step, step)
        else:  # across sites, about the location (module docstring)
            M = M + np.outer(bias, bias) - np.outer(e, e) + np.outer(parts.offset, step) + np.outer(step, parts.offset)
    if parts.lost is not None:
        loss = parts.lost + gaussian_noise(d, parts.lost_sd, rng) if parts.lost_sd > 0 else parts.lost
        loss = np.where(np.isnan(loss), parts.loss_upper if at_upper else 0.0, np.maximum(loss, 0.0))
        root = np.sqrt(loss)
        M = M - _loss_shape(parts, rng) * np.outer(root, root)
    if parts.sigma_root is not None:
        spread = wishart_noise(d, parts.n, 1.0 / parts.n, rng) - np.eye(d)
        M = M + parts.sigma_root @ spread @ parts.sigma_root
    M = (M + M.T) / 2
    return dataclasses.replace(drawn, second_moment=M,
                               postprocessing=drawn.postprocessing + ("error-budget-draw",))


def _loss_shape(parts, rng):
    """The clipping loss's correlations: the released ones, and +-1 (signs drawn afresh, symmetric) where the
    released entry's sign is unclear (``unclear_sign``): neither its sign nor its size is known there, only
    ``|D_ij| <= sqrt(D_ii D_jj)`` (as the covariance's allowance widens both ends, clipping_allowance.py)."""
    if parts.unclear_sign is None or not parts.unclear_sign.any():
        return parts.correlation
    d = parts.correlation.shape[0]
    signs = np.sign(np.triu(gaussian_noise((d, d), 1.0, rng), 1))
    signs = signs + signs.T
    return np.where(parts.unclear_sign, signs, parts.correlation)


def _centre_bias_parts(bound):
    """``ErrorParts``' ``centre_bias`` and ``centre_bias_norm`` from :func:`release_centre_bias`'s ``with_norm``."""
    if bound is None:
        return {"centre_bias": None}
    bound, norm = bound
    return {"centre_bias": bound, "centre_bias_norm": norm if np.isfinite(norm[0]) else None}


def _within_norm(bias, norm):
    """A corner ``+-B`` of the box, scaled into the ball ``||beta|| <= N`` over its columns where it lies outside:
    the bias is in both, and the box's corners lie up to sqrt(d) times N from 0 (every B_j near N on small tables)."""
    if norm is None:
        return bias
    bound, columns = norm
    length = float(np.linalg.norm(bias[columns]))
    if length > bound:
        bias = bias.copy()
        bias[columns] *= bound / length
    return bias


def every_part_draws(release, parts, refit, n_draws, rng):
    """``refit`` on ``n_draws`` draws, once with the undetected losses and the centre's bias at 0; where any loss may
    be positive, once more with the losses at their upper ends; where the centre's bias is bounded above 0, once more
    with it at its bound's corners (the losses at 0: the two move the estimate opposite ways, so each extreme is
    one of these sets): a list of one to three stacked arrays, to be read with :func:`hull_interval`."""
    sets = [np.array([refit(draw_every_part(release, parts, rng)) for _ in range(n_draws)])]
    if parts.loss_upper is not None and np.any(parts.loss_upper > 0):
        sets.append(np.array([refit(draw_every_part(release, parts, rng, at_upper=True)) for _ in range(n_draws)]))
    if parts.centre_bias_drawn:
        sets.append(np.array([refit(draw_every_part(release, parts, rng, centre_bias=True)) for _ in range(n_draws)]))
    return sets


def hull_interval(estimate, sets, level):
    """The smallest interval holding the basic interval of every set of draws (an undetected loss anywhere
    between 0 and its upper end moves the estimate between the two, to first order) and the estimate itself:
    where the draws sit far to one side (a centre whose error dominates some columns), the basic interval
    2 theta - q can leave the estimate out (macrodata's graphical lasso printed 0.522 [0.993, 1.0])."""
    intervals = np.array([basic_interval(estimate, draws, level) for draws in sets])
    return np.stack([np.minimum(intervals[:, 0].min(axis=0), estimate),
                     np.maximum(intervals[:, 1].max(axis=0), estimate)])
