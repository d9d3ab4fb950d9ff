"""A plan as JSON and back: the fields every party's copy of ``plan.json`` holds, whose digest they check.

The canonical form is fixed: a field that a plan without the feature would lack (a bound step, a private
centre, column names, ranges, private scales) is left out rather than written as null, so that plans
without it keep the digest they had before the feature existed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any, Union

from .bounds import AutoBounds
from .column_ranges import ranges_from_json, ranges_to_json
from .location import AutoLocation
from .noise import NoisePlan
from .rounds import Round

__all__ = ["PLAN_VERSION", "plan_fields", "plan_arguments"]

PLAN_VERSION = 3  # 3: an auto bound's clipping-excess round and AutoBounds.bias

_SCALARS = ("protocol", "run_id", "n_features", "row_norm", "response_bound", "neighbours", "calibration",
            "composition", "target", "colluders", "rows", "vocabulary_size", "rank", "analysis")


def plan_fields(plan: Any) -> dict[str, Any]:
    """The JSON-ready fields of an unresolved :class:`~.plan.Plan`."""
    out = {k: getattr(plan, k) for k in _SCALARS}
    out.update(sites=list(plan.sites), n=list(plan.n), weights=list(plan.weights),
               epsilon=[_num(e) for e in plan.epsilon], delta=list(plan.delta),
               center=None if plan.center is None else list(plan.center),
               rounds=[asdict(r) for r in plan.rounds], noise=[p.to_dict() for p in plan.noise],
               solutions=list(plan.solutions), options=dict(plan.options), version=PLAN_VERSION)
    if plan.auto is not None:  # absent otherwise: a plan with public bounds keeps its digest
        out["auto"] = plan.auto.to_dict()
    if plan.location is not None:  # likewise: a plan without a private centre keeps its digest
        out["location"] = plan.location.to_dict()
    if plan.columns is not None:  # likewise: a plan that names no columns keeps its digest
        out.update(columns=list(plan.columns), response_column=plan.response_column)
    if plan.ranges is not None:  # likewise: a plan without ranges keeps its digest
        out["ranges"] = ranges_to_json(plan.ranges)
    if plan.scale is not None:  # likewise: a plan without private scales keeps its digest
        out["scale"] = plan.scale
    return out


def plan_arguments(data: Mapping[str, Any]) -> dict[str, Any]:
    """The :class:`~.plan.Plan` constructor's arguments from :func:`plan_fields`' JSON (the plan checks them)."""
    data = dict(data)
    data.pop("collusion", None)  # plan.json's reading aid (plan_json), not part of the plan
    if data.pop("version", None) != PLAN_VERSION:
        raise ValueError("not a dpmoments plan of this version.")
    data["sites"], data["n"] = tuple(str(s) for s in data["sites"]), tuple(int(v) for v in data["n"])
    data["epsilon"] = tuple(float(e) for e in data["epsilon"])
    data["delta"], data["weights"] = tuple(data["delta"]), tuple(data["weights"])
    data["center"] = None if data.get("center") is None else tuple(data["center"])
    data["rounds"] = tuple(Round(**r) for r in data["rounds"])
    data["noise"] = tuple(NoisePlan.from_dict(p) for p in data["noise"])
    data["solutions"] = tuple(data["solutions"])
    data["options"] = tuple(sorted(dict(data.get("options") or {}).items()))
    data["auto"] = None if data.get("auto") is None else AutoBounds.from_dict(data["auto"])
    data["location"] = None if data.get("location") is None else AutoLocation.from_dict(data["location"])
    data["columns"] = None if data.get("columns") is None else tuple(str(c) for c in data["columns"])
    data["ranges"] = ranges_from_json(data.get("ranges"))
    return data


def _num(x: float) -> Union[float, str]:
    return "inf" if math.isinf(x) else x
