"""Argument checks with one message shape.

Every check returns the normalised value and raises ``TypeError`` for the
wrong kind of value or ``ValueError`` for the wrong range, naming the
parameter, what is allowed and what was received.
"""

import math
import numbers
import sys

import numpy as np

__all__ = [
    "check_real",
    "check_epsilon",
    "check_delta",
    "check_positive",
    "check_nonnegative",
    "check_int",
    "check_option",
    "check_data",
    "check_vector",
    "check_sensitivity",
    "as_float_array",
    "check_finite",
]


def check_real(value, name):
    """A real number that is not NaN (infinities pass), as a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"'{name}' must be a real number; got {type(value).__name__} {value!r}.")
    value = float(value)
    if math.isnan(value):
        raise ValueError(f"'{name}' must not be NaN; got {value}.")
    return value


_MIN_NORMAL = sys.float_info.min


def check_epsilon(epsilon, name="epsilon", allow_inf=True):
    """``epsilon`` in (0, inf]; ``inf`` means no noise where allowed.

    Subnormal values (below 2.2e-308) are refused: they carry too few
    significant bits for any calibration to be stated safely.
    """
    epsilon = check_real(epsilon, name)
    upper = "inf]" if allow_inf else "inf)"
    if epsilon <= 0 or (math.isinf(epsilon) and not allow_inf):
        raise ValueError(f"'{name}' must be in (0, {upper}; got {epsilon}.")
    if epsilon < _MIN_NORMAL:
        raise ValueError(f"'{name}' must be at least {_MIN_NORMAL:g} (a normal float); got {epsilon}.")
    return epsilon


def check_delta(delta, name="delta", allow_zero=True):
    """``delta`` in [0, 1) (or (0, 1) where zero is meaningless)."""
    delta = check_real(delta, name)
    low_ok = delta >= 0 if allow_zero else delta > 0
    if not (low_ok and delta < 1):
        bracket = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"'{name}' must be in {bracket}; got {delta}.")
    return delta


def check_positive(value, name, allow_inf=False):
    """A finite (or, where allowed, infinite) real number > 0."""
    if value is None:
        raise ValueError(f"'{name}' is required (a public bound stated before seeing the data); got None.")
    value = check_real(value, name)
    if value <= 0 or (math.isinf(value) and not allow_inf):
        upper = "inf]" if allow_inf else "inf)"
        raise ValueError(f"'{name}' must be in (0, {upper}; got {value}.")
    return value


def check_nonnegative(value, name):
    """A finite real number >= 0."""
    value = check_real(value, name)
    if value < 0 or math.isinf(value):
        raise ValueError(f"'{name}' must be in [0, inf); got {value}.")
    return value


def check_int(value, name, minimum=1):
    """An integer >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"'{name}' must be an integer; got {type(value).__name__} {value!r}.")
    if value < minimum:
        raise ValueError(f"'{name}' must be an integer >= {minimum}; got {value}.")
    return int(value)


def check_option(value, name, options):
    """One of a fixed set of strings."""
    if not isinstance(value, str) or value not in options:
        allowed = ", ".join(repr(o) for o in sorted(options))
        raise ValueError(f"'{name}' must be one of {allowed}; got {value!r}.")
    return value


def as_float_array(X, name, convert=True):
    """``X`` as a real array (float64 when ``convert``): the one input rule of every entry point.

    Refused: text (strings are never parsed, numeric or not), missing values
    (``None``, pandas ``NA``), masked arrays with masked entries (the mask
    would otherwise be dropped silently), complex numbers and sparse
    matrices. Messages name the problem, never a value.
    """
    if isinstance(X, (str, bytes)) or X is None:
        raise TypeError(f"'{name}' must be an array of numbers; got {type(X).__name__}.")
    if _one_shot(X):  # numpy would wrap it in an object array, and the message would be about that
        raise TypeError(f"'{name}' is an iterator ({type(X).__name__}), which can be read only once and is not "
                        "accepted: pass an array, a data frame, a dask array or, where the estimator "
                        "streams, a file path.")
    if hasattr(X, "tocsr") or hasattr(X, "toarray"):
        raise TypeError(f"'{name}' is a sparse matrix; sparse input is not supported here: pass a dense array, or "
                        "release it with a dpmoments.release_* function (they sum sparse rows from their "
                        "non-zeros) and fit the estimator with fit_release.")
    if isinstance(X, np.ma.MaskedArray):
        if np.ma.getmaskarray(X).any():  # not how many: a count of the data's masked values is not private
            raise ValueError(f"'{name}' is a masked array with masked values; dpmoments neither drops nor "
                             "fills them silently: pass X.filled(value) or only the unmasked rows "
                             "(X[~np.ma.getmaskarray(X).any(axis=1)].data).")
        X = np.ma.getdata(X)
    columns = frame_columns(X)
    try:
        return _to_real(X, name, convert)
    except (TypeError, ValueError) as exc:
        if columns is None:
            raise
        for label, column in zip(columns, X.columns):  # a data frame: say which column
            try:
                values = _to_real(X[column], name, convert)
                failed = "missing value" in str(exc) and np.isnan(values).any()  # pandas NA may come out as NaN
            except (TypeError, ValueError):
                failed = True
            if failed:
                raise type(exc)(str(exc).replace(f"'{name}'", f"'{name}' column {label!r}", 1)) from None
        raise


