"""What may cross between the parties of a multi-site run, and the one guard at a site's door.

Three kinds of message travel, on every transport, as bytes in one fixed format
(:func:`to_wire` / :func:`from_wire`: a JSON header of tags and array shapes, then the
arrays' float64 bytes, a symmetric matrix as its upper triangle only; a fixed schema per
kind, nothing ever unpickled):

* :class:`Query` -- aggregator to site: the plan's digest, the step asked for, the
  aggregator's round id, the step's public parameters (IRLS: the previous private
  iterate), the bounds its bound step chose (an ``auto`` plan's moment steps), the centre
  its location step chose (a private centre's later steps) and the aggregator's own noise
  ``f_s`` per round;
* :class:`Reply` -- site to aggregator: the site's noisy statistic per round of the step
  (or its noisy histogram, in a bound step; its ``(d, B)`` noisy per-coordinate counts, in a
  location step), tagged with the plan, the step and the round
  id it answers;
* :class:`SiteError` -- site to aggregator: one code from :data:`ERRORS` and that code's
  fixed message, tagged like a reply. No free text leaves a site;
* :class:`Hello` -- who is there: the aggregator names a plan, a site holding it answers
  with its name (transports whose nodes are anonymous learn the names this way).

Every message carries its plan and round: a query or reply without them does not
decode. Payload arrays pass their statistic's guard in the constructor
(:meth:`~dpmoments.multisite.statistics.Statistic.guard`, on :func:`egress_guard`): their shape is fixed
by the statistic (``(d, d)``, ``(d,)``, ``(d, d, d)``, a ``(d, r)`` factor with ``r <= d``,
a histogram of the plan's public number of bins, at most :data:`MAX_BINS`), never by the data, so a site cannot build a message shaped like its rows. A site with
exactly ``d`` rows has a ``(d, d)`` data matrix: the matrix statistics must then be
exactly symmetric, which rows are not except by accident.
"""

import json
import math
import re
from dataclasses import dataclass, field

import numpy as np

from .egress import MAX_BINS, EgressRefused, egress_guard
from .statistics import as_statistic

__all__ = ["MAX_BINS", "ERRORS", "EgressRefused", "SiteFailure", "ProtocolAborted", "MessageRefused",
           "egress_guard", "NoiseShare", "Query", "Reply", "SiteError", "Hello", "to_wire",
           "from_wire", "describe"]

_HEX = re.compile(r"^[0-9a-f]{64}$")
_ROUND = re.compile(r"^[0-9a-zA-Z-]{1,64}$")
_NAME = re.compile(r"^[^\x00-\x1f]{1,128}$")

#: The only errors a site may report, each with its fixed, data-free message.
ERRORS = {
    "plan-unknown": "this site holds no share of the plan asked for",
    "step-unknown": "the plan has no such step",
    "already-answered": "this site already answered this step of this plan (each share is used once)",
    "over-budget": "answering would exceed the budget this site declared",
    "relation-mismatch": "this site's budget is spent under another neighbouring relation than the plan's",
    "data-unreadable": "the site could not read its data file",
    "data-mismatch": "the site's data do not match the plan (row count or number of columns)",
    "bad-query": "the query does not decode or does not fit the plan",
    "internal": "the site failed while answering; the reason is in the site's own log",
}


class SiteFailure(RuntimeError):
    """A site stopped during a run (injected in tests, or a real crash)."""


class ProtocolAborted(RuntimeError):
    """A run stopped cleanly with no release; ``report`` holds what is known at the abort, or None."""

    def __init__(self, message: str, report: dict | None = None) -> None:
        super().__init__(message)
        self.report = report


class MessageRefused(ProtocolAborted):
    """The aggregator refused a site's message; the run stops with no release.

    ``reason`` is one of ``"duplicate"``, ``"replayed"``, ``"stale-round"``, ``"late"``,
    ``"unknown-site"``, ``"forged"`` (it names another site than the one it came from),
    ``"wrong-plan"``, ``"wrong-payload"``, ``"wrong-n"``, ``"implausible"`` (values no honest site could
    send: noisy counts that are not counts of its rows, a moment beyond what its clipped rows can give).
    """

    def __init__(self, message: str, *, site: str | None = None, reason: str | None = None) -> None:
        super().__init__(message, {"site": site, "reason": reason})
        self.site = site
        self.reason = reason


