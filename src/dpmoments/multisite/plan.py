r"""The plan of a multi-site run: public facts in, the solved noise of every round out, built once and shipped.

A :class:`Plan` holds only public facts (site names, row counts :math:`N_s`, ``d``, the
public bounds, each site's budget, the protocol, the rounds) and the noise plan of every
round, solved once by :meth:`Plan.build`. Whoever deals the shares builds it (the API in
process; ``dpmoments noise-generator`` for a deployment); the sites and the aggregator
load the same plan and check its :attr:`~Plan.digest`, never re-solving it. Every
build draws a fresh ``run_id``, so two plans for the same facts are two plans: a site
answers each step of each plan once.

**Rounds and budget.** A plan releases one statistic per :class:`Round`; rounds of one
``step`` are asked in one query (a multi-release analysis asks all its rounds in one
step; IRLS asks its ``A`` and ``B`` together in each of its ``J`` steps). Each round gets
a ``share`` of every site's ``(epsilon_s, delta_s)``: with ``composition="basic"`` the
round is calibrated to ``(share epsilon, share delta)``; with ``"zcdp"`` to
``share rho`` where ``rho`` is the largest zCDP parameter whose conversion meets
``(epsilon, delta)``. Either way the rounds compose to at most the budget.

**Choosing steps.** With ``center="private"`` the plan starts with location steps
(:mod:`~dpmoments.multisite.location`) and adds a mean round beside the second moment; with
``row_norm="auto"`` (or ``response_bound="auto"``) a bound step follows
(:mod:`~dpmoments.multisite.bounds`). Their noisy counts carry each site's own noise; what
they choose travels in every later query, and :meth:`Plan.resolved` gives the plan at it.
:mod:`~dpmoments.multisite.rounds` lays the rounds out, decides whether the rows bear the
choosing steps' noise (naming, when they do not, the epsilon and share at which they would)
and solves each round's noise; this module holds the plan every party ships and checks.

**Target** (whom the guarantee holds against). ``target="aggregator"`` (the default)
calibrates the noise so that the *joint view* of the aggregator (every message, with ``colluders`` sites
helping it) meets each site's budget: every noise plan is linear in the per-site stds, so each round's plan
is multiplied by :math:`k = \max_s \Delta_{M,s}/\rho^\ast_s \ge 1`, the largest ratio of a site's
Mahalanobis sensitivity (:mod:`dpmoments.multisite.noise`) to the sensitivity/std ratio its budget allows.
``target="per-site"`` calibrates each message alone to the budget, as the papers do
(for reproductions; the joint view is then weaker than the budget, and reported).

**Columns.** A plan may name the columns every site gives, in order (``columns``, ``response_column``),
and their public ``ranges``: schema, not data. A deployed site selects its columns by name, so a file whose
columns are in another order, or lack one, cannot join mixed up; without names a site checks their number.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Optional, Union

import numpy as np

from .._validation import check_int, check_option, check_positive
from ..exceptions import NotPrivateWarning
from ..moments import BoundBudget, CenterBudget
from ..moments.ranges import ColumnRanges
from ..privacy import compose, parallel
from ..privacy.guarantees import AnyGuarantee
from .bounds import AutoBounds, auto_bounds
from .column_ranges import (PlanRanges, check_plan_ranges, grids_within_ranges, plan_ranges, plan_scale,
                            ranged_columns)
from .columns import checked_columns, takes_response
from .location import AutoLocation, private_location
from .noise import NoisePlan, guarantee_from_ratio, joint_view
from .plan_codec import PLAN_VERSION, plan_arguments, plan_fields  # PLAN_VERSION: its old import path
from .plan_facts import COMPOSITIONS, NEIGHBOURS, ROWS, TARGETS, checked_facts, site_budgets
from .protocols import PROTOCOLS
from .rounds import (Round, check_choice_layout, check_choice_steps, most_location_steps, refused_choice_steps,
                     round_noise, round_targets, plan_composition, sensitivity, takes_excess, weights_at,
                     with_choice_steps)
from .statistics import EXCESS
from .unequal import check_weights

__all__ = ["Round", "Plan", "TARGETS", "NEIGHBOURS", "ROWS", "COMPOSITIONS"]

#: A public bound, or ``"auto"`` (chosen across sites); a per-site fact, or one value for every site; a range.
BoundArg = Union[float, str]
PerSite = Union[float, Sequence[float]]
Range = Optional[tuple[float, float]]


@dataclass(frozen=True, eq=False)
class Plan:
    """The public plan of one multi-site run (see the module docstring). Build it with :meth:`build`."""

    protocol: str
    run_id: str
    sites: tuple[str, ...]
    n: tuple[int, ...]
    n_features: int
    row_norm: float
    epsilon: tuple[float, ...]
    delta: tuple[float, ...]
    rounds: tuple[Round, ...]
    weights: tuple[float, ...]
    noise: tuple[NoisePlan, ...]
    solutions: tuple[Optional[dict[str, Any]], ...]
    response_bound: Optional[float] = None
    center: Optional[tuple[float, ...]] = None
    neighbours: str = "replace-one"
    calibration: str = "analytic"
    composition: str = "basic"
    target: str = "aggregator"
    colluders: int = 0
    rows: str = "x"
    vocabulary_size: Optional[int] = None
    rank: Optional[int] = None
    analysis: str = "moments"
    options: tuple[tuple[str, Any], ...] = ()
    auto: Optional[AutoBounds] = None
    location: Optional[AutoLocation] = None
    columns: Optional[tuple[str, ...]] = None
    response_column: Optional[str] = None
    ranges: Optional[PlanRanges] = None
    scale: Optional[str] = None  # "private": column scales from the location steps' histograms (column_ranges)
    column_scale: Optional[tuple[float, ...]] = None  # a resolved plan's chosen scales
    unresolved: Optional[Plan] = field(default=None, repr=False)
    bounds_chosen: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if len(set(self.sites)) != len(self.sites) or len(self.n) != len(self.sites):
            raise ValueError("a plan needs distinct site names and one row count per site.")
        if len(self.noise) != len(self.rounds) or any(p.sites != self.sites for p in self.noise):
            raise ValueError("a plan needs one noise plan per round, over its sites.")
        check_option(self.protocol, "protocol", tuple(PROTOCOLS))
        check_choice_layout(self.rounds, () if self.auto is None else self.auto.names, self.bound_step,
                            self.location_steps)
        checked_columns(self.columns, self.response_column, rows=self.rows, analysis=self.analysis,
                         n_features=self.n_features - self.intercept_columns)
        check_plan_ranges(self)
        if plan_scale(self.scale, None, self.location) != self.scale:
            raise ValueError("a plan's 'scale' is None or 'private' (with a private centre).")

    # -- identity -----------------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        if self.unresolved is not None:  # a resolved plan is the plan it was resolved from (same shares, ledger)
            return self.unresolved.to_dict()
        return plan_fields(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Plan:
        return cls(**plan_arguments(data))

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> Plan:
        return cls.from_dict(json.loads(text))

    @cached_property
    def digest(self) -> str:
        """SHA-256 of the canonical JSON: every party checks it holds the same plan."""
        if self.unresolved is not None:
            return self.unresolved.digest
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    # -- structure ----------------------------------------------------------------------------------------
    def option(self, name: str, default: Any = None) -> Any:
        """A public option of the plan's analysis (e.g. MOG's ``sigma2``)."""
        return dict(self.options).get(name, default)

    @property
    def takes_response(self) -> bool:
        """Whether a site gives a response column beside its features (model selection, IRLS)."""
        return takes_response(self.rows, self.analysis)

    @property
    def feature_width(self) -> int:
        """How many feature columns a site gives (its rows' width, less an appended response or constant)."""
        return self.n_features - (self.rows == "xy") - self.intercept_columns

    @property
    def intercept_columns(self) -> int:
        """1 when the sites append IRLS's constant column (the ``intercept`` option), else 0."""
        return int(self.option("intercept") is not None)

    @property
    def n_sites(self) -> int:
        return len(self.sites)

    def index(self, site: str) -> int:
        return self.sites.index(site)

    @property
    def steps(self) -> list[int]:
        return sorted({r.step for r in self.rounds})

    def rounds_of(self, step: int) -> list[int]:
        """Indices of the rounds asked in ``step``."""
        return [i for i, r in enumerate(self.rounds) if r.step == step]

    @property
    def masking(self) -> str:
        return PROTOCOLS[self.protocol].masking

    @property
    def location_steps(self) -> tuple[int, ...]:
        """The steps that release the noisy per-coordinate counts of a private centre (none without one): the first."""
        if self.location is None:
            return ()
        if self.location.steps is None:  # build fixes them (_with_choices); a plan file without them is no plan
            raise ValueError("a plan with a private centre fixes its number of location steps.")
        return tuple(range(self.location.steps))

    @property
    def bound_step(self) -> Optional[int]:
        """The step that releases the noisy histograms of an ``auto`` plan (``None`` without one): after the location."""
        return None if self.auto is None else len(self.location_steps)

    @property
    def release_rounds(self) -> list[int]:
        """Indices of the rounds that release a moment (every round but the choosing steps' noisy counts)."""
        return [i for i, r in enumerate(self.rounds) if not r.stat.counts]

    @property
    def excess_round(self) -> Optional[int]:
        """The round of what clipping at an auto row bound removed from each variance, or ``None``."""
        return next((i for i, r in enumerate(self.rounds) if r.stat is EXCESS), None)

    @property
    def mean_round(self) -> Optional[int]:
        """A private centre's mean round (the first moment of the rows centred at the location), or ``None``."""
        return None if self.location is None else len(self.rounds) - 1

    @property
    def chosen(self) -> Optional[tuple[Optional[float], ...]]:
        """A resolved plan's chosen bounds, in the order of ``auto.names`` (what its queries carry)."""
        if self.auto is None or not self.bounds_chosen:
            return None
        return tuple(getattr(self, name) for name in self.auto.names)

    @property
    def chosen_center(self) -> Optional[tuple[float, ...]]:
        """A private centre's location so far (what every query after the first location step carries), or ``None``."""
        return None if self.location is None or self.unresolved is None else self.center

    @property
    def chosen_scale(self) -> Optional[tuple[float, ...]]:
        """A resolved plan's private column scales (what every query after the location steps carries), or ``None``."""
        return None if self.scale is None or self.unresolved is None else self.column_scale

    def resolved(self, bounds: Optional[Mapping[str, float]] = None, center: Optional[Sequence[float]] = None,
                 column_scale: Optional[Sequence[float]] = None) -> Plan:
        """This plan with what its choosing steps chose: ``center`` (the location so far), ``column_scale`` (the
        private scales, ``scale="private"``) and ``bounds``
        (each of ``auto.names`` mapped to a grid edge). Always resolved from the plan as built (a
        resolved plan's :attr:`unresolved`), so the location alone may come first. How far each
        location step may move the centre is the site's check (:meth:`~.site.Site.handle`).

        The centre changes no noise: every sensitivity holds about any public centre.

        The moment rounds were planned at unit bounds; every noise plan is linear in the
        sensitivity, which is homogeneous in the bounds, so each round's stds and sensitivity
        are multiplied by one factor (:meth:`noise_factor`) and every ratio, hence every
        guarantee, is unchanged. The dealt shares were drawn at unit bounds too: a site
        multiplies them by the same factor. The resolved plan keeps this plan's digest.
        """
        base = self if self.unresolved is None else self.unresolved
        if (bounds is None and center is None and column_scale is None) or (bounds is not None and base.auto is None) \
                or (center is not None and base.location is None) or (column_scale is not None and base.scale is None):
            raise ValueError("a plan is resolved only at what its own choosing steps choose (bounds, a centre, scales).")
        changes: dict[str, Any] = {} if column_scale is None else {"column_scale": base._scales(column_scale)}
        if center is not None:
            point = np.asarray(center, dtype=np.float64)
            if point.shape != (base.n_features,) or not np.all(np.isfinite(point)):
                raise ValueError("the chosen centre must be a finite vector of one value per column.")
            changes["center"] = tuple(float(c) for c in point)
        if bounds is not None:
            changes.update(base._at_bounds(bounds), bounds_chosen=True)
        return replace(base, unresolved=base, **changes)

    def _scales(self, column_scale: Sequence[float]) -> tuple[float, ...]:
        s = np.asarray(column_scale, dtype=np.float64)
        if s.shape != (self.n_features,) or not np.all(np.isfinite(s)) or not np.all(s > 0):
            raise ValueError("the chosen column scales must be finite and positive, one per column.")
        return tuple(float(v) for v in s)

    def _at_bounds(self, bounds: Mapping[str, float]) -> dict[str, Any]:
        """The fields that change at the chosen ``bounds``: the bounds, each round's noise, the solutions."""
        assert self.auto is not None, "resolved() refuses bounds for a plan without a bound step"
        values = {}
        for name in self.auto.names:
            edge = self.auto.edge(bounds.get(name))
            if edge is None:
                raise ValueError(f"the chosen {name} is not an edge of the plan's public grid.")
            values[name] = edge
        facts = dict(row_norm=values.get("row_norm", self.row_norm),
                     response_bound=values.get("response_bound", self.response_bound))
        rounds = weights_at(self.rounds, self.option("w_max_per_bound"), facts["response_bound"])
        noise = []
        for rnd, at, p in zip(self.rounds, rounds, self.noise):
            k = 1.0 if rnd.stat.counts else \
                self._sens(at, values.get("row_norm", self.row_norm), facts["response_bound"]) / \
                self._sens(rnd, self.row_norm, self.response_bound)
            noise.append(p.rescaled(k))
        solutions = tuple(s if s is None or "tau_pool" not in s else dict(s, tau_pool=s["tau_pool"] * f)
                          for s, f in zip(self.solutions, [q.sensitivity[0] / p.sensitivity[0]
                                                           for p, q in zip(self.noise, noise)]))
        return dict(noise=tuple(noise), solutions=solutions, rounds=rounds, **facts)

    def _sens(self, rnd: Round, row_norm: float, response_bound: Optional[float]) -> float:
        return sensitivity(rnd, self.n[0], n_features=self.n_features, row_norm=row_norm,
                            response_bound=response_bound, neighbours=self.neighbours)

    def noise_factor(self, round_index: int) -> float:
        """How much a resolved plan's round ``round_index`` noise exceeds the unit plan's (1 when unresolved)."""
        if self.unresolved is None:
            return 1.0
        return float(self.noise[round_index].sensitivity[0] / self.unresolved.noise[round_index].sensitivity[0])

    def claimed(self, round_index: int, site: str) -> AnyGuarantee:
        """The paper's per-site claim for one round: the site's message alone, at its own std."""
        p, s = self.noise[round_index], self.index(site)
        if p.tau[s] == 0:
            return guarantee_from_ratio(math.inf, 0.5)
        target = round_targets(self.epsilon[s], self.delta[s], self.rounds, self.composition, self.calibration)
        ratio, dl, claim = target[round_index]
        if self.target == "per-site":
            return claim
        return guarantee_from_ratio(p.sensitivity[s] / p.tau[s], dl, self._round_calibration)

    @property
    def _round_calibration(self) -> str:
        return "zcdp" if self.composition == "zcdp" or self.calibration == "zcdp" else "analytic"

    def cost(self, site: str, colluders: Optional[int] = None) -> AnyGuarantee:
        """What answering every round of this plan costs ``site`` against the aggregator (its ledger's charge).

        ``colluders``: other sites assumed to help the aggregator (default the plan's own).
        """
        c = self.colluders if colluders is None else check_int(colluders, "colluders", minimum=0)
        parts = [joint_view(p, site, min(c, self.n_sites - 1), calibration=self._round_calibration).guarantee
                 for p in self.noise]
        delta = self.delta[self.index(site)] if self.composition == "zcdp" else None  # zCDP stated at the budget's
        return compose(parts, composition=self.composition, delta=delta)

    @cached_property
    def collusion(self) -> dict[str, Any]:
        """What the plan guarantees (worst site) against the aggregator alone and with every other site colluding.

        ``{"assumed": colluders the noise was calibrated for, "aggregator_alone": guarantee,
        "all_other_sites": (count, guarantee)}``: a deal assumes no colluders unless told, and the
        operator sees what that assumption is worth.
        """
        def worst(c: int) -> AnyGuarantee:
            return parallel([self.cost(s, colluders=c) for s in self.sites])

        return {"assumed": self.colluders, "aggregator_alone": worst(0),
                "all_other_sites": (self.n_sites - 1, worst(self.n_sites - 1))}

    # -- building -----------------------------------------------------------------------------------------
    @classmethod
    def build(cls, protocol: str, sites: Iterable[str], n: Iterable[int], *, n_features: int, row_norm: BoundArg,
              epsilon: PerSite, delta: PerSite, rounds: Iterable[Round] = (Round("second"),),
              response_bound: Optional[BoundArg] = None, center: Union[None, str, Sequence[float]] = None,
              neighbours: str = "replace-one", calibration: str = "analytic", composition: str = "basic",
              target: str = "aggregator", colluders: int = 0, weights: Optional[Sequence[float]] = None,
              rows: str = "x", vocabulary_size: Optional[int] = None, rank: Optional[int] = None,
              analysis: str = "moments", options: Optional[Mapping[str, Any]] = None, run_id: Optional[str] = None,
              bound_budget: Union[None, float, BoundBudget, AutoBounds] = None,
              center_budget: Union[None, float, CenterBudget, AutoLocation] = None,
              columns: Optional[Sequence[str]] = None, response_column: Optional[str] = None,
              ranges: Union[None, Mapping[Union[str, int], Range], Sequence[Range], ColumnRanges] = None,
              scale: Optional[str] = None) -> Plan:
        """Plan ``rounds`` of ``protocol`` over the named ``sites`` with row counts ``n`` (public facts only).

        ``epsilon`` and ``delta`` are each site's budget (a scalar, or one per site); the other
        arguments are described in the module docstring and in :class:`Round`. ``row_norm``
        and ``response_bound`` may be ``"auto"``: the plan then starts with a bound step
        (:mod:`~dpmoments.multisite.bounds`) paid from ``bound_budget`` (a share, default 0.1, a ``BoundBudget``
        or an :class:`~dpmoments.multisite.bounds.AutoBounds`) and its other rounds share the rest.
        ``center="private"`` (second-moment rounds of the rows ``x`` only) starts the plan with a
        location steps (:mod:`~dpmoments.multisite.location`) and adds a mean round, paid from
        ``center_budget`` (the mean's share, default 0.2; a ``CenterBudget``, whose ``location``
        is the location steps' share; or an
        :class:`~dpmoments.multisite.location.AutoLocation`). Unless it fixes ``steps``, the plan
        takes as many location steps as the rows allow, up to four (public facts only).
        ``columns`` (and ``response_column``) name the columns every site gives (see the module
        docstring); ``None``: the sites check only their number. ``ranges``: public per-column ranges
        (:mod:`~dpmoments.multisite.column_ranges`: a mapping keyed by a name of ``columns`` or a position,
        or one ``(lower, upper)`` or ``None`` per column) that every site applies to its rows; ``scale``:
        ``"private"`` for private column scales from the location steps' histograms (with ranges and a private
        centre, the default: :func:`~dpmoments.multisite.column_ranges.plan_scale`).
        """
        asked, composition = composition, plan_composition(composition, row_norm, response_bound, center)
        sites, n, proto, colluders, rounds = checked_facts(protocol, sites, n, neighbours, calibration, composition,
                                                            target, rows, colluders, rounds)
        names = checked_columns(columns, response_column, rows=rows, analysis=analysis,
                                n_features=n_features - ("intercept" in dict(options or {})))
        eps, dls, off = site_budgets(epsilon, delta, len(sites))
        auto = auto_bounds(row_norm, response_bound, bound_budget, off=off, rows=rows)
        location = private_location(center, center_budget, off=off, rows=rows, rank=rank, rounds=rounds)
        center = None if location is not None else center
        public_ranges = plan_ranges(ranges, int(n_features) - (rows == "xy") - ("intercept" in dict(options or {})),
                                    names[0])
        scale = plan_scale(scale, public_ranges, location)
        auto, location = grids_within_ranges(public_ranges, auto, location, center, scale)
        if off:
            warnings.warn("epsilon=inf: the exact statistic is released, with no privacy.", NotPrivateWarning,
                          stacklevel=2)
        mu = np.array(n, float) / sum(n) if weights is None else check_weights(weights, len(sites))
        solve = dict(n_features=int(n_features), composition=composition, calibration=calibration,
                     exact=target == "aggregator")
        rounds, location, auto, scale, row_norm = _choices_that_run(rounds, auto, location, scale, row_norm,
                                                                    public_ranges, rows, rank, sum(n), eps, dls, solve)
        if auto is None and location is None:  # the ranges alone left nothing chosen privately: composed as such
            composition = solve["composition"] = plan_composition(asked, row_norm, response_bound, center)
        row_norm, response_bound = _planned_bounds(auto, row_norm, response_bound)
        norm = float(check_positive(row_norm, "row_norm"))
        bound = None if response_bound is None else float(response_bound)
        facts = dict(n_features=int(n_features), row_norm=norm, response_bound=bound, neighbours=neighbours)
        noise, solutions = zip(*(round_noise(k, rounds, sites, n, mu, eps, dls, facts, proto.masking, colluders, solve)
                                 for k in range(len(rounds))))
        return cls(protocol, run_id or uuid.uuid4().hex, sites, n, int(n_features), norm, tuple(eps),
                   tuple(dls), rounds, tuple(float(w) for w in mu), tuple(noise), tuple(solutions),
                   bound, None if center is None else tuple(float(c) for c in center), neighbours,
                   calibration, composition, target, colluders, rows, vocabulary_size, rank, analysis,
                   tuple(sorted(dict(options or {}).items())), auto, location, columns=names[0],
                   response_column=names[1], ranges=public_ranges, scale=scale)


#: What a refusal of the choosing steps adds where every column's range would let the plan run (_choices_that_run)
RANGES_ACROSS_SITES = ", or every column's range (ranges=), with which the sites draw nothing that needs these rows"


def _choices_that_run(base: tuple[Round, ...], auto: Optional[AutoBounds], location: Optional[AutoLocation],
                      scale: Optional[str], row_norm: BoundArg, ranges: Optional[PlanRanges], rows: str,
                      rank: Optional[int], n_total: int, eps: list[float], dls: list[float], solve: dict[str, Any]
                      ) -> tuple[tuple[Round, ...], Optional[AutoLocation], Optional[AutoBounds], Optional[str],
                                 BoundArg]:
    """The rounds with their choosing steps, and the choices they leave: ``(rounds, location, auto, scale, row_norm)``.

    Where the rows cannot bear the choosing steps' noisy counts (:func:`check_choice_steps`, public facts only) and
    every column has a range, the plan takes the ranges alone, as one machine does (``ranged_release.py``): the
    sites' mapped rows lie in the box ``[-1, 1]^d``, so the centre starts at the midpoints with no location step
    (the private mean round moves it), the scales are the half-widths, and a bound chosen across sites becomes the
    box's, ``sqrt(d)`` about the midpoints (no row exceeds it: nothing is clipped, no clipping excess is released).
    Otherwise the refusal stands and, where the ranges would run the plan, names them.
    """
    rounds, located = _with_choices(base, auto, location, n_total, eps, dls, solve,
                                    takes_excess(auto, rows, rank, base))
    second = rows == "x" and rank is None and all(r.statistic == "second" and r.w_max is None for r in base)
    if second and ranges is not None and ranged_columns(ranges).all() and \
            refused_choice_steps(rounds, auto, located, n_total, eps, dls, **solve):
        location = None if location is None else replace(location, steps=0)
        rounds, located = _with_choices(base, None, location, n_total, eps, dls, solve)
        box = auto is not None and "row_norm" in auto.names
        return rounds, located, None, None, math.sqrt(len(ranges)) if box else row_norm
    try:
        check_choice_steps(rounds, auto, located, n_total, eps, dls, **solve)
    except ValueError as err:
        if not second:
            raise
        raise type(err)(str(err).rstrip(".") + RANGES_ACROSS_SITES + ".") from None  # its kind kept
    return rounds, located, auto, scale, row_norm


def _with_choices(rounds: tuple[Round, ...], auto: Optional[AutoBounds], location: Optional[AutoLocation], n_total: int,
                  eps: list[float], dls: list[float], solve: dict[str, Any], excess: bool = False
                  ) -> tuple[tuple[Round, ...], Optional[AutoLocation]]:
    """The rounds with the choosing steps (bounds, location) in front (and, ``excess``, the clipping excess beside
    the moments), and the location, whose steps, where it does not fix them, are as many as the rows can bear
    (public facts only)."""
    if location is not None and location.steps is None:
        location = replace(location, steps=most_location_steps(location, n_total, eps, dls, **solve))
    if auto is not None or location is not None:
        rounds = with_choice_steps(rounds, auto, location, excess)
    return rounds, location


def _planned_bounds(auto: Optional[AutoBounds], row_norm: BoundArg, response_bound: Optional[BoundArg]
                    ) -> tuple[BoundArg, Optional[BoundArg]]:
    """The bounds the moment rounds are planned at: 1 for each bound chosen across sites (the plan is rescaled
    to the chosen bound, :meth:`Plan.resolved`), else the public one."""
    if auto is None:
        return row_norm, response_bound
    return (1.0 if "row_norm" in auto.names else row_norm,
            1.0 if "response_bound" in auto.names else response_bound)


def plan_with(plan: Plan, **changes: Any) -> Plan:
    """A copy of ``plan`` with fields changed (tests); the digest follows the content."""
    return replace(plan, **changes)
