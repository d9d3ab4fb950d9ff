"""The accountant: a budget, a ledger of spends, and atomic check-then-commit.

How spends compose against the budget (``"basic"``, ``"zcdp"`` or ``"advanced"`` over a plan declared in
advance) is the accountant's :class:`~dpmoments.privacy.budget_rule.BudgetRule`; the ledger is kept here.

Parallel composition: the data may be declared once as one partitioning into
named disjoint blocks (:meth:`Accountant.partitioning`, e.g. the sites of a
multi-site study). A spend on a block costs only that block's records; the
total is the worst block's composition of its own spends with all whole-data
spends. A spend on an undeclared block is refused, and a second partitioning
cannot be declared, so two overlapping "partitions" cannot be expressed. What
remains the caller's word: that the declared blocks really are disjoint
subsets of the records, fixed independently of the data.

Every spend records the neighbouring relation it is stated under
(:data:`dpmoments.privacy.relations.NEIGHBOURS`); an accountant composes
spends under one relation and refuses another.

Check-then-commit runs under a lock, so threads sharing an accountant can
never overspend. ``copy.copy`` and ``copy.deepcopy`` return the accountant
itself (a copy would fork the ledger: scikit-learn's ``clone`` deep-copies
estimator parameters, and every fit must be charged to the one ledger), and
pickling is refused for the same reason.

Composition theorems assume each spend draws fresh, independent noise. Two
releases drawn from the same seed share their noise, and their difference is
exact: a spend may name where its noise came from (``noise_source``, an
opaque tag from :func:`dpmoments._rng.noise_source`; the estimators pass it),
and a second spend from the same source is refused.

There is no global default accountant: estimators take one explicitly.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, Optional, Protocol, SupportsIndex, Union

from .._validation import check_delta, check_option
from ..exceptions import BudgetExceededError, UncertifiedSpendError
from .budget_rule import COMPOSITIONS, BudgetRule, Planned, check_composition
from .guarantees import AnyGuarantee, ApproxDP, CertifiedGuarantee, PureDP, Uncertified, ZCDP
from .relations import NEIGHBOURS

__all__ = ["Accountant", "Spend", "COMPOSITIONS", "check_accountant"]

class Spendable(Protocol):
    """What may be spent besides a bare guarantee: anything that carries one (a ``Release``, a report)."""

    @property
    def guarantee(self) -> AnyGuarantee: ...


#: A spend is a guarantee, or something carrying one.
SpendArg = Union[AnyGuarantee, Spendable]


@dataclass(frozen=True)
class Spend:
    """One ledger entry: what was spent, under which relation, on which block, and why."""

    guarantee: AnyGuarantee
    label: Optional[str] = None
    partition: Optional[str] = None
    neighbours: str = "replace-one"

    @property
    def effective(self) -> CertifiedGuarantee:
        # An allowed uncertified spend is counted at its claim (the paper's view).
        return self.guarantee.claim

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "partition": self.partition, "neighbours": self.neighbours,
                "guarantee": self.guarantee.to_dict()}


class Accountant:
    """A privacy budget and the ledger of what has been spent from it.

    Parameters
    ----------
    budget : PureDP, ApproxDP or ZCDP
        The total budget.
    neighbours : {"replace-one", "zero-out", "add-remove"}, default="replace-one"
        The neighbouring relation every spend must be stated under.
    composition : {"basic", "zcdp", "advanced"}, optional
        Default ``"zcdp"`` for a :class:`ZCDP` budget, ``"basic"`` otherwise.
    delta_slack : float, optional
        The delta' of advanced composition (required for ``"advanced"``).
    plan : sequence of PureDP or ApproxDP, optional
        ``"advanced"`` only (required there): the spends, in order, declared
        before any is made.
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

    def __init__(self, budget: CertifiedGuarantee, *, neighbours: str = "replace-one",
                 composition: Optional[str] = None, delta_slack: Optional[float] = None, plan: Optional[Sequence[Planned]] = None,
                 allow_uncertified: bool = False) -> None:
        if not isinstance(budget, (PureDP, ApproxDP, ZCDP)):
            raise TypeError(f"'budget' must be a PureDP, ApproxDP or ZCDP guarantee; got {budget!r}.")
        if not budget.is_private:
            raise ValueError(f"'budget' must be finite; got {budget}.")
        if composition is None:
            composition = "zcdp" if isinstance(budget, ZCDP) else "basic"
        composition = check_option(composition, "composition", COMPOSITIONS)
        check_composition(budget, composition, delta_slack, plan)
        self.neighbours = check_option(neighbours, "neighbours", NEIGHBOURS)
        delta_slack = None if delta_slack is None else check_delta(delta_slack, "delta_slack", allow_zero=False)
        self.allow_uncertified = bool(allow_uncertified)
        self._rule = BudgetRule(budget, composition, delta_slack)  # the budget and its rule: fixed, read below
        self.plan = None if plan is None else self._rule.checked_plan(plan)
        self._ledger: list[Spend] = []
        self._partitioning: Optional[tuple[str, tuple[str, ...]]] = None
        self._sources: set[Hashable] = set()  # the noise sources spent from: kept here only, never reported
        self._lock = threading.RLock()

    @property
    def budget(self) -> CertifiedGuarantee:
        """The total budget."""
        return self._rule.budget

    @property
    def composition(self) -> str:
        """The rule the spends compose by: ``"basic"``, ``"zcdp"`` or ``"advanced"``."""
        return self._rule.composition

    @property
    def delta_slack(self) -> Optional[float]:
        """Advanced composition's delta' (``None`` under the other rules)."""
        return self._rule.delta_slack

    # -- one ledger, never copied -------------------------------------------------------
    def __copy__(self) -> Accountant:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Accountant:
        return self

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        raise TypeError("an Accountant cannot be pickled: a copy would fork its ledger and spend the budget twice.")

    # -- the partitioning ---------------------------------------------------------------
    def partitioning(self, name: str, blocks: Iterable[str]) -> Accountant:
        """Declare the one partitioning of the data into disjoint named blocks; returns the accountant.

        Declaring the same partitioning again is a no-op; any other is refused.
        """
        if not isinstance(name, str) or not name:
            raise TypeError(f"'name' must be a non-empty string naming the partitioning; got {name!r}.")
        if isinstance(blocks, str):
            raise TypeError("'blocks' must be a collection of block names, not one string.")
        blocks = tuple(blocks)
        if not blocks or any(not isinstance(b, str) or not b for b in blocks) or len(set(blocks)) != len(blocks):
            raise ValueError(f"'blocks' must be distinct non-empty strings; got {list(blocks)!r}.")
        if self.composition == "advanced":
            raise ValueError("composition='advanced' composes one declared plan; it has no parallel blocks.")
        with self._lock:
            declared = (name, tuple(sorted(blocks)))
            if self._partitioning not in (None, declared):
                raise ValueError(f"this accountant already has the partitioning {self._partitioning[0]!r}; "
                                 f"a second one ({name!r}) could overlap it.")
            self._partitioning = declared
        return self

    @property
    def partitions(self) -> Optional[tuple[str, tuple[str, ...]]]:
        """``(name, blocks)`` of the declared partitioning, or ``None``."""
        return self._partitioning

    # -- spending -----------------------------------------------------------------------
    def spend(self, x: SpendArg, *, label: Optional[str] = None, partition: Optional[str] = None,
              neighbours: Optional[str] = None, noise_source: Optional[Hashable] = None) -> Spend:
        """Record a spend if it fits; otherwise raise and change nothing.

        Parameters
        ----------
        x : guarantee or Release
            A release (anything with ``.guarantee`` and ``.neighbours``) is
            charged its guarantee under its own relation.
        label : str, optional
        partition : str, optional
            A block of the declared :meth:`partitioning`.
        neighbours : str, optional
            The relation a bare guarantee is stated under (default: the
            accountant's).
        noise_source : str, optional
            Where the spend's noise came from
            (:func:`dpmoments._rng.noise_source` of its ``rng``, read before
            the first draw; ``None``: fresh OS entropy, or unknown).

        Raises
        ------
        BudgetExceededError
            The spend would exceed the budget (message names spent, requested, total).
        UncertifiedSpendError
            The guarantee is :class:`Uncertified` and the accountant does not allow it.
        ValueError
            Another relation, an undeclared block, a spend outside the plan,
            or noise from a source already spent from (the same seed).
        """
        with self._lock:
            entry = self._entry(x, label, partition, neighbours)
            self._check_source(noise_source)
            self._check_fits(entry)
            self._ledger.append(entry)
            if noise_source is not None:
                self._sources.add(noise_source)
            return entry

    def spend_blocks(self, spends: dict[str, SpendArg], *, label: Optional[str] = None,
                     neighbours: Optional[str] = None) -> tuple[Spend, ...]:
        """Spend one guarantee (or release) per block, all or nothing: ``{block: x}``."""
        with self._lock:
            entries = [self._entry(x, label, block, neighbours) for block, x in dict(spends).items()]
            ledger = self._ledger + entries
            if not self._fits(ledger):
                raise BudgetExceededError(f"spending per block would exceed the budget {self.budget} in some block "
                                          f"(spent {self._describe(self._ledger)}); nothing was spent.")
            self._ledger.extend(entries)
            return tuple(entries)

    def can_spend(self, x: SpendArg, *, partition: Optional[str] = None, neighbours: Optional[str] = None,
                  noise_source: Optional[Hashable] = None) -> bool:
        """Whether :meth:`spend` would succeed now (no state change)."""
        with self._lock:
            try:
                entry = self._entry(x, None, partition, neighbours)
                self._check_source(noise_source)
                self._check_fits(entry)
            except (UncertifiedSpendError, ValueError, TypeError):
                return False
            return True

    def _entry(self, x: SpendArg, label: Optional[str], partition: Optional[str], neighbours: Optional[str]) -> Spend:
        guarantee = getattr(x, "guarantee", x)
        if not isinstance(guarantee, (PureDP, ApproxDP, ZCDP, Uncertified)):
            raise TypeError(f"'guarantee' must be a privacy guarantee or a Release; got {x!r}.")
        relation = self._relation(getattr(x, "neighbours", None), neighbours)
        if not guarantee.certified and not self.allow_uncertified:
            raise UncertifiedSpendError(
                f"refusing to spend an uncertified guarantee: {guarantee}. Create the Accountant with "
                "allow_uncertified=True only to reproduce a paper."
            )
        if label is not None and not isinstance(label, str):
            raise TypeError(f"'label' must be a string or None; got {type(label).__name__}.")
        self._check_partition(partition)
        entry = Spend(guarantee, label, partition, relation)
        self._rule.cost([entry.effective])  # raises for spends this composition cannot add
        return entry

    def _relation(self, own: Optional[str], given: Optional[str]) -> str:
        if own is not None and given is not None and own != given:
            raise ValueError(f"the release is stated under {own!r} neighbours, not {given!r}.")
        relation = check_option(own or given or self.neighbours, "neighbours", NEIGHBOURS)
        if relation != self.neighbours:
            raise ValueError(f"cannot mix neighbouring relations: this accountant composes {self.neighbours!r} "
                             f"spends; got a {relation!r} spend.")
        return relation

    def _check_source(self, noise_source: Optional[Hashable]) -> None:
        if noise_source is not None and noise_source in self._sources:
            raise ValueError("this spend's noise comes from the same seed (or generator state) as an earlier spend "
                             "on this accountant: the two releases share their noise, so their difference is exact "
                             "and no composition holds; use rng=None (fresh entropy), or one numpy Generator passed "
                             "to every fit (not an int seed, which restarts the same noise on every fit).")

    def _check_partition(self, partition: Optional[str]) -> None:
        if partition is None:
            return
        if not isinstance(partition, str):
            raise TypeError(f"'partition' must be a string naming a declared block, or None; got {partition!r}.")
        if self._partitioning is None:
            raise ValueError(f"spend on block {partition!r} refused: declare the partitioning of the data first "
                             "(Accountant.partitioning(name, blocks)).")
        if partition not in self._partitioning[1]:
            raise ValueError(f"spend on block {partition!r} refused: it is not a block of the declared "
                             f"partitioning {self._partitioning[0]!r}.")

    def _check_fits(self, entry: Spend) -> None:
        if self.plan is not None:
            self._check_planned(self.plan, entry)
        candidate = self._ledger + [entry]
        if not self._fits(candidate):
            # The composed total says why: under "zcdp" a lone 0.5-DP spend converts to more than epsilon 1.
            raise BudgetExceededError(
                f"spending {entry.guarantee} would exceed the budget: spent {self._describe(self._ledger)}, "
                f"requested {entry.guarantee}, total budget {self.budget}; composed ({self.composition}) the total "
                f"would be {self._describe(candidate)}."
            )

    # -- the advanced-composition plan ----------------------------------------------------
    def _check_planned(self, plan: tuple[Planned, ...], entry: Spend) -> None:
        i = len(self._ledger)
        if i >= len(plan):
            raise BudgetExceededError(f"the declared plan of {len(plan)} spends is used up; "
                                      f"requested {entry.guarantee}.")
        want, got = plan[i].as_approx(), entry.effective.as_approx()
        if got.epsilon > want.epsilon or got.delta > want.delta:
            raise BudgetExceededError(f"spend {i + 1} ({got}) exceeds planned spend {i + 1} ({want}); "
                                      "advanced composition holds only for the declared plan.")

    # -- composition --------------------------------------------------------------------
    def _blocks(self, ledger: Sequence[Spend]) -> dict[Optional[str], list[CertifiedGuarantee]]:
        whole = [e.effective for e in ledger if e.partition is None]
        if self._partitioning is None:
            return {None: whole}
        return {b: whole + [e.effective for e in ledger if e.partition == b] for b in self._partitioning[1]}

    def _fits(self, ledger: Sequence[Spend]) -> bool:
        return all(self._rule.within(self._rule.cost(g)) for g in self._blocks(ledger).values())

    def _per_block(self, ledger: Sequence[Spend]) -> dict[Optional[str], Optional[CertifiedGuarantee]]:
        return {b: self._rule.cost(g) for b, g in self._blocks(ledger).items()}

    def _worst(self, ledger: Sequence[Spend]) -> Optional[CertifiedGuarantee]:
        costs = [c for c in self._per_block(ledger).values() if c is not None]
        if not costs:
            return None
        return max(costs, key=lambda c: c.rho if isinstance(c, ZCDP) else (c.epsilon, getattr(c, "delta", 0.0)))

    def _describe(self, ledger: Sequence[Spend]) -> str:
        worst = self._worst(ledger)
        return "nothing" if worst is None else str(worst)

    # -- reporting ----------------------------------------------------------------------
    @property
    def spent(self) -> Optional[AnyGuarantee]:
        """The composed spend so far (worst block), or ``None`` when nothing was spent.

        Once an uncertified spend was accepted, :class:`Uncertified`: the claims' total, and what the
        spends that hold compose to (``None`` when one of them holds nothing), so that the headline
        is never a claim dressed as a guarantee.
        """
        with self._lock:
            return self._headline(self._ledger)

    def _headline(self, ledger: Sequence[Spend]) -> Optional[AnyGuarantee]:
        total = self._worst(ledger)
        if total is None or all(e.guarantee.certified for e in ledger):
            return total
        held = None
        holding = [dataclasses.replace(e, guarantee=h) for e in ledger if (h := e.guarantee.holding) is not None]
        if len(holding) == len(ledger):
            try:
                held = self._worst(holding)
            except (TypeError, ValueError):  # what holds may not compose under this accountant's rule
                held = None
        return Uncertified(total, "an uncertified spend was accepted (allow_uncertified=True): the total "
                                  "composes the claims", holds=held)

    @property
    def ledger(self) -> tuple[Spend, ...]:
        """The spends so far, oldest first (a copy)."""
        with self._lock:
            return tuple(self._ledger)

    @property
    def certified(self) -> bool:
        """False once an uncertified spend has been accepted."""
        with self._lock:
            return all(e.guarantee.certified for e in self._ledger)

    def report(self) -> dict[str, Any]:
        """A JSON-able description of the budget, the relation, the total spent and every spend."""
        with self._lock:
            spent = self._headline(self._ledger)
            report = {
                "budget": self.budget.to_dict(),
                "neighbours": self.neighbours,
                "composition": self.composition,
                "delta_slack": self.delta_slack,
                "spent": None if spent is None else spent.to_dict(),
                "certified": self.certified,
                "n_spends": len(self._ledger),
                "partitions": sorted({e.partition for e in self._ledger if e.partition is not None}),
                "spends": [e.to_dict() for e in self._ledger],
            }
            if self.plan is not None:
                report["plan"] = [g.to_dict() for g in self.plan]
            if self._partitioning is not None:
                report["partitioning"] = {
                    "name": self._partitioning[0],
                    "spent_per_block": {b: None if c is None else c.to_dict()
                                        for b, c in self._per_block(self._ledger).items()},
                }
            return report

    def __repr__(self) -> str:
        return (f"Accountant(budget={self.budget!r}, neighbours={self.neighbours!r}, "
                f"composition={self.composition!r}, spent={self.spent!r})")


def check_accountant(accountant: Optional[Accountant]) -> Optional[Accountant]:
    """An :class:`Accountant` or ``None`` (the estimators' ``accountant`` argument)."""
    if accountant is not None and not isinstance(accountant, Accountant):
        raise TypeError(f"'accountant' must be an Accountant or None; got {type(accountant).__name__}.")
    return accountant
