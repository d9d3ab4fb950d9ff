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

from .._validation import check_data
from ..data import as_source, open_table
from ..moments.ranges import as_column_ranges, feature_names_of, with_indicator_ranges
from ._conventions import fit_input, labelled_attribute
from ._target import check_target

__all__ = ["ColumnMap", "column_map", "check_response_range", "check_one_response_bound", "release_map",
           "supervised_rows", "LabelledCoefficients"]


def supervised_rows(est, X, y, intercept):
    """``(X, y, names, ColumnMap)``: the rows and the response an IRLS or model-selection fit sees, in memory.

    ``X`` is an array or a DataFrame with ``y`` beside it (``fit(X_df, y_series)``), or an opened table
    (:func:`~dpmoments.data.open_table`, of a file or a DataFrame) or a path: the table's ``target``
    column is the response (then ``y`` is refused: given twice), else ``y``. The response's name (the
    table's target, or ``y.name``) may key its range in ``ranges``, as ``--ranges`` names the target;
    an opened table's one-hot and ``:missing`` columns get the range 0 to 1 (``with_indicator_ranges``).
    """
    owner = type(est).__name__
    ranges = with_indicator_ranges(est.ranges, X)
    X, y, named, response = _table_input(X, y, owner)
    names = feature_names_of(X) if named is None else named
    fit_input(est, X)
    if named is not None:  # an opened table's columns (public: its schema and the declared levels)
        est.feature_names_in_ = np.asarray(named, dtype=object)
    X = check_data(X)
    y = check_target(y, X.shape[0], owner)
    ranges, response_range = _response_range(ranges, est.response_range, response, names)
    check_one_response_bound(est.response_bound, response_range)
    return X, y, names, column_map(ranges, response_range, names, intercept)


def _table_input(X, y, owner):
    """``(X, y, feature names or None, the response's name or None)``; a table or a path read into memory."""
    source = as_source(X)
    if source.kind == "file":
        table = open_table(source.x)
    elif source.kind == "stream" and hasattr(source.x, "target_name"):
        table = source.x
    else:
        name = getattr(y, "name", None)
        return source.x, y, None, name if isinstance(name, str) else None
    if table.target_name is not None and y is not None:
        raise ValueError(f"{owner}.fit: the table's target column {table.target_name!r} is the response and y is "
                         "given too: give one (open the table without target=, or leave y out).")
    if table.target_name is None and y is None:
        raise ValueError(f"{owner}.fit needs a response: give y, or open the table with target=.")
    chunks = list(table.chunks())
    if table.target_name is None:
        name = getattr(y, "name", None)
        return np.concatenate(chunks), y, list(table.feature_names), name if isinstance(name, str) else None
    X, y = (np.concatenate([c[k] for c in chunks]) for k in (0, 1))
    return X, y, list(table.feature_names), table.target_name


def _response_range(ranges, response_range, response, names):
    """``(feature ranges, response range)``: a ``ranges`` entry named as the response (not a feature) is its range."""
    if ranges is None or response is None or response in names:
        return ranges, response_range
    given = {k: (lo, hi) for k, lo, hi in as_column_ranges(ranges).items}
    if response not in given:
        return ranges, response_range
    if response_range is not None:
        raise ValueError(f"'ranges' and 'response_range' both give the range of the response {response!r}: give one.")
    span = given.pop(response)
    return given or None, span


class LabelledCoefficients:
    """``labelled()``: a per-feature fitted attribute as a pandas Series named by the input's columns."""

    def labelled(self, attribute="coef_"):
        """``coef_`` (or another per-feature attribute: ``coef_se_``) as a pandas Series indexed by the input's
        columns (an opened table's one-hot ``col=level`` and ``col:missing`` names included; ``x0, x1, ...``
        without names). Post-processing; needs pandas."""
        if hasattr(self, attribute) and getattr(self, attribute) is None:  # PrivateModelSelection without a refit
            raise AttributeError(f"{type(self).__name__}.{attribute} is None: nothing to label (model selection "
                                 "gives coefficients with refit_epsilon=).")
        return labelled_attribute(self, attribute)


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
