"""Composition of guarantees: the one place that adds privacy losses up.

Every guarantee a composite procedure reports (a private centre and the
second moment about it, the releases of a multi-site fit, a bound chosen
privately and the release that uses it) is computed here from its parts,
never restated by hand. An :class:`~dpmoments.privacy.Uncertified` part makes
the whole :class:`~dpmoments.privacy.Uncertified`: its claim composes the
parts' claims, and what holds composes what holds for each part (``None``
when some part has no known guarantee).
"""

import math

from .._validation import check_option
from .conversions import zcdp_to_approx_dp
from .guarantees import ApproxDP, PureDP, Uncertified, ZCDP

__all__ = ["compose", "COMPOSE_RULES"]

COMPOSE_RULES = ("basic", "zcdp")


def compose(guarantees, *, composition="basic"):
    """The guarantee that sequential releases on the same data compose to.

    Parameters
    ----------
    guarantees : iterable of PureDP, ApproxDP, ZCDP or Uncertified
    composition : {"basic", "zcdp"}
        ``"basic"``: epsilons and deltas add. ``"zcdp"``: the better of that
        and zCDP composition (rhos add, converted at the summed delta) when
        every part records its rho (Gaussian releases).

    Examples
    --------
    >>> from dpmoments.privacy import ApproxDP, PureDP
    >>> str(compose([PureDP(0.2), ApproxDP(0.8, 1e-6)]))
    '(1, 1e-06)-DP'
    """
    check_option(composition, "composition", COMPOSE_RULES)
    guarantees = list(guarantees)
    if not guarantees:
        raise ValueError("'guarantees' must hold at least one guarantee to compose.")
    if any(isinstance(g, Uncertified) for g in guarantees):
        return _compose_uncertified(guarantees, composition)
    if any(not g.is_private for g in guarantees):
        return PureDP(math.inf)
    if all(isinstance(g, ZCDP) for g in guarantees):
        return ZCDP(sum(g.rho for g in guarantees))
    if all(isinstance(g, PureDP) for g in guarantees):
        return PureDP(sum(g.epsilon for g in guarantees))
    if any(isinstance(g, ZCDP) for g in guarantees):
        raise ValueError("cannot compose zCDP with (epsilon, delta) guarantees here; use one calibration.")
    parts = [ApproxDP(g.epsilon, 0.0) if isinstance(g, PureDP) else g for g in guarantees]
    eps = sum(g.epsilon for g in parts)
    delta = sum(g.delta for g in parts)
    rhos = [g.rho for g in parts]
    rho = None if None in rhos else sum(rhos)
    if composition == "zcdp" and rho is not None and delta > 0:
        eps = min(eps, zcdp_to_approx_dp(rho, min(delta, 0.999999)))
    return ApproxDP(eps, delta, rho=rho)


def _compose_uncertified(guarantees, composition):
    claimed = compose([g.claimed if isinstance(g, Uncertified) else g for g in guarantees], composition=composition)
    holds = [g.holds if isinstance(g, Uncertified) else g for g in guarantees]
    held = None if any(h is None for h in holds) else compose(holds, composition=composition)
    reasons = sorted({g.reason for g in guarantees if isinstance(g, Uncertified)})
    return Uncertified(claimed, "; ".join(reasons), held)