def frame_columns(X):
    """A data frame's column names as strings (pandas, or anything with ``columns`` and ``dtypes``), else None."""
    columns = getattr(X, "columns", None)
    if columns is None or not hasattr(X, "dtypes"):
        return None
    return [str(c) for c in columns]


def _to_real(X, name, convert):
    try:
        arr = np.asarray(X)
    except Exception as exc:  # ragged lists and similar; numpy's text is not repeated (it may quote values)
        raise TypeError(f"'{name}' must be an array of numbers; it could not be converted to one "
                        f"({type(exc).__name__}: rows of different lengths or mixed types?).") from None
    if arr.dtype.kind == "c":
        raise ValueError(f"'{name}' must hold real numbers: Complex data not supported; got dtype {arr.dtype}.")
    if arr.dtype.kind in "USO":
        arr = _object_to_float(arr, name)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"'{name}' must hold real numbers; got dtype {arr.dtype}.")
    return arr.astype(np.float64, copy=False) if convert else arr


def _one_shot(X):
    """A generator or ``iter(...)``: iterating it again yields nothing (an array, a list or a frame is not one)."""
    if hasattr(X, "__array__") or isinstance(X, (list, tuple)) or not hasattr(X, "__next__"):
        return False
    try:
        return iter(X) is X
    except TypeError:
        return False


def _is_missing(value):
    return value is None or type(value).__name__ in ("NAType", "NaTType")


def _object_to_float(arr, name):
    """Numbers held as Python objects (e.g. a DataFrame with nullable columns) -> float64; text is refused."""
    flat = arr.ravel()
    if arr.dtype.kind in "US" or any(isinstance(v, (str, bytes)) for v in flat):
        raise TypeError(f"'{name}' must hold real numbers, not text: dpmoments never parses strings, numeric or "
                        "not; convert the data to a numeric dtype first.")
    if any(_is_missing(v) for v in flat):  # not how many: a count of the data's missing values is not private
        raise ValueError(f"'{name}' has missing values (None or pandas NA); remove or impute them first{IMPUTE_HINT}.")
    for v in flat:
        if not isinstance(v, numbers.Number) or isinstance(v, numbers.Complex) and not isinstance(v, numbers.Real):
            try:
                float(v)
            except (TypeError, ValueError):
                raise TypeError(f"'{name}' must hold real numbers; got an object array that is not numeric: "
                                f"float() argument must be a string or a real number, not "
                                f"'{type(v).__name__}'.") from None
    try:
        return arr.astype(np.float64)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"'{name}' must hold real numbers; got an object array that is not numeric.") from None


def check_finite(arr, name):
    """Refuse NaN and infinite entries, never showing or counting them (a count of a response's missing values
    is read from the data: not private)."""
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"'{name}' contains NaN or infinite values; remove or impute them first.")


#: Where a data table's missing values are refused: the privacy-correct way to keep their rows.
IMPUTE_HINT = (" (a public value with a 0/1 indicator column keeps the guarantee: open_table(impute=), --impute; "
               "docs/bounds.md)")


def check_columns_finite(arr, name, columns):
    """A data frame's NaN and infinite values: the first column that has some, named, never counted (a count of
    the data's missing values is not private)."""
    bad = ~np.isfinite(arr).all(axis=0)
    if bad.any():
        j = int(np.argmax(bad))
        more = " (other columns have some too)" if int(bad.sum()) > 1 else ""
        raise ValueError(f"'{name}' column {columns[j]!r} has NaN or infinite values{more}; remove or impute them "
                         f"first{IMPUTE_HINT}.")


def check_data(X, name="X", min_samples=1, finite=True):
    """A finite 2-D float array of shape (n_samples, n_features).

    ``finite=False`` skips the NaN/inf scan, for callers that detect
    non-finite values more cheaply themselves (the streaming pass reads it
    off the row norms it computes anyway).
    """
    arr = as_float_array(X, name)
    columns = frame_columns(X)
    if arr.ndim != 2:
        raise ValueError(
            f"'{name}' must be 2-D with shape (n_samples, n_features); got {arr.ndim}-D shape {arr.shape}. "
            "Reshape your data with X.reshape(-1, 1) for one feature or X.reshape(1, -1) for one sample."
        )
    if arr.shape[1] < 1:
        raise ValueError(f"'{name}' has 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required.")
    if arr.shape[0] < min_samples:
        raise ValueError(
            f"'{name}' has {arr.shape[0]} sample(s) (shape={arr.shape}) while a minimum of {min_samples} is required."
        )
    if columns is not None:
        check_columns_finite(arr, name, columns)
    if finite:
        check_finite(arr, name)
    return arr


def check_vector(y, name="y", length=None):
    """A finite 1-D float array, optionally of a given length."""
    arr = as_float_array(y, name)
    if arr.ndim != 1:
        raise ValueError(f"'{name}' must be 1-D; got {arr.ndim}-D shape {arr.shape}.")
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"'{name}' must have length {length} (one entry per row of X); got {arr.shape[0]}.")
    check_finite(arr, name)
    return arr


def check_sensitivity(value, cause):
    """A sensitivity computed from public bounds, refused when it left the normal floats.

    ``cause`` names the bounds it came from (e.g. ``"'row_norm' = 1e+200"``);
    the message never carries a data value.
    """
    if _MIN_NORMAL <= value < math.inf:
        return value
    way = "overflows" if not value < 1 else "underflows"
    raise ValueError(f"{cause} gives a sensitivity that {way} the float range; restate the data in other units.")
