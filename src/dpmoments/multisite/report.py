"""What a multi-site run guarantees, per site and over the run: the headline is the one that holds.

Every report names three guarantees, worst over the sites that took part:

* ``guarantee`` (alias ``joint_view``) -- the headline: what holds against the aggregator,
  which sees every site's message, with ``colluders`` sites helping it. A release
  carries this one.
* ``claimed`` -- the papers' per-site claim: each message alone. Shown beside the
  headline, labelled, never instead of it.
* ``output`` -- what the published aggregate alone gives (a reader of the result).
"""

import math
from dataclasses import dataclass, field
from typing import Optional

from ..exceptions import BudgetExceededError
from ..privacy import compose
from .noise import NoisePlan

__all__ = ["SiteReport", "ProtocolReport", "AnalysisReport", "spend_per_site", "GUARANTEE_IS", "CLAIM_IS",
           "collusion_dict", "collusion_line"]

GUARANTEE_IS = "against the aggregator, which sees every site's message (the guarantee that holds)"
CLAIM_IS = "per site, each message alone (the papers' claim; weaker than it reads: the aggregator sees all)"


def _dict(g):
    return None if g is None else g.to_dict()


def collusion_dict(collusion):
    """:attr:`~.plan.Plan.collusion` as JSON: the assumption and what holds without it and at its worst."""
    if collusion is None:
        return None
    others, worst = collusion["all_other_sites"]
    return {"assumed_colluders": collusion["assumed"], "against_aggregator_alone": collusion["aggregator_alone"].to_dict(),
            "against_aggregator_and_all_other_sites": worst.to_dict(), "other_sites": others,
            "note": f"the noise was calibrated assuming {collusion['assumed']} site(s) collude with the aggregator; "
                    "a site that hands its shares and rows to the aggregator weakens every other site's guarantee"}


def collusion_line(collusion):
    """One line: the colluders the plan assumed, the guarantee against the aggregator alone and with all others."""
    others, worst = collusion["all_other_sites"]
    return (f"assumed {collusion['assumed']} colluding site(s); worst site against the aggregator alone: "
            f"{collusion['aggregator_alone']}; if all {others} other site(s) collude with it: {worst}")


@dataclass(frozen=True)
class SiteReport:
    """One site's part of a round: its noise levels and its three guarantees."""

    site: str
    n: int
    status: str
    weight: float
    tau: float = 0.0
    tau_e: float = 0.0
    tau_g: float = 0.0
    tau_f: float = 0.0
    sensitivity: float = 0.0
    claimed: object = None
    joint_view: object = None
    joint_delta_m: float = math.nan
    joint_colluders: tuple = ()
    output: object = None

    def to_dict(self):
        out = {k: getattr(self, k) for k in ("site", "n", "status", "weight", "tau", "tau_e", "tau_g", "tau_f",
                                             "sensitivity", "joint_delta_m")}
        out["joint_colluders"] = list(self.joint_colluders)
        out.update({k: _dict(getattr(self, k)) for k in ("claimed", "joint_view", "output")})
        return out


@dataclass(frozen=True)
class ProtocolReport:
    """One release across sites: what it claims and what holds.

    Attributes
    ----------
    protocol, statistic : str
    colluders : int
    sites : tuple of SiteReport
    claimed, joint_view, output : guarantee
        Worst over the participating sites (see the module docstring); ``guarantee`` is
        ``joint_view``.
    aggregate_std, target_std, extra_std : float
        The aggregate's per-coordinate noise std; what the protocol promises (pooled for
        CAPE); the noise beyond it (a dropout after the deal; the top-up).
    dropped : tuple of (str, str)
    target : {"aggregator", "per-site"}
        What the noise was calibrated to meet.
    neighbours : {"replace-one", "zero-out"}
        The relation every guarantee here is stated under.
    plan : NoisePlan
    transcript : tuple of dict
        What crossed (type, sender, receiver, shapes; never values).
    """

    protocol: str
    statistic: str
    colluders: int
    sites: tuple
    claimed: object
    joint_view: object
    output: object
    aggregate_std: float
    target_std: float
    extra_std: float = 0.0
    dropped: tuple = ()
    trust: str = ""
    notes: tuple = ()
    constraints: Optional[dict] = None
    target: str = "aggregator"
    plan: Optional[NoisePlan] = field(default=None, repr=False, compare=False)
    transcript: tuple = field(default=(), repr=False, compare=False)
    neighbours: str = "replace-one"
    collusion: Optional[dict] = field(default=None, repr=False, compare=False)  # the plan's (Plan.collusion)

    @property
    def guarantee(self):
        return self.joint_view

    def site(self, name):
        for r in self.sites:
            if r.site == name:
                return r
        raise KeyError(name)

    def to_dict(self):
        return {
            "protocol": self.protocol, "statistic": self.statistic, "colluders": self.colluders,
            "target": self.target, "neighbours": self.neighbours, "guarantee": _dict(self.joint_view),
            "guarantee_is": GUARANTEE_IS,
            "claimed": _dict(self.claimed), "claimed_is": CLAIM_IS, "joint_view": _dict(self.joint_view),
            "output": _dict(self.output), "aggregate_std": self.aggregate_std, "target_std": self.target_std,
            "extra_std": self.extra_std, "dropped": [list(d) for d in self.dropped], "trust": self.trust,
            "notes": list(self.notes), "constraints": self.constraints, "sites": [r.to_dict() for r in self.sites],
            "collusion": collusion_dict(self.collusion),
        }


