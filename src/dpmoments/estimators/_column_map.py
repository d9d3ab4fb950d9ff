r"""Per-column public ranges for IRLS and model selection: the rows a fit sees, and its coefficients back.

With ``ranges={"age": (0, 120), ...}`` (and ``response_range=(l, u)`` for ``y``), each ranged
column is clipped to its range and mapped to :math:`z_j = (x_j - c_j)/h_j \in [-1, 1]` (midpoint
:math:`c_j`, half-width :math:`h_j`; :mod:`dpmoments.moments.ranges`), the response to
:math:`y' = (y - c_y)/h_y`; columns without a range are left as they are. Without an intercept the
map only scales (:math:`c = 0`, :math:`h = \max(|l|, |u|)`), so that no intercept is implied.
The fit runs on the mapped rows (every guarantee of it holds for the original rows: the map is
fixed and applied to each row on its own), and its coefficients come back by the linear map

.. math::

    \beta_j = \frac{h_y}{h_j}\beta'_j, \qquad
    \beta_0 = c_y + h_y\,\kappa\,\theta_0 - \sum_j \beta_j c_j ,

with the covariance :math:`T\,\mathrm{Cov}\,T^\top` and every other part of the error budget mapped
by the same :math:`T` (post-processing).
"""

from dataclasses import dataclass

import math

import numpy as np

from ..moments.ranges import as_column_ranges

__all__ = ["ColumnMap", "column_map", "check_response_range", "check_one_response_bound", "release_map"]


def check_one_response_bound(response_bound, response_range):
    """Refuse a public ``response_bound`` beside ``response_range``: the range already bounds the mapped
    response by 1, for free, and a bound would be read in the mapped units, not the ones it was written in."""
    if response_range is not None and not (isinstance(response_bound, str) and response_bound == "auto"):
        raise ValueError("'response_bound' and 'response_range' both bound the response: give one (the range "
                         "bounds it for free).")


def check_response_range(value):
    """``None`` or a pair ``(lower, upper)`` of finite numbers with ``lower < upper``."""
    if value is None:
        return None
    try:
        lower, upper = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"'response_range' must be a pair (lower, upper); got {value!r}.") from None
    if not (np.isfinite(lower) and np.isfinite(upper) and lower < upper and math.isfinite(upper - lower)):
        raise ValueError(f"'response_range' must be two finite numbers lower < upper; got {value!r}.")
    return lower, upper


@dataclass(frozen=True)
class ColumnMap:
    """The fixed map of each row: ranged columns clipped, centred and scaled; ``y`` likewise."""

    lower: np.ndarray
    upper: np.ndarray
    center: np.ndarray
    half: np.ndarray
    y_range: tuple  # (lower, upper) or None
    y_center: float
    y_half: float

    @property
    def ranged(self):
        return ~np.isnan(self.lower)

    @property
    def all_ranged(self):
        return bool(self.ranged.all())

    def rows(self, X):
        if not self.ranged.any():
            return X
        clipped = np.clip(X, np.where(self.ranged, self.lower, -np.inf), np.where(self.ranged, self.upper, np.inf))
        return (clipped - self.center) / self.half

    def response(self, y):
        if self.y_range is None:
            return y
        return (np.clip(y, *self.y_range) - self.y_center) / self.y_half

    def back(self, kappa, intercept):
        """``(T, offset)``: the user's ``[coef, intercept]`` are ``T theta + offset`` (``theta`` the fit's)."""
        d = self.center.size
        scale = self.y_half / self.half
        if not intercept:
            return np.diag(scale), np.zeros(d)
        T = np.zeros((d + 1, d + 1))
        T[:d, :d] = np.diag(scale)
        T[d, :d] = -scale * self.center
        T[d, d] = self.y_half * kappa
        return T, np.r_[np.zeros(d), self.y_center]

    def to_dict(self, names):
        given = {str(names[j]): [float(self.lower[j]), float(self.upper[j])] for j in np.flatnonzero(self.ranged)}
        return {"features": given, "response": None if self.y_range is None else list(self.y_range),
                "unranged": [str(names[j]) for j in np.flatnonzero(~self.ranged)]}


def column_map(ranges, response_range, names, intercept):
    """The ``ColumnMap`` of public ``ranges`` over the feature ``names`` (``None`` ranges: identity)."""
    d = len(names)
    lower, upper = (np.full(d, np.nan), np.full(d, np.nan)) if ranges is None else \
        as_column_ranges(ranges).resolve(names)
    ranged = ~np.isnan(lower)
    if intercept:
        center = np.where(ranged, np.nan_to_num((lower + upper) / 2), 0.0)
        half = np.where(ranged, np.nan_to_num((upper - lower) / 2, nan=1.0), 1.0)
    else:
        center = np.zeros(d)
        half = np.where(ranged, np.nan_to_num(np.maximum(np.abs(lower), np.abs(upper)), nan=1.0), 1.0)
    y_range = check_response_range(response_range)
    if y_range is None:
        y_center, y_half = 0.0, 1.0
    elif intercept:
        y_center, y_half = (y_range[0] + y_range[1]) / 2, (y_range[1] - y_range[0]) / 2
    else:
        y_center, y_half = 0.0, max(abs(y_range[0]), abs(y_range[1]))
    return ColumnMap(lower, upper, center, half, y_range, float(y_center), float(y_half))


def release_map(ranges, response_range, d, kappa):
    """``(T, offset)`` from a multi-site IRLS run's ``d`` coefficients to the user's: the map of the plan's public
    ``ranges`` (one per feature or None) and ``response_range``, as ``PrivateIRLS.fit``'s, and the sites' constant
    column ``kappa`` (the intercept, or None). Public facts of the run only."""
    if ranges is None and response_range is None:
        return (np.diag(np.r_[np.ones(d - 1), kappa]) if kappa is not None else np.eye(d)), np.zeros(d)
    width = d - (kappa is not None)
    given = None if ranges is None else {j: r for j, r in enumerate(ranges) if r is not None} or None
    return column_map(given, response_range, [f"x{j}" for j in range(width)], kappa is not None).back(
        1.0 if kappa is None else kappa, kappa is not None)
