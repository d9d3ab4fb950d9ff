"""A site's own ledger: each share is used once, and the site, not the aggregator, owns its budget.

The site records an answer *before* it sends it (check, record, then answer), so a crash
between recording and sending loses an answer, never grants a second one. On disk the
ledger is one JSON file, rewritten atomically (a temporary file in the same directory,
flushed to disk, then renamed over the old one) under an exclusive lock, so it survives
restarts and two processes of one site cannot both answer. A refusal is recorded with its
reason, on the site's side only.

What is charged is a plan's cost against the aggregator (:meth:`~.plan.Plan.cost`: the
joint view of every round, composed), once per plan, when the site first answers it, with
the plan's neighbouring relation. The budget rule is :class:`~dpmoments.privacy.Accountant`'s
(basic composition, one relation): the charges are replayed into an accountant over the
declared budget, so with a budget a plan under another relation than those already charged
is refused (``"relation-mismatch"``): guarantees under different relations do not add up.
"""

import contextlib
import datetime
import fcntl
import json
import os
import tempfile
import threading
from pathlib import Path

from ..exceptions import BudgetExceededError
from ..privacy import Accountant, ApproxDP, PureDP, compose

__all__ = ["SiteLedger", "Refused", "parse_budget"]


class Refused(Exception):
    """The site refuses a query; ``code`` is one of :data:`~.messages.ERRORS`."""

    def __init__(self, code):
        super().__init__(code)
        self.code = code


def parse_budget(budget):
    """``None`` (no limit), a guarantee, or ``(epsilon, delta)``."""
    if budget is None or hasattr(budget, "certified"):  # a guarantee; the accountant checks which kinds it takes
        return budget
    try:
        eps, delta = budget
    except (TypeError, ValueError):
        raise TypeError(f"'budget' must be None, a PureDP/ApproxDP or (epsilon, delta); got {budget!r}.") from None
    return ApproxDP(float(eps), float(delta))


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _guarantee(d):
    if d["type"] == "pure-dp":
        return PureDP(float(d["epsilon"]))
    return ApproxDP(float(d["epsilon"]), float(d["delta"]))


#: The ledger file's fields and their JSON types (anything else is refused, never half-read).
_SHAPE = {"site": str, "answered": list, "charged": dict, "refusals": list}


class SiteLedger:
    """The record of what a site answered, charged and refused.

    Parameters
    ----------
    site : str
    budget : None, PureDP, ApproxDP or (epsilon, delta)
        The most this site will spend over every plan it answers (basic composition);
        ``None``: no limit (each share is still used once).
    path : path, optional
        A JSON file (created if absent) that survives restarts; ``None`` keeps it in memory.
    """

    def __init__(self, site, budget=None, path=None):
        self.site = site
        self.budget = parse_budget(budget)
        self.path = None if path is None else Path(path)
        self._lock = threading.Lock()
        self._state = {"site": site, "answered": [], "charged": {}, "refusals": []}
        if self.path is not None and self.path.exists():
            with self._locked():
                self._state = self._read()

    # -- storage ----------------------------------------------------------------------------------------------
    def _read(self):
        try:
            state = json.loads(self.path.read_text())
        except (OSError, ValueError):
            raise ValueError(f"site ledger '{self.path}' is unreadable; refusing to answer without it.") from None
        if not isinstance(state, dict) or not all(isinstance(state.get(k), t) for k, t in _SHAPE.items()):
            raise ValueError(f"site ledger '{self.path}' is not a dpmoments site ledger; refusing to answer without it.")
        if state.get("site") != self.site:
            raise ValueError(f"site ledger '{self.path}' belongs to another site.")
        return state

    @contextlib.contextmanager
    def _locked(self):
        with self._lock:
            if self.path is None:
                yield
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self):
        if self.path is None:
            return
        fd, tmp = tempfile.mkstemp(prefix=".ledger-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(self._state, fh, indent=1, sort_keys=True)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        dirfd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dirfd)
        finally:
            os.close(dirfd)

    # -- the rule -----------------------------------------------------------------------------------------------
    def spent(self):
        """What this site has spent over every plan it answered (basic composition), or None."""
        costs = [_guarantee(c) for c in self._state["charged"].values()]
        return compose(costs) if costs else None

    def admit(self, plan, step, cost, neighbours="replace-one", spend=None):
        """Check and record an answer to ``step`` of ``plan`` (charging the plan on its first answer).

        Raises :class:`Refused` (``"already-answered"``, ``"relation-mismatch"`` or
        ``"over-budget"``), after recording the refusal; returns only once the answer is on disk.
        ``spend``: the share's own record (:meth:`~.spent.ShareRecord.spend`), called under this
        ledger's lock once its checks pass; its refusal is recorded here too.
        """
        with self._locked():
            if self.path is not None and self.path.exists():
                self._state = self._read()
            key = [plan, int(step)]
            if key in self._state["answered"]:
                self._refuse_locked(plan, step, "already-answered")
            if plan not in self._state["charged"]:
                verdict = self._verdict(cost, neighbours)
                if verdict is not None:
                    self._refuse_locked(plan, step, verdict)
            if spend is not None:
                try:
                    spend()
                except Refused as exc:
                    self._refuse_locked(plan, step, exc.code)
            self._state["answered"].append(key)
            self._state["charged"].setdefault(plan, dict(cost.to_dict(), neighbours=neighbours))
            self._write()

    def refuse(self, plan, step, code):
        """Record a refusal decided elsewhere (unknown plan, bad query) and raise :class:`Refused`."""
        with self._locked():
            if self.path is not None and self.path.exists():
                self._state = self._read()
            self._refuse_locked(plan, step, code)

    def _refuse_locked(self, plan, step, code):
        self._state["refusals"].append({"plan": plan, "step": step, "reason": code, "time": _now()})
        self._write()
        raise Refused(code)

    def can_answer(self, plan, cost, neighbours="replace-one"):
        """Whether a plan costing ``cost`` could still be answered (already charged, or within the budget)."""
        return plan in self._state["charged"] or self._verdict(cost, neighbours) is None

    def _verdict(self, cost, neighbours):
        """``None`` if charging ``cost`` fits, else the refusal's code."""
        if self.budget is None or not self.budget.is_private:  # no limit: nothing to add up (each share still once)
            return None
        charged = list(self._state["charged"].values())
        if any(c.get("neighbours", "replace-one") != neighbours for c in charged):
            return "relation-mismatch"
        # The plan was calibrated to the budget exactly: rounding in its solve must not refuse it.
        slack = ApproxDP(self.budget.epsilon * 1e-9, self.budget.as_approx().delta * 1e-9)
        acct = Accountant(compose([self.budget, slack]), neighbours=neighbours)
        try:
            for c in charged:
                acct.spend(_guarantee(c))
            acct.spend(cost)
        except BudgetExceededError:
            return "over-budget"
        return None

    # -- reading --------------------------------------------------------------------------------------------
    @property
    def answered(self):
        return [tuple(k) for k in self._state["answered"]]

    @property
    def refusals(self):
        return [dict(r) for r in self._state["refusals"]]

    def to_dict(self):
        return json.loads(json.dumps(self._state))
