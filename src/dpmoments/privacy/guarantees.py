"""Privacy guarantees as values, with the behaviour their users need.

A guarantee says what a release (or a composition of releases) satisfies.
They are small frozen dataclasses so that they can be compared, stored on
estimators (``privacy_``), spent in an :class:`~dpmoments.Accountant` and
written to JSON reports.

* :class:`PureDP` — epsilon-DP.
* :class:`ApproxDP` — (epsilon, delta)-DP; Gaussian releases also record the
  zCDP parameter ``rho`` they satisfy, so that they compose tightly in zCDP.
* :class:`ZCDP` — rho-zero-concentrated DP (Bun & Steinke 2016).
* :class:`Uncertified` — what a paper *claims* for a mechanism whose proof is
  known to fail (the pure-epsilon Wishart mechanism, the classic Gaussian
  formula at epsilon >= 1 where the exact analysis does not rescue it), with
  the reason and, where one can be computed, a guarantee that does hold.

Code outside this package never switches on these types: every guarantee
answers ``certified``, ``holding`` (the guarantee that holds, ``None`` if
none is known), ``claim`` (what is stated), ``rho_or_none`` (the zCDP
parameter it implies, if any), ``as_approx(delta)`` (an (epsilon, delta)
statement), ``epsilon_at(delta)`` and ``describe()`` (plain language).

``epsilon = inf`` (or ``rho = inf``) describes an exact, non-private result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional, TypeVar, Union

from .._validation import check_real, check_delta, check_epsilon
from .conversions import pure_to_zcdp, zcdp_to_approx_dp

__all__ = ["PureDP", "ApproxDP", "ZCDP", "Uncertified", "Guarantee", "CertifiedGuarantee", "AnyGuarantee"]


def _json_number(x: float) -> float | str:
    # JSON has no infinity; reports spell it out.
    return "inf" if math.isinf(x) else x


def _factor(epsilon: float) -> str:
    """e^epsilon in words, without overflowing."""
    return f"e^{epsilon:g} = {math.exp(epsilon):.3g}" if epsilon < 700 else f"e^{epsilon:g}"


_Self = TypeVar("_Self", bound="_Certified")

_NOT_PRIVATE = "not private: the exact result is released, with no noise."


class _Certified:
    """What every guarantee that holds as stated shares."""

    @property
    def certified(self) -> bool:
        return True

    @property
    def holding(self: _Self) -> _Self:
        """The guarantee that holds: this one."""
        return self

    @property
    def claim(self: _Self) -> _Self:
        """The guarantee stated: this one."""
        return self


@dataclass(frozen=True)
class PureDP(_Certified):
    """epsilon-differential privacy.

    Examples
    --------
    >>> PureDP(1.0).to_zcdp()
    ZCDP(rho=0.5)
    """

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))

    @property
    def is_private(self) -> bool:
        return math.isfinite(self.epsilon)

    @property
    def rho_or_none(self) -> Optional[float]:
        """epsilon-DP implies (epsilon^2 / 2)-zCDP (Bun & Steinke 2016, Prop. 1.4); ``inf`` where that overflows."""
        try:
            return pure_to_zcdp(self.epsilon)
        except ValueError:
            return math.inf

    def to_zcdp(self) -> ZCDP:
        """epsilon-DP implies (epsilon^2 / 2)-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
        return ZCDP(pure_to_zcdp(self.epsilon))

    def as_approx(self, delta: Optional[float] = None) -> ApproxDP:
        """``(epsilon, 0)``-DP, which implies ``(epsilon, delta)``-DP for every ``delta``."""
        return ApproxDP(self.epsilon, 0.0 if delta is None else check_delta(delta))

    def epsilon_at(self, delta: float, method: str = "optimal") -> float:
        """The epsilon this guarantee gives at a failure probability ``delta``."""
        check_delta(delta)
        return self.epsilon

    def describe(self, delta: Optional[float] = None) -> str:
        """The guarantee in plain language."""
        if not self.is_private:
            return _NOT_PRIVATE
        return (f"{self}: changing one person's data changes the probability of any outcome by at most a "
                f"factor {_factor(self.epsilon)}.")

    def to_dict(self) -> dict[str, Any]:
        return {"type": "pure-dp", "epsilon": _json_number(self.epsilon)}

    def __str__(self) -> str:
        return f"{self.epsilon:g}-DP" if self.is_private else "not private (epsilon = inf)"


