"""The public facts of a multi-site plan, checked before anything is solved: options, site names, row counts,
each site's budget and the rounds (:meth:`~dpmoments.multisite.plan.Plan.build` takes them from here).

Public facts only: nothing here sees a row.
"""

import math
import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from .._validation import check_int, check_option, check_positive
from ..privacy import CALIBRATIONS
from .protocols import PROTOCOLS, Protocol
from .rounds import Round

__all__ = ["TARGETS", "NEIGHBOURS", "ROWS", "COMPOSITIONS", "checked_facts", "site_budgets"]

TARGETS = ("aggregator", "per-site")
#: The relations a multi-site plan supports: n_s is public in these protocols.
NEIGHBOURS = ("replace-one", "zero-out")
#: What a site's rows are: its data ``x``; ``x`` with the response appended (model selection);
#: three-word documents embedded as ``(x1, x2, x3)`` in ``{0,1}^{3D}`` (the single-topic model).
ROWS = ("x", "xy", "stm")
COMPOSITIONS = ("basic", "zcdp")
_SITE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def _per_site(value: Any, S: int, name: str) -> list[Any]:
    if np.ndim(value) == 0:
        return [value] * S
    value = list(value)
    if len(value) != S:
        raise ValueError(f"'{name}' must be a scalar or one value per site ({S}); got {len(value)}.")
    return value


def site_budgets(epsilon: Any, delta: Any, n_sites: int) -> tuple[list[float], list[float], bool]:
    """Each site's epsilon and delta (``epsilon``, ``delta``: a scalar or one per site), checked, and whether the
    noise is off (``epsilon=inf`` at every site, or at none)."""
    eps = [float(check_positive(e, "epsilon", allow_inf=True)) for e in _per_site(epsilon, n_sites, "epsilon")]
    dls = [float(d) for d in _per_site(delta, n_sites, "delta")]
    off = [math.isinf(e) for e in eps]
    if any(off) and not all(off):
        raise ValueError("either every site has epsilon=inf (noise off) or none has.")
    return eps, dls, all(off)


def checked_facts(protocol: str, sites: Iterable[Any], n: Iterable[int], neighbours: str, calibration: str,
                  composition: str, target: str, rows: str, colluders: int, rounds: Iterable[Round]
                  ) -> tuple[tuple[str, ...], tuple[int, ...], Protocol, int, tuple[Round, ...]]:
    """The plan's options checked, in one line each: ``(sites, n, protocol, colluders, rounds)``."""
    check_option(protocol, "protocol", tuple(PROTOCOLS))
    if neighbours == "add-remove":
        raise ValueError("neighbours='add-remove' is not supported across sites: the protocols release each "
                         "site's row count n_s; use 'replace-one' or 'zero-out'.")
    check_option(neighbours, "neighbours", NEIGHBOURS)
    check_option(calibration, "calibration", CALIBRATIONS)
    check_option(composition, "composition", COMPOSITIONS)
    check_option(target, "target", TARGETS)
    check_option(rows, "rows", ROWS)
    names, counts = tuple(str(s) for s in sites), tuple(check_int(v, "n") for v in n)
    bad = [s for s in names if not _SITE_NAME.match(s)]
    if bad:
        raise ValueError(f"site names must be 1-64 letters, digits, '.', '_' or '-' (they name files); got {bad}.")
    proto = PROTOCOLS[protocol]
    S = len(names)
    if S < proto.min_sites or (proto.max_sites is not None and S > proto.max_sites):
        raise ValueError(f"protocol {protocol!r} takes {proto.min_sites} to {proto.max_sites or 'any'} sites; "
                         f"got {S}.")
    colluders = check_int(colluders, "colluders", minimum=0)
    if colluders > S - 1:
        raise ValueError(f"'colluders' must be in [0, {S - 1}] (other sites); got {colluders}.")
    planned = tuple(rounds)
    if not planned or not all(isinstance(r, Round) for r in planned):
        raise TypeError("'rounds' must be a non-empty sequence of Round.")
    if sum(r.share for r in planned) > 1 + 1e-12:
        raise ValueError(f"the rounds' shares sum to {sum(r.share for r in planned):.6g} > 1.")
    return names, counts, proto, colluders, planned