def _check_tags(site: object, plan: object, step: object, round_id: object) -> None:
    if site is not None and (not isinstance(site, str) or not _NAME.match(site)):
        raise ValueError("'site' must be a non-empty printable name of at most 128 characters.")
    if not isinstance(plan, str) or not _HEX.match(plan):
        raise ValueError("'plan' must be the plan's 64-digit hexadecimal digest.")
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)) or step < 0:
        raise ValueError(f"'step' must be an integer >= 0; got {step!r}.")
    if not isinstance(round_id, str) or not _ROUND.match(round_id):
        raise ValueError("'round_id' must be the aggregator's round id (letters, digits and '-').")


def _guarded(value: object, statistic: str, n_features: int) -> np.ndarray:
    """One payload through the guard of its declared statistic (its shape, its symmetry)."""
    return as_statistic(statistic).guard(value, n_features)


@dataclass(frozen=True, eq=False)
class NoiseShare:
    """CAPE's zero-sum share ``e_s`` for one round, dealt to one site out of band (never via the aggregator)."""

    site: str
    round: int
    statistic: str
    matrix: np.ndarray

    def __post_init__(self) -> None:
        arr = np.asarray(self.matrix)
        d = arr.shape[0] if arr.ndim else 0
        object.__setattr__(self, "matrix", _guarded(arr, self.statistic, d))


@dataclass(frozen=True, eq=False)
class Query:
    """What the aggregator asks one site for: one step of one plan.

    ``shares`` maps a round of the step to the aggregator's ``f_s`` for it (none for
    protocols without aggregator noise); ``params`` is the step's public parameter
    vector (IRLS: the previous private iterate) or None; ``bounds`` the bounds an
    ``auto`` plan's bound step chose (in the order of the plan's ``auto.names``) or None;
    ``center`` the location a private centre's location step chose (one value per column) or None;
    ``column_scale`` the private column scales read off the location steps (one per column) or None.
    """

    plan: str
    step: int
    round_id: str
    params: np.ndarray | None = None  # each given as any finite vector, kept as a read-only float array
    shares: dict = field(default_factory=dict)
    bounds: np.ndarray | None = None
    center: np.ndarray | None = None
    column_scale: np.ndarray | None = None

    def __post_init__(self) -> None:
        _check_tags(None, self.plan, self.step, self.round_id)
        for name in ("params", "bounds", "center", "column_scale"):
            value = getattr(self, name)
            if value is None:
                continue
            p = np.array(value, dtype=np.float64)
            if p.ndim != 1 or not np.all(np.isfinite(p)):
                raise ValueError(f"'{name}' must be a finite vector.")
            p.setflags(write=False)
            object.__setattr__(self, name, p)
        shares = {}
        for r, f in dict(self.shares).items():
            arr = np.array(f, dtype=np.float64)
            arr.setflags(write=False)
            shares[int(r)] = arr
        object.__setattr__(self, "shares", shares)


@dataclass(frozen=True, eq=False)
class Reply:
    """A site's answer to one step: one guarded payload per round, tagged with the plan and round it answers.

    ``values`` maps a round to ``(statistic, array)``; ``statistic`` is ``"second"``,
    ``"cross"``, ``"third"`` or ``"factor"``.
    """

    site: str
    plan: str
    step: int
    round_id: str
    n: int
    n_features: int
    values: dict

    def __post_init__(self) -> None:
        _check_tags(self.site, self.plan, self.step, self.round_id)
        if isinstance(self.n, bool) or not isinstance(self.n, (int, np.integer)) or self.n < 1:
            raise ValueError(f"'n' must be a positive integer; got {self.n!r}.")
        if not self.values:
            raise ValueError("a reply carries at least one payload.")
        out = {}
        try:
            for r, (statistic, value) in dict(self.values).items():
                out[int(r)] = (statistic, _guarded(value, statistic, int(self.n_features)))
        except EgressRefused as exc:  # name the site: the error is read at the aggregator too
            raise EgressRefused(f"site {self.site!r}: {exc}") from exc
        object.__setattr__(self, "values", out)

    def value(self, round_index: int) -> np.ndarray:
        return self.values[round_index][1]


@dataclass(frozen=True, eq=False)
class SiteError:
    """A site's refusal or failure: a code of :data:`ERRORS`, whose fixed message is all the text that leaves."""

    site: str
    plan: str
    step: int
    round_id: str
    code: str

    def __post_init__(self) -> None:
        _check_tags(self.site, self.plan, self.step, self.round_id)
        if self.code not in ERRORS:
            raise ValueError(f"'code' must be one of {sorted(ERRORS)}; got {self.code!r}.")

    @property
    def message(self) -> str:
        return ERRORS[self.code]

    def __str__(self) -> str:
        return f"site {self.site!r}: {self.code}: {self.message}"


