r"""Typed budget splits for estimators that make many releases (private IRLS).

Private IRLS (Park & Welling 2016; ``docs/algorithms.md`` §3) makes ``2J``
releases: a first moment ``A`` and a second moment ``B`` in each of ``J``
iterations. :class:`IRLSBudget` says what each release gets and what they
compose to, and :func:`irls_budget` builds one from a total ``(epsilon,
delta)`` under one of four accountings:

``"zcdp"`` (default, correct)
    ``rho`` is the largest zCDP parameter whose optimal conversion fits
    ``(epsilon, delta)`` (Canonne, Kamath & Steinke 2020); each iteration
    gets ``rho / J``, split ``split : 1 - split`` between ``A`` and ``B``.
    Gaussian releases get ``ZCDP(rho_i)``; a Laplace release gets the pure
    ``epsilon_i = sqrt(2 rho_i)`` (epsilon-DP implies ``epsilon^2/2``-zCDP).
``"basic"``
    sequential composition: the epsilons (and the deltas of the Gaussian
    releases) add up to the total.
``"advanced"``
    Dwork & Roth Thm 3.20 with slack ``delta_slack``; the per-release
    epsilons are the largest that compose to ``epsilon`` (never smaller than
    the basic ones, since basic composition is also valid).
``"cdp-paper"``
    Park & Welling's Dwork--Rothblum CDP arithmetic, reproduced: every
    release gets ``epsilon' = sqrt(epsilon / J)``. It *overspends*: the mean
    privacy loss of ``2J`` ``epsilon'``-DP steps is
    ``J epsilon' (e^{epsilon'} - 1) = sqrt(epsilon J)(e^{sqrt(epsilon/J)} - 1) > epsilon``
    (``docs/algorithms.md`` §3.6.2). The budget records that value and what does
    hold in zCDP; estimators report the result as ``Uncertified``.

Per-release guarantees are ``ZCDP`` (Gaussian, zCDP accounting), ``PureDP``
(Laplace), ``ApproxDP`` (Gaussian, basic/advanced/cdp-paper accounting) or,
for the Wishart second moment, ``Uncertified`` (its claimed epsilon; nothing
is known to hold). Every total is :func:`dpmoments.privacy.compose` of the
``2J`` releases under the accounting's rule, never a restated target.
"""

import math
from dataclasses import dataclass
from typing import Optional

from .._validation import check_delta, check_epsilon, check_int, check_option
from ..mechanisms.laws import GAUSSIAN, LAPLACE, WISHART, as_mechanism
from ..privacy import ApproxDP, PureDP, Uncertified, ZCDP, calibrate_gaussian, compose

__all__ = ["IRLSBudget", "irls_budget", "ACCOUNTINGS"]

ACCOUNTINGS = ("zcdp", "basic", "advanced", "cdp-paper")
FIRST_MOMENTS = (GAUSSIAN, LAPLACE)
SECOND_MOMENTS = (GAUSSIAN, WISHART)  # the paper's Wishart W_d(d+1, .), uncertified
WISHART_REASON = (
    "Park & Welling's Wishart second moment W_d(d+1, .) is not epsilon-DP: the support of B + W depends on B; "
    "no finite guarantee is known"
)