@dataclass(frozen=True)
class ApproxDP(_Certified):
    """(epsilon, delta)-differential privacy.

    Parameters
    ----------
    epsilon : float in (0, inf]
    delta : float in [0, 1)
    rho : float or None
        Set for Gaussian mechanisms, which are also ``rho``-zCDP with
        ``rho = sensitivity**2 / (2 sigma**2)``; lets an accountant compose
        them in zCDP.
    basis : str or None
        Why it holds, when that is not the obvious theorem (e.g. a classic
        Gaussian sigma used at epsilon >= 1 whose exact analysis proves the
        claim). Not part of equality.
    """

    epsilon: float
    delta: float
    rho: Optional[float] = None
    basis: Optional[str] = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        if self.rho is not None:
            rho = check_real(self.rho, "rho")
            if rho <= 0:
                raise ValueError(f"'rho' must be in (0, inf]; got {rho}.")
            object.__setattr__(self, "rho", rho)

    @property
    def is_private(self) -> bool:
        return math.isfinite(self.epsilon)

    @property
    def rho_or_none(self) -> Optional[float]:
        return self.rho

    def to_zcdp(self) -> ZCDP:
        """The zCDP guarantee, available only for Gaussian releases (``rho`` set)."""
        if self.rho is None:
            raise ValueError(
                f"{self} carries no zCDP parameter: only Gaussian releases (with 'rho') convert to zCDP."
            )
        return ZCDP(self.rho)

    def as_approx(self, delta: Optional[float] = None) -> ApproxDP:
        """This guarantee, or the best (epsilon, ``delta``) statement it implies."""
        if delta is None:
            return self
        delta = check_delta(delta)
        return ApproxDP(self.epsilon_at(delta), delta, rho=self.rho)

    def epsilon_at(self, delta: float, method: str = "optimal") -> float:
        """The smallest epsilon known to hold at ``delta``.

        ``inf`` when ``delta`` is below this guarantee's own delta and no zCDP
        parameter is recorded.
        """
        delta = check_delta(delta)
        best = self.epsilon if delta >= self.delta else math.inf
        if self.rho is not None and delta > 0:
            best = min(best, zcdp_to_approx_dp(self.rho, delta, method=method))
        return best

    def describe(self, delta: Optional[float] = None) -> str:
        """The guarantee in plain language."""
        if not self.is_private:
            return _NOT_PRIVATE
        text = (f"{self}: changing one person's data changes the probability of any set of outcomes by at "
                f"most a factor {_factor(self.epsilon)}, plus at most {self.delta:g}.")
        return text if self.basis is None else f"{text} It holds by {self.basis}."

    def to_dict(self) -> dict[str, Any]:
        out = {"type": "approx-dp", "epsilon": _json_number(self.epsilon), "delta": self.delta}
        if self.rho is not None:
            out["rho"] = _json_number(self.rho)
        if self.basis is not None:
            out["basis"] = self.basis
        return out

    def __str__(self) -> str:
        if not self.is_private:
            return "not private (epsilon = inf)"
        return f"({self.epsilon:g}, {self.delta:g})-DP"


@dataclass(frozen=True)
class ZCDP(_Certified):
    """rho-zero-concentrated differential privacy (Bun & Steinke 2016).

    Examples
    --------
    >>> round(ZCDP(0.5).to_approx_dp(1e-6, method="standard").epsilon, 4)
    5.7565
    """

    rho: float

    def __post_init__(self) -> None:
        rho = check_real(self.rho, "rho")
        if rho <= 0:
            raise ValueError(f"'rho' must be in (0, inf]; got {rho}.")
        object.__setattr__(self, "rho", rho)

    @property
    def is_private(self) -> bool:
        return math.isfinite(self.rho)

    @property
    def rho_or_none(self) -> Optional[float]:
        return self.rho

    def to_zcdp(self) -> ZCDP:
        return self

    def to_approx_dp(self, delta: float, method: str = "optimal") -> ApproxDP:
        """Convert to (epsilon, delta)-DP.

        ``method="standard"`` is ``rho + 2 sqrt(rho ln(1/delta))`` (Bun &
        Steinke 2016, Prop. 1.3); ``"optimal"`` is the tighter conversion of
        Canonne, Kamath & Steinke (2020, Prop. 12 / Cor. 13).
        """
        delta = check_delta(delta, allow_zero=False)
        return ApproxDP(zcdp_to_approx_dp(self.rho, delta, method=method), delta, rho=self.rho)

    def as_approx(self, delta: Optional[float] = None) -> ApproxDP:
        """The (epsilon, ``delta``)-DP statement this implies (``delta`` is required)."""
        if delta is None:
            raise ValueError(f"stating {self} as (epsilon, delta)-DP needs 'delta' in (0, 1); got None.")
        return self.to_approx_dp(delta)

    def epsilon_at(self, delta: float, method: str = "optimal") -> float:
        delta = check_delta(delta)
        return math.inf if delta == 0 else zcdp_to_approx_dp(self.rho, delta, method=method)

    def describe(self, delta: Optional[float] = None) -> str:
        """The guarantee in plain language (with its (epsilon, delta) form at ``delta``, if given)."""
        if not self.is_private:
            return _NOT_PRIVATE
        text = (f"{self}: the privacy loss of changing one person's data is sub-Gaussian with parameter "
                f"rho = {self.rho:g} (zero-concentrated DP)")
        if delta is None:
            return text + "."
        return f"{text}; at delta = {delta:g} that is {self.to_approx_dp(delta)}."

    def to_dict(self) -> dict[str, Any]:
        return {"type": "zcdp", "rho": _json_number(self.rho)}

    def __str__(self) -> str:
        return f"{self.rho:g}-zCDP" if self.is_private else "not private (rho = inf)"


