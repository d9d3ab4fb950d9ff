"""The accountant: a budget, a ledger of spends, and check-then-commit.

Composition rules (each a small pure function over the ledger):

* ``"basic"`` — sequential composition: epsilons and deltas add.
* ``"zcdp"`` — zCDP composition: rhos add (pure epsilon-DP spends count as
  ``epsilon^2/2``, Gaussian (epsilon, delta) spends by their recorded rho);
  (epsilon, delta) spends without a rho are added on top. Against an
  (epsilon, delta) budget the total rho is converted with the optimal
  conversion at the budget's remaining delta.
* ``"advanced"`` — the better of basic and advanced composition (Dwork & Roth
  Thm 3.20) with a declared ``delta_slack``; the Park–Welling baseline.

Parallel composition: a spend made on a ``partition`` (a site, a disjoint
subset fixed independently of the data) costs a record only if it lives in
that partition. The total is the worst partition's composition of its own
spends together with all whole-data spends.

There is no global default accountant: estimators take one explicitly.
"""

import math
from dataclasses import dataclass
from typing import Optional

from .._validation import check_delta, check_option
from ..exceptions import BudgetExceededError, UncertifiedSpendError
from .conversions import advanced_composition, zcdp_to_approx_dp
from .guarantees import ApproxDP, PureDP, Uncertified, ZCDP

__all__ = ["Accountant", "Spend", "COMPOSITIONS", "check_accountant"]

COMPOSITIONS = ("basic", "zcdp", "advanced")
_WHOLE = None


@dataclass(frozen=True)
class Spend:
    """One ledger entry: what was spent, on which partition, and why."""

    guarantee: object
    label: Optional[str] = None
    partition: Optional[str] = None

    @property
    def effective(self):
        # An allowed uncertified spend is counted at its claim (the paper's view).
        g = self.guarantee
        return g.claimed if isinstance(g, Uncertified) else g

    def to_dict(self):
        return {"label": self.label, "partition": self.partition, "guarantee": self.guarantee.to_dict()}


def _basic(guarantees):
    eps = sum(_as_approx(g).epsilon for g in guarantees)
    delta = sum(_as_approx(g).delta for g in guarantees)
    return eps, delta


def _as_approx(g):
    if isinstance(g, PureDP):
        return ApproxDP(g.epsilon, 0.0)
    if isinstance(g, ApproxDP):
        return g
    raise ValueError(
        f"cannot add {g} under basic or advanced composition; create the Accountant with composition='zcdp'."
    )


def _zcdp_parts(guarantees):
    """Split spends into a total rho and the (epsilon, delta) terms without one."""
    rho, eps, delta = 0.0, 0.0, 0.0
    for g in guarantees:
        if isinstance(g, ZCDP):
            rho += g.rho
        elif isinstance(g, PureDP):
            rho += g.to_zcdp().rho
        elif g.rho is not None:
            rho += g.rho
        else:
            eps += g.epsilon
            delta += g.delta
    return rho, eps, delta