@dataclass(frozen=True)
class IRLSBudget:
    """What each release of one private-IRLS iteration gets, and the composed total.

    Attributes
    ----------
    first_moment, second_moment : PureDP, ApproxDP, ZCDP or Uncertified
        The guarantee of the ``A`` (resp. ``B``) release in *each* iteration.
        For the Wishart second moment it is ``Uncertified``: the paper's claim.
    n_iter : int
        ``J``: the ``2J`` releases are ``J`` copies of the pair.
    accounting : str
        One of ``"zcdp"``, ``"basic"``, ``"advanced"``, ``"cdp-paper"``.
    total : ApproxDP, PureDP or Uncertified
        What the ``2J`` releases compose to under ``accounting``; for
        ``"cdp-paper"`` ``Uncertified``: the user's target is claimed, the
        arithmetic does not meet it (see ``cdp_mean_loss``), and what holds is
        the zCDP composition of the releases.
    rho : float or None
        The total zCDP parameter when every release has one (always for
        ``"zcdp"``; ``None`` when a release is Wishart).
    delta_slack : float or None
        The slack of advanced composition.
    cdp_mean_loss : float or None
        ``"cdp-paper"`` only: the true Dwork--Rothblum mean loss
        ``J eps' (e^{eps'} - 1)`` of the paper's choice, to compare with
        the claimed ``epsilon``.
    """

    first_moment: object
    second_moment: object
    n_iter: int
    accounting: str
    total: object
    rho: Optional[float] = None
    delta_slack: Optional[float] = None
    cdp_mean_loss: Optional[float] = None

    def releases(self):
        """The ``2J`` per-release guarantees, in release order (A, B, A, B, ...)."""
        return (self.first_moment, self.second_moment) * self.n_iter

    def to_dict(self):
        out = {
            "accounting": self.accounting,
            "n_iter": self.n_iter,
            "first_moment_per_iteration": self.first_moment.to_dict(),
            "second_moment_per_iteration": self.second_moment.to_dict(),
            "total": self.total.to_dict(),
            "rho": self.rho,
        }
        if self.delta_slack is not None:
            out["delta_slack"] = self.delta_slack
        if self.cdp_mean_loss is not None:
            out["cdp_mean_loss"] = self.cdp_mean_loss
        return out


def irls_budget(epsilon, delta, n_iter, *, accounting="zcdp", first_moment="gaussian",
                second_moment="gaussian", split=0.5, delta_slack=None):
    """Split a total budget over the ``2J`` releases of private IRLS.

    Parameters
    ----------
    epsilon : float in (0, inf)
    delta : float in [0, 1)
        Must be > 0 when a release is Gaussian (or for ``"zcdp"``, whose
        conversion needs it).
    n_iter : int >= 1
    accounting : {"zcdp", "basic", "advanced", "cdp-paper"}, default="zcdp"
    first_moment : {"gaussian", "laplace"}, default="gaussian"
    second_moment : {"gaussian", "wishart"}, default="gaussian"
    split : float in (0, 1), default=0.5
        Share of each iteration's budget given to the first moment (ignored
        by ``"cdp-paper"``, where every release gets ``sqrt(epsilon/J)``).
    delta_slack : float, optional
        ``"advanced"`` only; default ``delta / 2``.

    Returns
    -------
    IRLSBudget

    Examples
    --------
    >>> b = irls_budget(1.0, 1e-6, 5)
    >>> b.first_moment == b.second_moment, b.total.epsilon <= 1.0
    (True, True)
    >>> round(irls_budget(1.0, 1e-6, 10, accounting="cdp-paper").cdp_mean_loss, 3)
    1.176
    """
    epsilon = check_epsilon(epsilon, allow_inf=False)
    delta = check_delta(delta)
    n_iter = check_int(n_iter, "n_iter", minimum=1)
    accounting = check_option(accounting, "accounting", ACCOUNTINGS)
    kinds = moment_laws(first_moment, second_moment)
    if isinstance(split, bool) or not isinstance(split, (int, float)) or not 0 < split < 1:
        raise ValueError(f"'split' must be a fraction in (0, 1); got {split!r}.")
    n_gauss = n_iter * sum(kind.needs_delta for kind in kinds)
    if delta == 0 and (n_gauss or accounting == "zcdp"):
        raise ValueError(
            f"'delta' must be in (0, 1) for accounting={accounting!r} with Gaussian releases; got {delta}."
        )
    if accounting == "zcdp":
        return _zcdp(epsilon, delta, n_iter, kinds, split)
    if accounting == "cdp-paper":
        return _cdp_paper(epsilon, delta, n_iter, kinds)
    if accounting == "advanced":
        return _advanced(epsilon, delta, n_iter, kinds, split, n_gauss, delta_slack)
    pair = _pair(kinds, split * epsilon / n_iter, (1 - split) * epsilon / n_iter, delta / n_gauss if n_gauss else 0.0)
    return _finish(pair, n_iter, "basic", compose(pair * n_iter))


def moment_laws(first_moment, second_moment):
    """The noise laws of the first and second moments, each parsed once from its name (or taken as a value)."""
    return (as_mechanism(first_moment, "first_moment", FIRST_MOMENTS),
            as_mechanism(second_moment, "second_moment", SECOND_MOMENTS))


