"""Composition of guarantees: the one place that adds privacy losses up.

Every guarantee a composite procedure reports (a private centre and the
second moment about it, the releases of a multi-site fit, a bound chosen
privately and the release that uses it) and every total an
:class:`~dpmoments.Accountant` checks is computed here from its parts, never
restated by hand. An :class:`~dpmoments.privacy.Uncertified` part makes the
whole :class:`~dpmoments.privacy.Uncertified`: its claim composes the parts'
claims, and what holds composes what holds for each part (``None`` when some
part has no known guarantee).

Rules
-----
``"basic"``
    Sequential composition: epsilons add, deltas add (Dwork & Roth Thm 3.16;
    it also holds when each part's parameters are chosen adaptively).
``"zcdp"``
    Parts that carry a zCDP parameter (zCDP parts, Gaussian releases, and
    epsilon-DP parts as ``epsilon^2/2``) add their rhos (Bun & Steinke 2016,
    Lemma 2.3); (epsilon, delta) parts without one add as the ``xi`` of
    approximate zCDP (ibid. §8). The total converts to (epsilon, ``delta``)
    by the optimal conversion of Canonne, Kamath & Steinke (2020).
``"advanced"``
    Dwork & Roth Thm 3.20 with slack ``delta_slack``, for parts whose
    parameters are fixed in advance (the better of it and basic).
"""

import math

from .._validation import check_delta, check_option
from .conversions import advanced_composition, zcdp_to_approx_dp
from .guarantees import ApproxDP, PureDP, Uncertified, ZCDP

__all__ = ["compose", "parallel", "COMPOSE_RULES"]

COMPOSE_RULES = ("basic", "zcdp", "advanced")
_DELTA_CAP = 1.0 - 1e-12  # a composed delta at or above 1 is vacuous; keep it a valid ApproxDP


def compose(guarantees, *, composition="basic", delta=None, delta_slack=None):
    """The guarantee that sequential releases on the same data compose to.

    Parameters
    ----------
    guarantees : iterable of PureDP, ApproxDP, ZCDP or Uncertified
    composition : {"basic", "zcdp", "advanced"}, default="basic"
    delta : float in (0, 1), optional
        ``"zcdp"`` only: state the total as (epsilon, ``delta``)-DP. Without
        it, zCDP parts alone compose to :class:`ZCDP`, and otherwise to the
        better of basic composition and the zCDP total converted at the
        parts' summed delta.
    delta_slack : float in (0, 1), optional
        ``"advanced"`` only (required there).

    Examples
    --------
    >>> from dpmoments.privacy import ApproxDP, PureDP
    >>> str(compose([PureDP(0.2), ApproxDP(0.8, 1e-6)]))
    '(1, 1e-06)-DP'
    """
    check_option(composition, "composition", COMPOSE_RULES)
    guarantees = _guarantees(guarantees, " to compose")
    if any(not g.certified for g in guarantees):
        return _compose_uncertified(guarantees, composition, delta, delta_slack)
    if any(not g.is_private for g in guarantees):
        return PureDP(math.inf)
    if composition == "zcdp":
        return _zcdp(guarantees, delta)
    total = basic_total(guarantees)
    if composition == "advanced":
        return _advanced(guarantees, total, delta_slack)
    return total


def _guarantees(guarantees, purpose=""):
    """``guarantees`` as a non-empty list of privacy guarantees (one-line errors otherwise)."""
    guarantees = list(guarantees)
    if not guarantees:
        raise ValueError(f"'guarantees' must hold at least one guarantee{purpose}.")
    for g in guarantees:
        if not isinstance(g, (PureDP, ApproxDP, ZCDP, Uncertified)):
            raise TypeError(f"'guarantees' must hold privacy guarantees; got {g!r}.")
    return guarantees


def parallel(guarantees):
    """What holds for every part when each acts on its own disjoint block of the data.

    Parallel composition (McSherry 2009): a record lies in one block, so the whole
    satisfies the weakest part's guarantee; with parts of different types the result is
    the largest epsilon, delta and rho of any part (each part implies it). An
    ``Uncertified`` part makes the whole ``Uncertified`` as in :func:`compose`. Used for
    the sites of a multi-site release (each site's rows are its own).

    Examples
    --------
    >>> from dpmoments.privacy import ApproxDP
    >>> str(parallel([ApproxDP(0.5, 1e-6), ApproxDP(0.8, 1e-7)]))
    '(0.8, 1e-06)-DP'
    """
    guarantees = _guarantees(guarantees)
    if any(not g.certified for g in guarantees):
        return _parallel_uncertified(guarantees)
    if any(not g.is_private for g in guarantees):
        return PureDP(math.inf)
    return _weakest(guarantees)


