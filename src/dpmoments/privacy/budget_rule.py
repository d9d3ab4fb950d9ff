"""How spends add up against a budget: the composition rule an :class:`~dpmoments.privacy.Accountant` applies.

The arithmetic lives in :mod:`dpmoments.privacy.composition`; this module says which of it an
accountant uses, for which budget, and when a total is within that budget:

* ``"basic"`` — sequential composition: epsilons and deltas add. Valid when
  each spend's parameters are chosen adaptively (a privacy filter for basic
  composition: Rogers, Roth, Ullman & Vadhan 2016, "Privacy odometers and filters").
* ``"zcdp"`` — rhos add (pure epsilon-DP spends count as ``epsilon^2/2``,
  Gaussian (epsilon, delta) spends by their recorded rho); (epsilon, delta)
  spends without a rho are added on top as approximate zCDP. Against an
  (epsilon, delta) budget the total rho is converted with the optimal
  conversion at the budget's delta minus what those spends used.
* ``"advanced"`` — Dwork & Roth Thm 3.20 with a declared ``delta_slack``,
  over a ``plan`` of spends declared in advance: the theorem needs each
  mechanism's parameters fixed before the first one runs, so the bound is
  computed once for the plan, must fit the budget, and every spend must match
  the next planned one (spending less is allowed; anything else is refused).

The ledger, its blocks and its locks are the accountant's (:mod:`dpmoments.privacy.accountant`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Optional, Union

from ..exceptions import BudgetExceededError
from .composition import compose, zcdp_parts
from .guarantees import ApproxDP, CertifiedGuarantee, PureDP, ZCDP

__all__ = ["COMPOSITIONS", "BudgetRule", "check_composition"]

COMPOSITIONS = ("basic", "zcdp", "advanced")

#: What advanced composition's plan declares: the spends to come, each an epsilon or (epsilon, delta) statement.
Planned = Union[PureDP, ApproxDP]
_SLACK = 1.0 + 1e-12  # the composed totals are float sums: a few ulps over the budget is still within it


@dataclass(frozen=True)
class BudgetRule:
    """A budget and the rule its spends compose by (checked by :func:`check_composition` first)."""

    budget: CertifiedGuarantee
    composition: str
    delta_slack: Optional[float] = None

    def cost(self, guarantees: Sequence[CertifiedGuarantee]) -> Optional[CertifiedGuarantee]:
        """The composed cost of guarantees, as a guarantee of the budget's kind (``None`` if nothing).

        Raises ``ValueError`` for spends this rule cannot add to this budget."""
        if not guarantees:
            return None
        if self.composition == "zcdp":
            if isinstance(self.budget, ZCDP):
                rho, xi, delta = zcdp_parts(guarantees)
                if xi or delta:
                    raise ValueError("a zCDP budget cannot absorb (epsilon, delta) spends that carry no rho.")
                return ZCDP(rho)
            # an (epsilon, delta) budget (check_composition): its own statement's delta
            return compose(guarantees, composition="zcdp", delta=self.budget.as_approx().delta)
        if self.composition == "advanced":
            if any(isinstance(g, ZCDP) for g in guarantees):
                raise ValueError("composition='advanced' composes (epsilon, delta) spends; a zCDP spend needs an "
                                 "accountant with composition='zcdp'.")
            return compose(guarantees, composition="advanced", delta_slack=self.delta_slack).as_approx()
        cost = compose(guarantees, composition="basic")
        if isinstance(self.budget, PureDP):
            if cost.as_approx().delta > 0:
                raise ValueError("a pure epsilon-DP budget cannot absorb spends with delta > 0.")
            return PureDP(cost.epsilon)
        return cost.as_approx()

    def within(self, cost: Optional[CertifiedGuarantee]) -> bool:
        """Whether a cost from :meth:`cost` fits the budget (a few ulps over it still do)."""
        b = self.budget
        if cost is None:
            return True
        if isinstance(b, ZCDP) or isinstance(cost, ZCDP):  # cost states the total in zCDP for a zCDP budget only
            return isinstance(b, ZCDP) and isinstance(cost, ZCDP) and cost.rho <= b.rho * _SLACK
        approx = cost.as_approx()
        if isinstance(b, PureDP):
            return approx.epsilon <= b.epsilon * _SLACK
        return approx.epsilon <= b.epsilon * _SLACK and approx.delta <= b.delta * _SLACK

    def checked_plan(self, plan: Iterable[Planned]) -> tuple[Planned, ...]:
        """Advanced composition's plan, refused unless its spends compose to within the budget."""
        plan = tuple(plan)
        if not plan or any(not isinstance(g, (PureDP, ApproxDP)) for g in plan):
            raise TypeError("'plan' must be a non-empty sequence of PureDP or ApproxDP guarantees.")
        total = compose(plan, composition="advanced", delta_slack=self.delta_slack)
        if not self.within(total):
            raise BudgetExceededError(f"the declared plan of {len(plan)} spends composes to {total}, more than "
                                      f"the budget {self.budget}.")
        return plan


def check_composition(budget: CertifiedGuarantee, composition: str, delta_slack: Optional[float],
                      plan: Optional[Sequence[Planned]]) -> None:
    """Refuse a composition rule that does not apply to ``budget`` (or lacks what it needs)."""
    if composition == "advanced":
        if not isinstance(budget, ApproxDP) or budget.delta == 0:
            raise ValueError("composition='advanced' needs an ApproxDP budget with delta > 0.")
        if delta_slack is None:
            raise ValueError("composition='advanced' needs 'delta_slack' (the delta' of Dwork & Roth Thm 3.20).")
        if delta_slack >= budget.delta:
            raise ValueError(f"'delta_slack' must be below the budget's delta {budget.delta}; got {delta_slack}.")
        if plan is None:
            raise ValueError("composition='advanced' needs 'plan', the spends declared in advance: Dwork & Roth "
                             "Thm 3.20 does not cover spends chosen after seeing earlier results.")
    elif plan is not None:
        raise ValueError("'plan' is only used with composition='advanced'.")
    if composition == "zcdp" and isinstance(budget, ApproxDP) and budget.delta == 0:
        raise ValueError("composition='zcdp' against an (epsilon, delta) budget needs delta > 0 to convert at.")
    if composition == "zcdp" and isinstance(budget, PureDP):
        raise ValueError("composition='zcdp' needs a ZCDP or ApproxDP budget; a pure epsilon-DP budget composes "
                         "basically.")
    if composition != "zcdp" and isinstance(budget, ZCDP):
        raise ValueError(f"a ZCDP budget composes in zCDP; got composition={composition!r}.")