@dataclass(frozen=True, eq=False)
class Hello:
    """Who is there: the aggregator names a plan; a site holding it answers with its name (public facts only)."""

    plan: str
    site: object = None
    step: int = 0
    round_id: str = "hello"

    def __post_init__(self) -> None:
        _check_tags(self.site, self.plan, self.step, self.round_id)


#: What travels between the aggregator and a site (a :class:`NoiseShare` is dealt out of band).
Message = Query | Reply | SiteError | Hello


# -- the wire format ------------------------------------------------------------------------------------------
_MAGIC = b"DPMS1\n"
_TAGS = ("plan", "step", "round_id")


def _pack(fields: dict, arrays: dict[str, np.ndarray]) -> bytes:
    """Magic, a 4-byte header length, a JSON header (fields, array names and shapes), the float64 bytes.

    A symmetric ``(d, d)`` matrix (a second moment, its noise share) travels as its d(d+1)/2 upper-triangle
    entries, row by row (its spec says ``"triu"``): half the bytes, the same matrix on arrival.
    """
    specs, blobs = [], []
    for name, a in arrays.items():
        a = np.ascontiguousarray(a, dtype="<f8")
        if a.ndim == 2 and a.shape[0] == a.shape[1] > 1 and np.array_equal(a, a.T):
            specs.append([name, list(a.shape), "triu"])
            blobs.append(a[np.triu_indices(a.shape[0])])
        else:
            specs.append([name, list(a.shape)])
            blobs.append(a)
    header = json.dumps({"fields": fields, "arrays": specs}, sort_keys=True, allow_nan=False).encode()
    return b"".join([_MAGIC, len(header).to_bytes(4, "big"), header] + [b.tobytes() for b in blobs])


def _read_array(data: memoryview, offset: int, shape: tuple[int, ...],
                layout: str | None) -> tuple[np.ndarray, int]:
    """One array of the wire at ``offset``: ``(array, bytes used)``; a ``"triu"`` one is mirrored back."""
    triu = layout == "triu"
    if triu and (len(shape) != 2 or shape[0] != shape[1]):
        raise ValueError("the message does not decode (bad array shape).")
    count = shape[0] * (shape[0] + 1) // 2 if triu else int(np.prod(shape, dtype=np.int64))
    if offset + 8 * count > len(data):
        raise ValueError("the message does not decode (truncated).")
    flat = np.frombuffer(data[offset:offset + 8 * count], dtype="<f8").astype(np.float64)
    if not triu:
        return flat.reshape(shape), 8 * count
    out = np.empty(shape)
    rows, cols = np.triu_indices(shape[0])
    out[rows, cols] = flat
    out[cols, rows] = flat
    return out, 8 * count


def _unpack(data: bytes | bytearray | memoryview) -> tuple[dict, dict[str, np.ndarray]]:
    data = memoryview(bytes(data))
    if bytes(data[:len(_MAGIC)]) != _MAGIC or len(data) < len(_MAGIC) + 4:
        raise ValueError("the message does not decode (not a dpmoments message).")
    size = int.from_bytes(data[len(_MAGIC):len(_MAGIC) + 4], "big")
    start = len(_MAGIC) + 4
    try:
        header = json.loads(bytes(data[start:start + size]))
        fields, specs = dict(header["fields"]), list(header["arrays"])
    except (ValueError, KeyError, TypeError):
        raise ValueError("the message does not decode (bad header).") from None
    arrays, offset = {}, start + size
    for spec in specs:
        try:
            if len(spec) not in (2, 3):
                raise ValueError(spec)
            name, dims, layout = (list(spec) + [None])[:3]
            shape = tuple(int(x) for x in dims)
        except (TypeError, ValueError):
            raise ValueError("the message does not decode (bad array shape).") from None
        if any(x < 0 for x in shape) or len(shape) > 3 or layout not in (None, "triu"):
            raise ValueError("the message does not decode (bad array shape).")
        arrays[str(name)], used = _read_array(data, offset, shape, layout)
        offset += used
    if offset != len(data):
        raise ValueError("the message does not decode (trailing bytes).")
    return fields, arrays