class Accountant:
    """A privacy budget and the ledger of what has been spent from it.

    Parameters
    ----------
    budget : PureDP, ApproxDP or ZCDP
        The total budget.
    composition : {"basic", "zcdp", "advanced"}, optional
        Default ``"zcdp"`` for a :class:`ZCDP` budget, ``"basic"`` otherwise.
    delta_slack : float, optional
        The delta' of advanced composition (required for ``"advanced"``).
    allow_uncertified : bool, default=False
        Accept :class:`Uncertified` spends (counted at their claim) to
        reproduce papers; the report then says the total is uncertified.

    Examples
    --------
    >>> from dpmoments import Accountant, ApproxDP
    >>> acct = Accountant(ApproxDP(1.0, 1e-6))
    >>> _ = acct.spend(ApproxDP(0.4, 1e-7), label="covariance")
    >>> acct.spent
    ApproxDP(epsilon=0.4, delta=1e-07, rho=None)
    """

    def __init__(self, budget, *, composition=None, delta_slack=None, allow_uncertified=False):
        if not isinstance(budget, (PureDP, ApproxDP, ZCDP)):
            raise TypeError(f"'budget' must be a PureDP, ApproxDP or ZCDP guarantee; got {budget!r}.")
        if not budget.is_private:
            raise ValueError(f"'budget' must be finite; got {budget}.")
        if composition is None:
            composition = "zcdp" if isinstance(budget, ZCDP) else "basic"
        composition = check_option(composition, "composition", COMPOSITIONS)
        _check_mode(budget, composition, delta_slack)
        self.budget = budget
        self.composition = composition
        self.delta_slack = None if delta_slack is None else check_delta(delta_slack, "delta_slack", allow_zero=False)
        self.allow_uncertified = bool(allow_uncertified)
        self._ledger = []

    # -- spending -----------------------------------------------------------------
    def spend(self, guarantee, *, label=None, partition=None):
        """Record a spend if it fits; otherwise raise and change nothing.

        Raises
        ------
        BudgetExceededError
            The spend would exceed the budget (message names spent, requested, total).
        UncertifiedSpendError
            ``guarantee`` is :class:`Uncertified` and the accountant does not allow it.
        """
        entry = self._entry(guarantee, label, partition)
        candidate = self._ledger + [entry]
        if not self._fits(candidate):
            raise BudgetExceededError(
                f"spending {guarantee} would exceed the budget: spent {self._describe(self._ledger)}, "
                f"requested {guarantee}, total budget {self.budget}."
            )
        self._ledger.append(entry)
        return entry

    def can_spend(self, guarantee, *, partition=None):
        """Whether :meth:`spend` would succeed (no state change)."""
        try:
            entry = self._entry(guarantee, None, partition)
        except (UncertifiedSpendError, ValueError, TypeError):
            return False
        return self._fits(self._ledger + [entry])

    def _entry(self, guarantee, label, partition):
        if not isinstance(guarantee, (PureDP, ApproxDP, ZCDP, Uncertified)):
            raise TypeError(f"'guarantee' must be a privacy guarantee; got {guarantee!r}.")
        if isinstance(guarantee, Uncertified) and not self.allow_uncertified:
            raise UncertifiedSpendError(
                f"refusing to spend an uncertified guarantee: {guarantee}. Create the Accountant with "
                "allow_uncertified=True only to reproduce a paper."
            )
        if label is not None and not isinstance(label, str):
            raise TypeError(f"'label' must be a string or None; got {type(label).__name__}.")
        if partition is not None and not isinstance(partition, str):
            raise TypeError(f"'partition' must be a string naming a disjoint subset, or None; got {partition!r}.")
        entry = Spend(guarantee, label, partition)
        self._cost([entry.effective])  # raises for spends this composition cannot add
        return entry

    # -- composition --------------------------------------------------------------
    def _partitions(self, ledger):
        names = {e.partition for e in ledger if e.partition is not None}
        whole = [e.effective for e in ledger if e.partition is None]
        if not names:
            return {_WHOLE: whole}
        return {p: whole + [e.effective for e in ledger if e.partition == p] for p in names}

    def _cost(self, guarantees):
        """The composed cost of guarantees, as a guarantee of the budget's kind."""
        if self.composition == "zcdp":
            rho, eps, delta = _zcdp_parts(guarantees)
            if isinstance(self.budget, ZCDP):
                if eps or delta:
                    raise ValueError("a zCDP budget cannot absorb (epsilon, delta) spends that carry no rho.")
                return ZCDP(rho) if rho > 0 else None
            remaining_delta = self.budget.delta - delta
            if remaining_delta <= 0:
                return ApproxDP(math.inf, min(delta, 0.999999))
            conv = zcdp_to_approx_dp(rho, remaining_delta) if rho > 0 else 0.0
            return ApproxDP(conv + eps, self.budget.delta, rho=rho or None) if (conv + eps) > 0 else None
        eps, delta = _basic(guarantees)
        if self.composition == "advanced" and guarantees:
            approx = [_as_approx(g) for g in guarantees]
            adv_eps, adv_delta = advanced_composition(
                [g.epsilon for g in approx], [g.delta for g in approx], self.delta_slack
            )
            if adv_eps < eps and adv_delta <= self.budget.delta:
                eps, delta = adv_eps, adv_delta
        if eps == 0 and delta == 0:
            return None
        if isinstance(self.budget, PureDP):
            if delta > 0:
                raise ValueError("a pure epsilon-DP budget cannot absorb spends with delta > 0.")
            return PureDP(eps)
        return ApproxDP(eps, min(delta, 0.999999999999))

    def _within(self, cost):
        if cost is None:
            return True
        if isinstance(cost, ZCDP):
            return cost.rho <= self.budget.rho * (1 + 1e-12)
        if isinstance(cost, PureDP):
            return cost.epsilon <= self.budget.epsilon * (1 + 1e-12)
        return cost.epsilon <= self.budget.epsilon * (1 + 1e-12) and cost.delta <= self.budget.delta * (1 + 1e-12)

    def _fits(self, ledger):
        return all(self._within(self._cost(g)) for g in self._partitions(ledger).values())

    def _worst(self, ledger):
        costs = [self._cost(g) for g in self._partitions(ledger).values()]
        costs = [c for c in costs if c is not None]
        if not costs:
            return None
        return max(costs, key=lambda c: c.rho if isinstance(c, ZCDP) else (c.epsilon, getattr(c, "delta", 0.0)))

    def _describe(self, ledger):
        worst = self._worst(ledger)
        return "nothing" if worst is None else str(worst)

    # -- reporting ----------------------------------------------------------------
    @property
    def spent(self):
        """The composed spend so far (worst partition), or ``None`` when nothing was spent."""
        return self._worst(self._ledger)

    @property
    def ledger(self):
        """The spends so far, oldest first (a copy)."""
        return tuple(self._ledger)

    @property
    def certified(self):
        """False once an uncertified spend has been accepted."""
        return all(e.guarantee.certified for e in self._ledger)

    def report(self):
        """A JSON-able description of the budget, the total spent and every spend."""
        spent = self.spent
        return {
            "budget": self.budget.to_dict(),
            "composition": self.composition,
            "delta_slack": self.delta_slack,
            "spent": None if spent is None else spent.to_dict(),
            "certified": self.certified,
            "n_spends": len(self._ledger),
            "partitions": sorted({e.partition for e in self._ledger if e.partition is not None}),
            "spends": [e.to_dict() for e in self._ledger],
        }

    def __repr__(self):
        return f"Accountant(budget={self.budget!r}, composition={self.composition!r}, spent={self.spent!r})"


def _check_mode(budget, composition, delta_slack):
    if composition == "advanced":
        if not isinstance(budget, ApproxDP) or budget.delta == 0:
            raise ValueError("composition='advanced' needs an ApproxDP budget with delta > 0.")
        if delta_slack is None:
            raise ValueError("composition='advanced' needs 'delta_slack' (the delta' of Dwork & Roth Thm 3.20).")
        if delta_slack >= budget.delta:
            raise ValueError(f"'delta_slack' must be below the budget's delta {budget.delta}; got {delta_slack}.")
    if composition == "zcdp" and isinstance(budget, PureDP):
        raise ValueError("composition='zcdp' needs a ZCDP or ApproxDP budget; a pure epsilon-DP budget composes basically.")
    if composition != "zcdp" and isinstance(budget, ZCDP):
        raise ValueError(f"a ZCDP budget composes in zCDP; got composition={composition!r}.")


def check_accountant(accountant):
    """An :class:`Accountant` or ``None`` (the estimators' ``accountant`` argument)."""
    if accountant is not None and not isinstance(accountant, Accountant):
        raise TypeError(f"'accountant' must be an Accountant or None; got {type(accountant).__name__}.")
    return accountant