def _gaussian_release(eps, delta_i, calibration):
    # The guarantee the release's sigma buys: analytic calibration (basic, advanced) or the paper's classic
    # sigma = Delta sqrt(2 ln(1.25/delta)) / eps (cdp-paper; uncertified where the exact analysis fails it).
    return calibrate_gaussian(eps, delta_i, 1.0, calibration=calibration)[1]


def _wishart_claim(eps):
    return Uncertified(PureDP(eps), WISHART_REASON)


def _release(kind, eps, delta_i, calibration):
    if kind.needs_delta:
        return _gaussian_release(eps, delta_i, calibration)
    return PureDP(eps) if kind.certified else _wishart_claim(eps)


def _pair(kinds, eps_a, eps_b, delta_i, calibration="analytic"):
    return tuple(_release(kind, eps, delta_i, calibration) for kind, eps in zip(kinds, (eps_a, eps_b)))


def _finish(pair, n_iter, accounting, total, **extra):
    return IRLSBudget(pair[0], pair[1], n_iter, accounting, total, rho=total.rho_or_none, **extra)


def _zcdp(epsilon, delta, n_iter, kinds, split):
    _, g = calibrate_gaussian(epsilon, delta, 1.0, calibration="zcdp")
    pair = []
    for kind, share in zip(kinds, (split, 1 - split)):
        rho_i = share * g.rho / n_iter
        if kind.zcdp:
            pair.append(ZCDP(rho_i))
        else:  # epsilon-DP is epsilon^2/2-zCDP: the pure epsilon with the same rho
            eps_i = math.sqrt(2.0 * rho_i)
            pair.append(PureDP(eps_i) if kind.certified else _wishart_claim(eps_i))
    return _finish(tuple(pair), n_iter, "zcdp", compose(pair * n_iter, composition="zcdp", delta=delta))


def _advanced(epsilon, delta, n_iter, kinds, split, n_gauss, delta_slack):
    slack = delta / 2.0 if delta_slack is None else check_delta(delta_slack, "delta_slack", allow_zero=False)
    if not 0 < slack < delta:
        raise ValueError(f"'delta_slack' must be in (0, delta={delta}); got {slack}.")
    delta_i = (delta - slack) / n_gauss if n_gauss else 0.0

    def composed(t):
        claims = [g.claim for g in _pair(kinds, split * t, (1 - split) * t, delta_i)] * n_iter
        return compose(claims, composition="advanced", delta_slack=slack).epsilon

    # The 2J releases are known in advance, so Dwork & Roth Thm 3.20 applies to them (computed once here).
    # t = epsilon / J is basic composition's per-iteration share; advanced never does worse (compose takes the min).
    lo, hi = epsilon / n_iter, epsilon
    if composed(lo) <= epsilon:
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if composed(mid) <= epsilon else (lo, mid)
            if hi - lo <= 1e-15 * hi:
                break
    pair = _pair(kinds, split * lo, (1 - split) * lo, delta_i)
    total = compose(pair * n_iter, composition="advanced", delta_slack=slack)
    return _finish(pair, n_iter, "advanced", total, delta_slack=slack)


def _cdp_paper(epsilon, delta, n_iter, kinds):
    eps_step = math.sqrt(epsilon / n_iter)
    n_gauss = n_iter * sum(kind.needs_delta for kind in kinds)
    delta_i = delta / n_gauss if n_gauss else 0.0
    pair = _pair(kinds, eps_step, eps_step, delta_i, calibration="classic")
    mean_loss = n_iter * eps_step * math.expm1(eps_step) if eps_step < 700 else math.inf
    reason = (f"Park & Welling's CDP arithmetic (epsilon' = sqrt(epsilon/J) = {eps_step:.4g} per release) "
              f"overspends: the Dwork-Rothblum mean loss of the 2J releases is {mean_loss:.4g} > epsilon = "
              f"{epsilon:g}")
    # What holds: the zCDP composition of what each release really is (nothing, with a Wishart B).
    held = compose(pair * n_iter, composition="zcdp", delta=delta).holding
    total = Uncertified(ApproxDP(epsilon, delta), reason, holds=held)
    return _finish(pair, n_iter, "cdp-paper", total, cdp_mean_loss=mean_loss)