@dataclass(frozen=True, eq=False)
class AnalysisReport:
    """Several releases across sites (a tensor decomposition, IRLS), composed.

    ``guarantee`` composes the parts' joint views, ``claimed`` their per-site claims and
    ``output`` their outputs, by ``composition`` (each part is already the worst site's,
    so composing the worst parts bounds every site; tight for equal sites). An ``auto``
    plan's bound step is a part (``"bound row_norm"``, its sites' own-noise guarantees), and
    ``choices`` (:class:`~dpmoments.moments.release.Part`) lists each share, its guarantee
    and what it released (the chosen bound), for the report's private choices.
    """

    protocol: str
    analysis: str
    colluders: int
    target: str
    composition: str
    parts: dict
    budget: dict
    notes: tuple = ()
    delta: Optional[float] = None
    choices: tuple = ()
    collusion: Optional[dict] = None  # the plan's (Plan.collusion)

    @property
    def neighbours(self):
        return next(iter(self.parts.values())).neighbours

    def _compose(self, which):
        # zCDP parts are stated at the budget's delta (self.delta is set for composition="zcdp" only)
        return compose([getattr(r, which) for r in self.parts.values()], composition=self.composition,
                       delta=self.delta)

    @property
    def guarantee(self):
        return self._compose("joint_view")

    joint_view = guarantee

    @property
    def claimed(self):
        return self._compose("claimed")

    @property
    def output(self):
        return self._compose("output")

    @property
    def dropped(self):
        return tuple(dict.fromkeys(d for r in self.parts.values() for d in r.dropped))

    def to_dict(self):
        return {"protocol": self.protocol, "analysis": self.analysis, "colluders": self.colluders,
                "target": self.target, "neighbours": self.neighbours, "composition": self.composition,
                "guarantee": _dict(self.guarantee),
                "guarantee_is": GUARANTEE_IS, "claimed": _dict(self.claimed), "claimed_is": CLAIM_IS,
                "joint_view": _dict(self.guarantee), "output": _dict(self.output), "budget": dict(self.budget),
                "dropped": [list(d) for d in self.dropped], "notes": list(self.notes),
                "parts": {k: r.to_dict() for k, r in self.parts.items()}, "collusion": collusion_dict(self.collusion),
                "private_choices": [p.to_dict() | {"guarantee_text": str(p.guarantee)} for p in self.choices]}


_WHICH = {"joint-view": "joint_view", "claimed": "claimed", "output": "output"}


def _site_parts(report, which):
    parts = report.parts.values() if isinstance(report, AnalysisReport) else [report]
    per_site = {}
    for part in parts:
        for r in part.sites:
            if r.status == "ok":
                per_site.setdefault(r.site, []).append(getattr(r, _WHICH[which]))
    composition = getattr(report, "composition", "basic")
    # zCDP parts are stated at the budget's delta, as the report's own guarantee (AnalysisReport._compose): an
    # (epsilon, delta) accountant cannot take a bare rho
    delta = getattr(report, "delta", None)
    return {s: compose(gs, composition=composition, delta=delta) for s, gs in per_site.items()}


def spend_per_site(accountant, report, *, which="joint-view", label=None):
    """Charge each participating site's guarantee to its own block of ``accountant`` (parallel composition).

    Sites hold disjoint rows, so the total is the worst site's. The sites are the blocks of
    the accountant's one partitioning: declared here as ``"sites"`` (every site of the run,
    dropped ones included) if the accountant has none yet; a partitioning declared before
    must name them all. All or nothing (:meth:`~dpmoments.privacy.Accountant.spend_blocks`):
    if any site's spend does not fit, nothing is spent. Each spend records the run's
    neighbouring relation. ``which="joint-view"`` (the default) is the guarantee that holds
    against the aggregator; ``"claimed"`` the papers' per-site claim; ``"output"`` the
    published aggregate's.
    """
    if which not in _WHICH:
        raise ValueError(f"'which' must be one of {sorted(_WHICH)}; got {which!r}.")
    if accountant.partitions is None:
        accountant.partitioning("sites", _all_sites(report))
    label = label or f"{report.protocol}:{getattr(report, 'statistic', getattr(report, 'analysis', ''))}"
    try:
        accountant.spend_blocks(_site_parts(report, which), label=label, neighbours=report.neighbours)
    except BudgetExceededError as exc:
        raise BudgetExceededError(f"spending each site's {which} guarantee: {exc}") from None
    return accountant


def _all_sites(report):
    parts = report.parts.values() if isinstance(report, AnalysisReport) else [report]
    return list(dict.fromkeys(r.site for part in parts for r in part.sites))