def to_wire(message: "Message") -> bytes:
    """The bytes of a :class:`Query`, :class:`Reply` or :class:`SiteError` (a JSON header and raw float64s)."""
    fields = {"kind": type(message).__name__, "plan": message.plan, "step": int(message.step),
              "round_id": message.round_id}
    arrays: dict[str, np.ndarray] = {}
    if isinstance(message, Query):
        if message.params is not None:
            arrays["params"] = message.params
        if message.bounds is not None:
            arrays["bounds"] = message.bounds
        if message.center is not None:
            arrays["center"] = message.center
        if message.column_scale is not None:
            arrays["column_scale"] = message.column_scale
        arrays.update({f"share:{r}": f for r, f in message.shares.items()})
    elif isinstance(message, Reply):
        fields.update(site=message.site, n=int(message.n), n_features=int(message.n_features))
        arrays.update({f"value:{r}:{s}": v for r, (s, v) in message.values.items()})
    elif isinstance(message, SiteError):
        fields.update(site=message.site, code=message.code)
    elif isinstance(message, Hello):
        if message.site is not None:
            fields["site"] = message.site
    else:
        raise TypeError(f"only Query, Reply, SiteError and Hello travel; got {type(message).__name__}.")
    return _pack(fields, arrays)


def from_wire(data: bytes | bytearray | memoryview,
              kinds: tuple[str, ...] = ("Query", "Reply", "SiteError", "Hello")) -> "Message":
    """Decode bytes made by :func:`to_wire`; raise ``ValueError`` for anything else (nothing is unpickled)."""
    fields, arrays = _unpack(data)
    kind = fields.pop("kind", None)
    if kind not in kinds:
        raise ValueError(f"expected a message of kind {list(kinds)}.")
    if any(t not in fields for t in _TAGS):
        raise ValueError("the message lacks its plan, step or round: every message names them.")
    try:
        plan, step, round_id = str(fields.pop("plan")), int(fields.pop("step")), str(fields.pop("round_id"))
        if kind == "Query":
            params, bounds, center, scale = (arrays.pop(k, None) for k in ("params", "bounds", "center", "column_scale"))
            shares = {int(k.split(":")[1]): v for k, v in arrays.items() if k.startswith("share:")}
            if len(shares) != len(arrays) or fields:
                raise ValueError("a query holds only its parameters, bounds, centre, scales and shares.")
            return Query(plan, step, round_id, params=params, shares=shares, bounds=bounds, center=center,
                         column_scale=scale)
        if kind == "Hello":
            site = fields.pop("site", None)
            if fields or arrays or round_id != "hello":
                raise ValueError("a hello holds only its plan and the site's name.")
            return Hello(plan, None if site is None else str(site))
        site = str(fields.pop("site"))
        if kind == "SiteError":
            if set(fields) != {"code"} or arrays:
                raise ValueError("a site error holds only its code.")
            return SiteError(site, plan, step, round_id, str(fields["code"]))
        n, d = int(fields.pop("n")), int(fields.pop("n_features"))
        values = {}
        for key, v in arrays.items():
            parts = key.split(":")
            if len(parts) != 3 or parts[0] != "value" or fields:
                raise ValueError("a reply holds only its statistics.")
            values[int(parts[1])] = (parts[2], v)
        return Reply(site, plan, step, round_id, n, d, values)
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, EgressRefused):
            raise
        raise ValueError("the message does not fit its kind.") from None


def describe(message: object, sender: str, receiver: str) -> dict:
    """A row for a transport spy: type, who to whom, the payload shapes (never the values)."""
    shapes = []
    if isinstance(message, Reply):
        shapes = [tuple(v.shape) for _, v in message.values.values()]
    elif isinstance(message, Query):
        shapes = [tuple(v.shape) for v in message.shares.values()]
    elif isinstance(message, NoiseShare):
        shapes = [tuple(message.matrix.shape)]
    finite = all(math.isfinite(float(np.sum(v))) for v in _arrays(message))
    return {"type": type(message).__name__, "from": sender, "to": receiver, "shapes": shapes,
            "shape": shapes[0] if shapes else (), "finite": finite}


def _arrays(message: object) -> list[np.ndarray]:
    if isinstance(message, Reply):
        return [v for _, v in message.values.values()]
    if isinstance(message, Query):
        return list(message.shares.values())
    if isinstance(message, NoiseShare):
        return [message.matrix]
    return []