@dataclass(frozen=True)
class Uncertified:
    """A claimed guarantee whose proof is known to fail.

    Parameters
    ----------
    claimed : PureDP, ApproxDP or ZCDP
        What the source paper claims.
    reason : str
        Why the claim does not hold (with a pointer to the argument).
    holds : PureDP, ApproxDP, ZCDP or None
        A guarantee that does hold for the same mechanism, where one can be
        computed (e.g. the analytic-Gaussian epsilon of a classic-formula
        sigma used at epsilon >= 1); ``None`` when no finite guarantee is known
        (the support-mismatched Wishart mechanism).
    """

    claimed: CertifiedGuarantee
    reason: str
    holds: Optional[CertifiedGuarantee] = None

    def __post_init__(self) -> None:
        for name in ("claimed", "holds"):
            value = getattr(self, name)
            if value is None and name == "holds":
                continue
            if not isinstance(value, (PureDP, ApproxDP, ZCDP)):
                raise TypeError(f"'{name}' must be a PureDP, ApproxDP or ZCDP guarantee; got {value!r}.")
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValueError(f"'reason' must be a non-empty string; got {self.reason!r}.")

    @property
    def is_private(self) -> bool:
        return self.holds is not None and self.holds.is_private

    @property
    def certified(self) -> bool:
        return False

    @property
    def holding(self) -> Optional[CertifiedGuarantee]:
        """The guarantee that holds (``None`` when none is known)."""
        return self.holds

    @property
    def claim(self) -> CertifiedGuarantee:
        """The guarantee claimed (not proven)."""
        return self.claimed

    @property
    def rho_or_none(self) -> Optional[float]:
        """The zCDP parameter of what *holds* (``None`` when nothing is known)."""
        return None if self.holds is None else self.holds.rho_or_none

    def as_approx(self, delta: Optional[float] = None) -> ApproxDP:
        """The (epsilon, delta) statement of what *holds*; ``ValueError`` when nothing is known to hold."""
        if self.holds is None:
            raise ValueError(f"no guarantee is known to hold for this mechanism ({self.reason}).")
        return self.holds.as_approx(delta)

    def epsilon_at(self, delta: float, method: str = "optimal") -> float:
        """The epsilon of the guarantee that *holds* (``inf`` if none is known)."""
        return math.inf if self.holds is None else self.holds.epsilon_at(delta, method)

    def describe(self, delta: Optional[float] = None) -> str:
        """What is claimed, why it is not proven, and what holds, in plain language."""
        text = f"Claimed {self.claimed}, which is not proven: {self.reason}. "
        if self.holds is None:
            return text + "No guarantee is known to hold."
        return text + "What holds: " + self.holds.describe(delta)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "uncertified",
            "claimed": self.claimed.to_dict(),
            "reason": self.reason,
            "holds": None if self.holds is None else self.holds.to_dict(),
        }

    def __str__(self) -> str:
        held = "no guarantee is known to hold" if self.holds is None else f"what holds: {self.holds}"
        return f"UNCERTIFIED: {self.claimed} is claimed but not proven ({self.reason}); {held}"


Guarantee = (PureDP, ApproxDP, ZCDP, Uncertified)

#: For type hints: a guarantee that holds as stated, and any guarantee (``isinstance`` takes the tuple above).
CertifiedGuarantee = Union[PureDP, ApproxDP, ZCDP]
AnyGuarantee = Union[PureDP, ApproxDP, ZCDP, Uncertified]