def _parallel_uncertified(guarantees):
    """The parallel claim, and what holds where every part says what holds of it."""
    holds = [g.holding for g in guarantees]
    reasons = sorted({g.reason for g in guarantees if not g.certified})
    return Uncertified(parallel([g.claim for g in guarantees]), "; ".join(reasons),
                       None if any(h is None for h in holds) else parallel(holds))


def _weakest(guarantees):
    """The weakest of certified, private parts: the largest epsilon, delta and rho of any part."""
    if all(isinstance(g, ZCDP) for g in guarantees):
        return ZCDP(max(g.rho for g in guarantees))
    if all(isinstance(g, PureDP) for g in guarantees):
        return PureDP(max(g.epsilon for g in guarantees))
    if any(isinstance(g, ZCDP) for g in guarantees):
        raise ValueError("the parts mix zCDP with (epsilon, delta) guarantees: state them at one delta first.")
    rhos = [g.rho_or_none for g in guarantees]
    return ApproxDP(max(g.epsilon for g in guarantees), max(g.as_approx().delta for g in guarantees),
                    rho=None if None in rhos else max(rhos))


def _add(values):
    """A correctly rounded sum (``fsum``), falling back to plain addition where fsum's partials overflow."""
    values = list(values)
    try:
        return math.fsum(values)
    except OverflowError:
        return sum(values)


def basic_total(guarantees):
    """Basic composition of certified, private parts (``ValueError`` for a zCDP part)."""
    if all(isinstance(g, ZCDP) for g in guarantees):  # rhos add whatever the rule (Bun & Steinke 2016, Lemma 2.3)
        return ZCDP(_add(g.rho for g in guarantees))
    if any(isinstance(g, ZCDP) for g in guarantees):
        raise ValueError("cannot add a zCDP guarantee to (epsilon, delta) ones under basic composition; compose "
                         "with composition='zcdp'.")
    eps = _add(g.epsilon for g in guarantees)
    if all(isinstance(g, PureDP) for g in guarantees):
        return PureDP(eps)
    rhos = [g.rho_or_none for g in guarantees]
    rho = None if None in rhos else _add(rhos)
    delta = min(_add(g.as_approx().delta for g in guarantees), _DELTA_CAP)
    return ApproxDP(eps, delta, rho=rho if rho is None or math.isfinite(rho) else None)


def zcdp_parts(guarantees):
    """``(rho, xi, delta)``: summed rhos, and the summed (epsilon, delta) of parts without one."""
    rho = xi = delta = 0.0
    for g in guarantees:
        r = g.rho_or_none
        if r is not None:
            rho += r
        else:
            xi += g.epsilon
            delta += g.delta
    return rho, xi, delta


def zcdp_epsilon(rho, xi, delta_extra, delta):
    """The epsilon at ``delta`` of approximate (xi, rho)-zCDP whose events fail with ``delta_extra``."""
    remaining = delta - delta_extra
    if remaining <= 0:
        return math.inf
    return xi + (zcdp_to_approx_dp(rho, remaining) if rho > 0 else 0.0)


def _zcdp(guarantees, delta):
    rho, xi, delta_extra = zcdp_parts(guarantees)
    if delta is not None:
        delta = check_delta(delta, allow_zero=False)
        return ApproxDP(zcdp_epsilon(rho, xi, delta_extra, delta), delta, rho=None if xi else rho or None)
    if all(isinstance(g, ZCDP) for g in guarantees):
        return ZCDP(rho)
    if any(isinstance(g, ZCDP) for g in guarantees):
        raise ValueError("composing zCDP with (epsilon, delta) parts needs the target 'delta'.")
    basic = basic_total(guarantees)
    if isinstance(basic, PureDP) or xi or basic.delta == 0:
        return basic
    eps = min(basic.epsilon, zcdp_epsilon(rho, 0.0, 0.0, basic.delta))
    return ApproxDP(eps, basic.delta, rho=basic.rho)


def _advanced(guarantees, basic, delta_slack):
    if delta_slack is None:
        raise ValueError("composition='advanced' needs 'delta_slack' (the delta' of Dwork & Roth Thm 3.20).")
    delta_slack = check_delta(delta_slack, "delta_slack", allow_zero=False)
    approx = [g.as_approx() for g in guarantees]
    eps, delta = advanced_composition([g.epsilon for g in approx], [g.delta for g in approx], delta_slack)
    if eps >= basic.epsilon or delta >= 1:
        return basic
    return ApproxDP(eps, delta)


def _compose_uncertified(guarantees, composition, delta, delta_slack):
    rule = dict(composition=composition, delta=delta, delta_slack=delta_slack)
    claimed = compose([g.claim for g in guarantees], **rule)
    holds = [g.holding for g in guarantees]
    held = None if any(h is None for h in holds) else compose(holds, **rule)
    reasons = sorted({g.reason for g in guarantees if not g.certified})
    return Uncertified(claimed, "; ".join(reasons), held)
