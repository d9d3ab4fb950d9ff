"""What may cross between the roles of a distributed run, and the egress guard.

Every message is a small frozen dataclass holding read-only arrays whose shape
is fixed by the *statistic*, never by the data: a ``(d, d)`` symmetric second
moment, a ``(d,)`` cross moment, a ``(d, d, d)`` symmetric third moment, or a
``(d, r)`` factor with ``r <= d`` (DPdisPCA). :func:`egress_guard` runs in
every message's constructor, so a site cannot build (hence cannot send) a
payload shaped like its data rows: an ``(n_s, d)`` array is refused because its
leading dimension exceeds ``d`` or because its shape is not the statistic's.

Limits of a shape check (stated, not hidden): a site holding exactly ``d``
rows has a data matrix of shape ``(d, d)``. The guard then relies on the
symmetry check of the matrix statistics (a data matrix is not exactly
symmetric except by accident); a factor message of shape ``(d, d)`` cannot be
told apart from rows by shape alone, so factors are limited to ``r <= d``
columns and are the sites' own code path only.
"""

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "STATISTIC_NDIM",
    "EgressRefused",
    "SiteFailure",
    "ProtocolAborted",
    "MessageRefused",
    "egress_guard",
    "statistic_shape",
    "NoiseShare",
    "SiteMessage",
    "FactorMessage",
]

#: Statistic name -> number of axes of length ``d``.
STATISTIC_NDIM = {"second": 2, "cross": 1, "third": 3}
_SYMMETRIC = ("second", "third")


class EgressRefused(ValueError):
    """A payload was refused at a site's boundary (it could carry data rows)."""


class SiteFailure(RuntimeError):
    """A site stopped during a run (injected in tests, or a real crash)."""


class ProtocolAborted(RuntimeError):
    """A run stopped cleanly with no release (e.g. too few sites survived).

    ``report`` holds what is known at the abort (who failed, when), or None.
    """

    def __init__(self, message, report=None):
        super().__init__(message)
        self.report = report


class MessageRefused(ProtocolAborted):
    """The aggregator refused a site's message; the run stops with no release.

    Raised by :meth:`~dpmoments.distributed.Aggregator.receive` (and so by
    ``combine`` and every protocol) for a message that does not belong in the
    open round: a second message from the same site, a replay of an earlier
    message, a message tagged with another round, one arriving after the round
    closed, a payload of the wrong shape or dtype, or a site claiming a row
    count ``n`` other than the plan's. ``site`` names the sender and
    ``reason`` is one of ``"duplicate"``, ``"replayed"``, ``"stale-round"``,
    ``"late"``, ``"unknown-site"``, ``"wrong-payload"``, ``"wrong-n"``.
    """

    def __init__(self, message, *, site=None, reason=None):
        super().__init__(message, {"site": site, "reason": reason})
        self.site = site
        self.reason = reason


def statistic_shape(statistic, n_features):
    """The shape of a statistic's payload: ``(d,) * ndim``."""
    if statistic not in STATISTIC_NDIM:
        allowed = ", ".join(repr(s) for s in sorted(STATISTIC_NDIM))
        raise ValueError(f"'statistic' must be one of {allowed}; got {statistic!r}.")
    return (int(n_features),) * STATISTIC_NDIM[statistic]


