"""The one guard at a site's door: what shape of numbers may leave a site at all.

A payload's shape is fixed by its statistic (:mod:`~dpmoments.multisite.statistics`), never by the
data: no axis longer than the number of features ``d`` (a histogram's public bins excepted, at most
:data:`MAX_BINS`), so a site cannot build a message shaped like its rows.
"""

import numpy as np

__all__ = ["MAX_BINS", "EgressRefused", "egress_guard"]

#: The most bins a histogram payload may have (a bound step's public grid: tens of bins).
MAX_BINS = 1024


class EgressRefused(ValueError):
    """A payload was refused at a site's boundary (it could carry data rows)."""


def egress_guard(payload: object, n_features: int, shape: tuple[int, ...]) -> np.ndarray:
    """Refuse a payload that could carry data rows; return it as a read-only float array.

    Raises
    ------
    EgressRefused
        Not a real numeric array or scalar; an axis longer than ``d`` (shaped like rows);
        a shape other than the declared one; NaN or infinite values.

    Examples
    --------
    >>> import numpy as np
    >>> egress_guard(np.eye(3), 3, (3, 3)).shape
    (3, 3)
    >>> egress_guard(np.ones((100, 3)), 3, (3, 3))
    Traceback (most recent call last):
    ...
    dpmoments.multisite.egress.EgressRefused: refused to send an array of shape (100, 3): axis 0 has length 100 > n_features=3, which is shaped like data rows.
    """
    d = int(n_features)
    shape = tuple(int(s) for s in shape)
    if any(s > d for s in shape):
        raise EgressRefused(f"declared shape {shape} has an axis longer than n_features={d}.")
    if isinstance(payload, (bool, np.bool_)) or not isinstance(payload, (np.ndarray, float, int, np.number)):
        raise EgressRefused(f"only numeric arrays and scalars may leave a site; got {type(payload).__name__}.")
    arr = np.asarray(payload)
    if arr.dtype.kind not in "iuf":
        raise EgressRefused(f"only real numeric payloads may leave a site; got dtype {arr.dtype}.")
    for axis, length in enumerate(arr.shape):
        if length > d:
            raise EgressRefused(f"refused to send an array of shape {arr.shape}: axis {axis} has length {length} > "
                                f"n_features={d}, which is shaped like data rows.")
    if arr.shape != shape:
        raise EgressRefused(f"refused to send an array of shape {arr.shape}: the statistic's shape is {shape}.")
    out = np.array(arr, dtype=np.float64)
    if not np.all(np.isfinite(out)):
        raise EgressRefused("refused to send a payload with NaN or infinite values.")
    out.setflags(write=False)
    return out
