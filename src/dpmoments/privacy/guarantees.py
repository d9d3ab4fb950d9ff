"""Privacy guarantees as values, and the conversions between them.

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
  formula at epsilon >= 1), with the reason and, where one can be computed, a
  guarantee that does hold.

``epsilon = inf`` (or ``rho = inf``) describes an exact, non-private result.
"""

import math
from dataclasses import dataclass
from typing import Optional

from .._validation import check_delta, check_epsilon, _real
from .conversions import pure_to_zcdp, zcdp_to_approx_dp

__all__ = ["PureDP", "ApproxDP", "ZCDP", "Uncertified", "Guarantee"]


def _json_number(x):
    # JSON has no infinity; reports spell it out.
    return "inf" if math.isinf(x) else x


@dataclass(frozen=True)
class PureDP:
    """epsilon-differential privacy.

    Examples
    --------
    >>> PureDP(1.0).to_zcdp()
    ZCDP(rho=0.5)
    """

    epsilon: float

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))

    @property
    def is_private(self):
        return math.isfinite(self.epsilon)

    @property
    def certified(self):
        return True

    def to_zcdp(self):
        """epsilon-DP implies (epsilon^2 / 2)-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
        return ZCDP(pure_to_zcdp(self.epsilon))

    def epsilon_at(self, delta, method="optimal"):
        """The epsilon this guarantee gives at a failure probability ``delta``."""
        check_delta(delta)
        return self.epsilon

    def to_dict(self):
        return {"type": "pure-dp", "epsilon": _json_number(self.epsilon)}

    def __str__(self):
        return f"{self.epsilon:g}-DP" if self.is_private else "not private (epsilon = inf)"


@dataclass(frozen=True)
class ApproxDP:
    """(epsilon, delta)-differential privacy.

    Parameters
    ----------
    epsilon : float in (0, inf]
    delta : float in [0, 1)
    rho : float or None
        Set for Gaussian mechanisms, which are also ``rho``-zCDP with
        ``rho = sensitivity**2 / (2 sigma**2)``; lets an accountant compose
        them in zCDP.
    """

    epsilon: float
    delta: float
    rho: Optional[float] = None

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        if self.rho is not None:
            rho = _real(self.rho, "rho")
            if rho <= 0:
                raise ValueError(f"'rho' must be in (0, inf]; got {rho}.")
            object.__setattr__(self, "rho", rho)

    @property
    def is_private(self):
        return math.isfinite(self.epsilon)

    @property
    def certified(self):
        return True

    def to_zcdp(self):
        """The zCDP guarantee, available only for Gaussian releases (``rho`` set)."""
        if self.rho is None:
            raise ValueError(
                f"{self} carries no zCDP parameter: only Gaussian releases (with 'rho') convert to zCDP."
            )
        return ZCDP(self.rho)

    def epsilon_at(self, delta, method="optimal"):
        """The smallest epsilon known to hold at ``delta``.

        ``inf`` when ``delta`` is below this guarantee's own delta and no zCDP
        parameter is recorded.
        """
        delta = check_delta(delta)
        best = self.epsilon if delta >= self.delta else math.inf
        if self.rho is not None and delta > 0:
            best = min(best, zcdp_to_approx_dp(self.rho, delta, method=method))
        return best

    def to_dict(self):
        out = {"type": "approx-dp", "epsilon": _json_number(self.epsilon), "delta": self.delta}
        if self.rho is not None:
            out["rho"] = _json_number(self.rho)
        return out

    def __str__(self):
        if not self.is_private:
            return "not private (epsilon = inf)"
        return f"({self.epsilon:g}, {self.delta:g})-DP"


@dataclass(frozen=True)
class ZCDP:
    """rho-zero-concentrated differential privacy (Bun & Steinke 2016).

    Examples
    --------
    >>> round(ZCDP(0.5).to_approx_dp(1e-6, method="standard").epsilon, 4)
    5.7565
    """

    rho: float

    def __post_init__(self):
        rho = _real(self.rho, "rho")
        if rho <= 0:
            raise ValueError(f"'rho' must be in (0, inf]; got {rho}.")
        object.__setattr__(self, "rho", rho)

    @property
    def is_private(self):
        return math.isfinite(self.rho)

    @property
    def certified(self):
        return True

    def to_zcdp(self):
        return self

    def to_approx_dp(self, delta, method="optimal"):
        """Convert to (epsilon, delta)-DP.

        ``method="standard"`` is ``rho + 2 sqrt(rho ln(1/delta))`` (Bun &
        Steinke 2016, Prop. 1.3); ``"optimal"`` is the tighter conversion of
        Canonne, Kamath & Steinke (2020, Prop. 12 / Cor. 13).
        """
        delta = check_delta(delta, allow_zero=False)
        return ApproxDP(zcdp_to_approx_dp(self.rho, delta, method=method), delta, rho=self.rho)

    def epsilon_at(self, delta, method="optimal"):
        delta = check_delta(delta)
        return math.inf if delta == 0 else zcdp_to_approx_dp(self.rho, delta, method=method)

    def to_dict(self):
        return {"type": "zcdp", "rho": _json_number(self.rho)}

    def __str__(self):
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

    claimed: object
    reason: str
    holds: Optional[object] = None

    def __post_init__(self):
        for name in ("claimed", "holds"):
            value = getattr(self, name)
            if value is None and name == "holds":
                continue
            if not isinstance(value, (PureDP, ApproxDP, ZCDP)):
                raise TypeError(f"'{name}' must be a PureDP, ApproxDP or ZCDP guarantee; got {value!r}.")
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValueError(f"'reason' must be a non-empty string; got {self.reason!r}.")

    @property
    def is_private(self):
        return self.holds is not None and self.holds.is_private

    @property
    def certified(self):
        return False

    def epsilon_at(self, delta, method="optimal"):
        """The epsilon of the guarantee that *holds* (``inf`` if none is known)."""
        return math.inf if self.holds is None else self.holds.epsilon_at(delta, method)

    def to_dict(self):
        return {
            "type": "uncertified",
            "claimed": self.claimed.to_dict(),
            "reason": self.reason,
            "holds": None if self.holds is None else self.holds.to_dict(),
        }

    def __str__(self):
        return f"UNCERTIFIED claim of {self.claimed} ({self.reason})"


Guarantee = (PureDP, ApproxDP, ZCDP, Uncertified)