def egress_guard(payload, n_features, shape):
    """Refuse a payload that could carry data rows; return it as a read-only float array.

    Parameters
    ----------
    payload : ndarray or real scalar
    n_features : int
        ``d``: no axis of an allowed payload is longer than ``d``.
    shape : tuple of int
        The declared shape of the statistic (every entry ``<= d``).

    Raises
    ------
    EgressRefused
        Not a numeric array or scalar; an axis longer than ``d`` (shaped like
        rows); a shape other than the declared one; NaN or infinite values.

    Examples
    --------
    >>> import numpy as np
    >>> egress_guard(np.eye(3), 3, (3, 3)).shape
    (3, 3)
    >>> egress_guard(np.ones((100, 3)), 3, (3, 3))
    Traceback (most recent call last):
    ...
    dpmoments.distributed.messages.EgressRefused: refused to send an array of shape (100, 3): axis 0 has length 100 > n_features=3, which is shaped like data rows.
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
            raise EgressRefused(
                f"refused to send an array of shape {arr.shape}: axis {axis} has length {length} > "
                f"n_features={d}, which is shaped like data rows."
            )
    if arr.shape != shape:
        raise EgressRefused(f"refused to send an array of shape {arr.shape}: the statistic's shape is {shape}.")
    out = np.array(arr, dtype=np.float64)
    if not np.all(np.isfinite(out)):
        raise EgressRefused("refused to send a payload with NaN or infinite values.")
    out.setflags(write=False)
    return out


def _check_name(site):
    if not isinstance(site, str) or not site:
        raise TypeError(f"'site' must be a non-empty string; got {site!r}.")


def _check_symmetric(arr, statistic):
    if statistic == "second" and not np.array_equal(arr, arr.T):
        raise EgressRefused("a second-moment payload must be exactly symmetric.")
    if statistic == "third" and not (np.array_equal(arr, arr.transpose(1, 0, 2))
                                     and np.array_equal(arr, arr.transpose(0, 2, 1))):
        raise EgressRefused("a third-moment payload must be fully symmetric.")


@dataclass(frozen=True, eq=False)
class NoiseShare:
    """A noise share sent *to* a site: ``e_s`` (noise generator) or ``f_s`` (aggregator).

    Attributes
    ----------
    site : str
        The receiving site.
    source : {"noise-generator", "aggregator"}
    statistic : {"second", "cross", "third"}
    matrix : ndarray of the statistic's shape
    round_id : str or None
        The aggregator's round (its shares carry it; a site echoes it back).
    """

    site: str
    source: str
    statistic: str
    matrix: np.ndarray
    round_id: object = None

    def __post_init__(self):
        _check_name(self.site)
        if self.source not in ("noise-generator", "aggregator"):
            raise ValueError(f"'source' must be 'noise-generator' or 'aggregator'; got {self.source!r}.")
        arr = np.asarray(self.matrix)
        shape = statistic_shape(self.statistic, arr.shape[0] if arr.ndim else 0)
        object.__setattr__(self, "matrix", egress_guard(arr, shape[0] if shape else 0, shape))
        _check_symmetric(self.matrix, self.statistic)


@dataclass(frozen=True, eq=False)
class SiteMessage:
    """A site's noisy statistic, the only thing a site sends to the aggregator.

    Attributes
    ----------
    site : str
    n : int
        The site's row count ``N_s`` (public in these protocols).
    statistic : {"second", "cross", "third"}
    value : ndarray of shape ``(d,) * ndim``
        ``A_s + e_s + f_s + g_s`` (CAPE), ``A_s + g_s`` (conventional), or
        ``A_s + masks + g_s`` (secure aggregation).
    n_features : int
    round_id : str or None
        The round this message answers (echoed from the aggregator's share);
        the aggregator refuses a message tagged with another round.
    """

    site: str
    n: int
    statistic: str
    value: np.ndarray
    n_features: int
    round_id: object = None

    def __post_init__(self):
        _check_name(self.site)
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer)) or self.n < 1:
            raise ValueError(f"'n' must be a positive integer; got {self.n!r}.")
        shape = statistic_shape(self.statistic, self.n_features)
        try:
            object.__setattr__(self, "value", egress_guard(self.value, self.n_features, shape))
            _check_symmetric(self.value, self.statistic)
        except EgressRefused as exc:  # name the site: the error is read at the aggregator too
            raise EgressRefused(f"site {self.site!r}: {exc}") from exc


@dataclass(frozen=True, eq=False)
class FactorMessage:
    """A partial square root ``P_s`` of shape ``(d, r)``, ``r <= d`` (DPdisPCA)."""

    site: str
    n: int
    value: np.ndarray
    n_features: int

    def __post_init__(self):
        _check_name(self.site)
        arr = np.asarray(self.value)
        if arr.ndim != 2 or arr.shape[0] != self.n_features or arr.shape[1] > self.n_features:
            raise EgressRefused(
                f"a factor payload must have shape (n_features, r) with r <= n_features={self.n_features}; "
                f"got {arr.shape}."
            )
        object.__setattr__(self, "value", egress_guard(arr, self.n_features, arr.shape))


def describe(message):
    """A row for a transport spy: type, site and shape (never the values)."""
    value = getattr(message, "value", None)
    if value is None:
        value = message.matrix
    return {"type": type(message).__name__, "site": message.site, "shape": tuple(value.shape),
            "finite": bool(math.isfinite(float(np.sum(value))))}
