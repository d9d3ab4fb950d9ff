r"""The rounds of a plan and the noise each may carry: public facts only, shared by every party.

A :class:`Round` is one release of a plan. This module lays out the choosing steps before the
moment rounds (:func:`with_choice_steps`: a private centre's location steps, then the bound
step, the moment rounds on the rest of the budget), gives each round's per-site sensitivity
(:func:`sensitivity`) and the sensitivity/std ratio a site's budget allows it
(:func:`round_targets`: a share of ``(epsilon, delta)``, or of ``rho`` in zCDP), scales a masked
round so that the aggregator's joint view meets every site's ratio (:func:`meet_joint_view`),
and decides, before any noise is solved, whether the choosing steps' noisy counts can bear
their noise (:func:`most_location_steps`, :func:`check_choice_steps`), naming when they cannot
the epsilon, and the share, at which every one of them runs. :class:`~dpmoments.multisite.plan.Plan` puts these
together once, in :meth:`~dpmoments.multisite.plan.Plan.build`.
"""

import functools
import math
from dataclasses import dataclass, replace
from collections.abc import Callable, Sequence
from typing import Any, Optional, Union, cast

import numpy as np

from .._validation import check_option, check_positive
from ..moments.auto_release import round_up
from ..privacy import calibrate_gaussian
from .location import MAX_AUTO_STEPS
from .noise import guarantee_from_ratio, joint_view
from .protocols import noise_for
from .statistics import CROSS, HISTOGRAM, LOCATION, ROUND_STATISTICS, Statistic, as_statistic
from .bounds import AutoBounds
from .location import AutoLocation
from .noise import NoisePlan
from ..privacy.guarantees import AnyGuarantee

__all__ = ["Round", "AUTO_COMPOSITION", "plan_composition", "takes_excess", "with_choice_steps", "sensitivity",
           "check_choice_layout", "round_targets", "meet_joint_view", "round_noise", "most_location_steps",
           "refused_choice_steps",
           "check_choice_steps"]

#: ``composition="auto"``: zCDP where the plan chooses a bound or centre privately (its many small rounds each a
#: share of ``rho``, as the single machine splits its private choices), else basic: split linearly, a location
#: step's 0.025 and the bound step's 0.1 of ``(epsilon, delta)`` made their counts about ten times noisier and
#: the covariance's error twice the pooled release's (benchmarks/results/sites_coverage.md).
AUTO_COMPOSITION = "auto"


@dataclass(frozen=True)
class Round:
    """One release of a plan.

    Attributes
    ----------
    statistic : {"second", "cross", "third", "excess", "histogram", "location"}
        ``"excess"``: what clipping removed from each variance (:mod:`dpmoments.moments.clipping_bias`).
        ``"histogram"``: the bound step's noisy counts of one statistic (:mod:`~dpmoments.multisite.bounds`);
        ``"location"``: the location step's per-coordinate noisy counts (:mod:`~dpmoments.multisite.location`).
    share : float in (0, 1]
        Of every site's budget.
    step : int
        Rounds of one step are asked together.
    response : {"y", "ones"}
        The cross moment's response: the site's ``y`` (bound ``response_bound``) or the
        constant 1 (bound 1: the mean).
    w_max, p : float or None, float
        IRLS: rows are weighted by ``min(w_max, 1/|y - x.theta|^(2-p))`` for the step's
        public ``theta``; the sensitivity grows by ``w_max`` (:attr:`weight`). A sampling round's
        ``w_max`` is the iterations' (the bandwidth's floor and ``psi``), and its weights are at most 1.
    bound : {"row_norm", "response_bound"} or None
        A histogram round: the bound it chooses.
    """

    statistic: str
    share: float = 1.0
    step: int = 0
    response: str = "y"
    w_max: Optional[float] = None
    p: float = 1.0
    bound: Optional[str] = None

    def __post_init__(self) -> None:
        if isinstance(self.statistic, Statistic):  # the value's name: a plan writes, ships and digests names
            object.__setattr__(self, "statistic", self.statistic.name)
        check_option(self.statistic, "statistic", ROUND_STATISTICS)
        check_option(self.response, "response", ("y", "ones"))
        if (self.stat is HISTOGRAM) != (self.bound is not None):
            raise ValueError("a round has a 'bound' exactly when it is a histogram round.")
        if self.bound is not None:
            check_option(self.bound, "bound", ("row_norm", "response_bound"))
        if isinstance(self.share, bool) or not isinstance(self.share, (int, float)) or not 0 < self.share <= 1:
            raise ValueError(f"a round's 'share' must be in (0, 1]; got {self.share!r}.")
        if self.w_max is not None:
            check_positive(self.w_max, "w_max")
            if not 1.0 <= float(self.p) <= 2.0:
                raise ValueError(f"'p' must be in [1, 2]; got {self.p!r}.")

    @property
    def stat(self) -> Statistic:
        """The statistic's value (:mod:`~dpmoments.multisite.statistics`): what is asked of it instead of its name."""
        return as_statistic(self.statistic)

    @property
    def weight(self) -> float:
        """What the round's weights multiply its sensitivity and entry bound by: ``w_max`` in IRLS's weighted
        rounds, 1 elsewhere (the sampling rounds' weights lie in [0, 1] whatever ``w_max``)."""
        return float(self.w_max) if self.w_max is not None and self.stat.weight_scaled else 1.0


def plan_composition(composition: Any, row_norm: Any, response_bound: Any, center: Any) -> Any:
    """``"auto"`` (:data:`AUTO_COMPOSITION`): ``"zcdp"`` where a bound or the centre is chosen privately, else
    ``"basic"``; any other value as given."""
    if not (isinstance(composition, str) and composition == AUTO_COMPOSITION):
        return composition
    chosen = any(isinstance(v, str) and v in ("auto", "private") for v in (row_norm, response_bound, center))
    return "zcdp" if chosen else "basic"


def takes_excess(auto: Optional[AutoBounds], rows: str, rank: Optional[int], rounds: Sequence[Round]) -> bool:
    """Whether a plan releases the clipping excess (an ``"excess"`` round): one second moment of the rows ``x``
    (not DPdisPCA's factors) clipped at a ``row_norm`` its bound step chooses, with ``auto.bias > 0``."""
    return auto is not None and "row_norm" in auto.names and auto.bias > 0 and rows == "x" and rank is None and \
        [r.statistic for r in rounds] == ["second"]


def with_choice_steps(rounds: Sequence[Round], auto: Optional[AutoBounds], location: Optional[AutoLocation],
                      excess: bool = False) -> tuple[Round, ...]:
    """The choosing steps, then ``rounds`` on the rest of the budget (and a private centre's mean round).

    The location steps come first (``location.steps`` of them, ``location.share`` split equally)
    when the centre is private; then
    the bound step (``auto.share``, split equally between its names); the moment rounds follow,
    their shares scaled to what is left, with (``excess``) the clipping excess (``auto.bias``) and the
    mean round (``location.mean``, last) asked with them.
    """
    pre, rest = [], 1.0
    steps = 0 if location is None else cast(int, location.steps)  # resolved by Plan.build before the rounds
    if location is not None:
        pre += [Round("location", location.share / steps, k) for k in range(steps)]
        rest -= (location.share if steps else 0.0) + location.mean  # no step (the ranges alone): the mean only
    if auto is not None:
        pre += [Round("histogram", auto.share / len(auto.names), len(pre), bound=name) for name in auto.names]
        rest -= auto.share + (auto.bias if excess else 0.0)
    bias = auto.bias if excess and auto is not None else None  # the clipping excess: only with a bound step
    if rest <= 1e-9:
        shares = {"location": None if location is None else location.share,
                  "mean": None if location is None else location.mean, "bound": None if auto is None else auto.share,
                  "clipping": bias}
        named = ", ".join(f"{k}={v:g}" for k, v in shares.items() if v)
        raise ValueError(f"the shares of the private choices ({named}) add up to 1 or more and leave nothing for the "
                         "release; lower them.")
    shift = steps + int(auto is not None)
    moments = tuple(replace(r, share=r.share * rest, step=r.step + shift) for r in rounds)
    clipping = (Round("excess", bias, shift),) if bias is not None else ()
    mean = () if location is None else (Round("cross", location.mean, shift, response="ones"),)
    return tuple(pre) + moments + clipping + mean


def sensitivity(rnd: Round, n_samples: int, *, n_features: int, row_norm: float, response_bound: Optional[float],
                neighbours: str) -> float:
    """L2 sensitivity of one site's statistic for one round (the moments layer's table, times ``w_max``)."""
    r = 1.0 if rnd.response == "ones" else response_bound
    if rnd.stat is CROSS and r is None:
        raise ValueError("a cross-moment round needs the public 'response_bound'.")
    sens = rnd.stat.sensitivity(n_samples, n_features=n_features, row_norm=row_norm, response_bound=r,
                                neighbours=neighbours)
    return sens * rnd.weight


def weights_at(rounds: tuple[Round, ...], per_bound: Optional[float], response_bound: Any) -> tuple[Round, ...]:
    """The rounds with IRLS's ``w_max = per_bound / B`` at the chosen response bound ``B`` (a plan's option
    ``w_max_per_bound``: its unit plan carries ``per_bound``); the rounds as they are when it has none."""
    if per_bound is None:
        return rounds
    return tuple(r if r.w_max is None else replace(r, w_max=float(per_bound) / float(response_bound))
                 for r in rounds)


def round_targets(epsilon: float, delta: float, rounds: Sequence[Round], composition: str, calibration: str,
                  exact: bool = False) -> tuple[tuple[float, float, AnyGuarantee], ...]:
    """Per round: (sensitivity/std ratio the budget allows, the round's delta, the claim at that ratio).

    ``exact``: the ratio of the exact (analytic) curve even for ``calibration="classic"``: a
    guarantee against the aggregator is always computed exactly.
    """
    return _targets(float(epsilon), float(delta), tuple(r.share for r in rounds), composition, calibration, exact)


@functools.lru_cache(maxsize=256)
def _targets(epsilon: float, delta: float, shares: tuple[float, ...], composition: str, calibration: str,
             exact: bool) -> tuple[tuple[float, float, AnyGuarantee], ...]:
    out = []
    if composition == "zcdp" or calibration == "zcdp":
        rho = calibrate_gaussian(epsilon, delta, 1.0, "zcdp")[1].rho
        for share in shares:
            ratio = math.sqrt(2.0 * share * rho)
            out.append((ratio, delta * share, guarantee_from_ratio(ratio, delta, "zcdp")))
        return tuple(out)
    cal = "analytic" if exact and calibration == "classic" else calibration
    for share in shares:
        sigma, claim = calibrate_gaussian(share * epsilon, share * delta, 1.0, cal)
        out.append((1.0 / sigma, share * delta, claim))
    return tuple(out)


def meet_joint_view(plan: NoisePlan, solution: Optional[dict[str, Any]], ratios: Any,
                    colluders: int) -> tuple[NoisePlan, Optional[dict[str, Any]]]:
    """Scale ``plan`` so that every site's joint view (with ``colluders``) meets its allowed ratio."""
    c = min(colluders, plan.n_sites - 1)
    k = max(1.0, max(joint_view(plan, s, c).delta_m / ratios[i] for i, s in enumerate(plan.sites)))
    k *= 1 + 1e-12  # rounding never tips a guarantee past its budget
    if solution is not None:
        solution = dict(solution, scale_for_aggregator=k)
        if "tau_pool" in solution:
            solution["tau_pool"] *= k
    return plan.scaled(k), solution


def choice_noise_sd(rnd: Round, epsilon: Sequence[float], delta: Sequence[float], *, n_features: int,
                    composition: str, calibration: str, exact: bool) -> float:
    """The per-count std of the summed noisy counts of a choosing round: each site's own noise, public facts only.

    Each site adds noise of std ``sensitivity / ratio_s`` (its ratio for the round's share), independent of
    every other site's (no masks: :mod:`~dpmoments.multisite.bounds`), so the sum's is their root sum of squares.
    """
    sens = sensitivity(rnd, 1, n_features=n_features, row_norm=1.0, response_bound=None, neighbours="replace-one")
    ratios = [_targets(float(e), float(d), (rnd.share,), composition, calibration, exact)[0][0]
              for e, d in zip(epsilon, delta)]
    return math.sqrt(sum((sens / r) ** 2 for r in ratios))


def round_noise(k: int, rounds: Sequence[Round], sites: Sequence[str], n: Sequence[int], mu: Any,
                eps: Sequence[float], dls: Sequence[float], facts: dict[str, Any], masking: str, colluders: int,
                solve: dict[str, Any]) -> tuple[NoisePlan, Optional[dict[str, Any]]]:
    """Round ``k``'s :class:`~.noise.NoisePlan` and solution: each site's std from its ratio, the masks of the
    protocol (none for the choosing steps: each site's own noise, see .bounds), met against the joint view."""
    rnd, S, off = rounds[k], len(sites), math.isinf(eps[0])
    sens = np.array([sensitivity(rnd, m, **facts) for m in n])
    tau, ratios = np.zeros(S), np.full(S, math.inf)
    if not off:
        ratios = np.array([round_targets(e, d, rounds, solve["composition"], solve["calibration"],
                                         exact=solve["exact"])[k][0] for e, d in zip(eps, dls)])
        tau = sens / ratios
    masking = "none" if rnd.stat.counts else masking
    plan, solution = noise_for(masking, sites, n, mu, tau, sens, np.array(dls) * rnd.share)
    if solve["exact"] and not off and masking != "none":  # exact: the guarantee is against the aggregator
        plan, solution = meet_joint_view(plan, solution, ratios, colluders)
    return plan, solution


def check_choice_layout(rounds: Sequence[Round], auto_names: Sequence[str], bound_step: Optional[int],
                        location_steps: Sequence[int]) -> None:
    """Refuse (one line) choosing rounds that are not where a plan's steps put them: one histogram round per
    ``auto`` bound, all in the bound step and alone there; one location round in each location step, alone."""
    bound = [r.bound for r in rounds if r.stat is HISTOGRAM]
    if bound != list(auto_names) or any((r.stat is HISTOGRAM) != (r.step == bound_step) for r in rounds):
        raise ValueError("a plan has histogram rounds exactly for its 'auto' bounds, all in its bound step and "
                         "alone there.")
    if any((r.stat is LOCATION) != (r.step in location_steps) for r in rounds) or \
            any(sum(r.step == k for r in rounds) != 1 for k in location_steps):
        raise ValueError("a plan with a private centre has one location round in each of its location steps, "
                         "alone there; no other plan has one.")


def most_location_steps(location: AutoLocation, n_total: int, epsilon: Sequence[float], delta: Sequence[float],
                        **solve: Any) -> int:
    """The most location steps (up to :data:`~dpmoments.multisite.location.MAX_AUTO_STEPS`) whose noisy counts the
    ``n_total`` rows can bear, each paid ``location.share / steps``; 1 when none can (that step is then refused)."""
    for steps in range(MAX_AUTO_STEPS, 1, -1):
        sd = choice_noise_sd(Round("location", location.share / steps), epsilon, delta, **solve)
        if location.bears(n_total, sd):
            return steps
    return 1


def refused_choice_steps(rounds: Sequence[Round], auto: Optional[AutoBounds], location: Optional[AutoLocation],
                         n_total: int, epsilon: Sequence[float], delta: Sequence[float], **solve: Any
                         ) -> list[tuple[Round, Any, float]]:
    """The choosing rounds whose noisy counts the ``n_total`` rows cannot bear: ``(round, owner, noise sd)`` each
    (public facts only; one noise solve per round, none of :func:`check_choice_steps`'s search for the epsilon)."""
    failing = []
    for rnd in rounds:
        if rnd.stat.counts:
            # a choosing round exists only with what it chooses: its AutoBounds or AutoLocation
            owner = cast(Union[AutoBounds, AutoLocation], auto if rnd.stat is HISTOGRAM else location)
            sd = choice_noise_sd(rnd, epsilon, delta, **solve)
            if sd * (1 - 1e-12) > owner.max_noise_sd(n_total):
                failing.append((rnd, owner, sd))
    return failing


def check_choice_steps(rounds: Sequence[Round], auto: Optional[AutoBounds], location: Optional[AutoLocation],
                       n_total: int, epsilon: Sequence[float], delta: Sequence[float], **solve: Any) -> None:
    """Refuse (one line) a plan whose choosing steps' noisy counts the ``n_total`` rows cannot bear.

    Decided on every choosing round before any noise is solved, from public facts only (the
    row counts, the budgets, ``d``, the grids). The refusal names the epsilon at which every
    one of them runs (every site's epsilon multiplied by one factor: each round's noise falls
    as it grows), and the share of the option that pays for the refused steps when they are
    all that option's (the bound step's ``'bound_budget'``, the location steps'
    ``CenterBudget.location``): raising one option's share does nothing for the other's.
    """
    failing = refused_choice_steps(rounds, auto, location, n_total, epsilon, delta, **solve)
    if not failing:
        return

    def runs(rnd: Round, owner: Union[AutoBounds, AutoLocation], eps: Sequence[float] = epsilon,
             share: Optional[float] = None) -> bool:
        changed = rnd if share is None else replace(rnd, share=share)
        return choice_noise_sd(changed, eps, delta, **solve) <= owner.max_noise_sd(n_total)

    def runs_at(failed: tuple[Round, Any, float], c: float) -> bool:  # every site's epsilon times c
        return runs(failed[0], failed[1], eps=[c * e for e in epsilon])

    factor = max(_least(functools.partial(runs_at, f), 1.0) for f in failing)
    named = (f"runs from epsilon {round_up(factor * epsilon[0]):g}" if len(set(epsilon)) == 1 else
             f"runs when every site's epsilon is multiplied by {round_up(factor):g}")
    share = _option_share([f[:2] for f in failing], auto, location, runs)
    text = f"with the same shares every step of the plan {named}" + (f", or at this epsilon from {share}" if share
                                                                      else "")
    rnd, owner, sd = max(failing, key=lambda f: f[2] / f[1].max_noise_sd(n_total))
    if isinstance(owner, AutoBounds):
        owner.check_rows(n_total, sd, str(rnd.bound), runs=text)
    else:
        owner.check_rows(n_total, sd, runs=text)


def _option_share(failing: list[Any], auto: Optional[AutoBounds], location: Optional[AutoLocation],
                  runs: Callable[..., bool]) -> Optional[str]:
    """``"<option> <share>"`` at which every refused step runs, if they are all one option's and it leaves room."""
    owners = {id(owner) for _, owner in failing}
    if len(owners) != 1:
        return None
    owner = failing[0][1]
    if isinstance(owner, AutoBounds):
        option, parts = "'bound_budget'", len(owner.names)
        others = 0.0 if location is None else location.share + location.mean
    else:
        option, parts = "CenterBudget.location", cast(int, owner.steps)
        others = owner.mean + (0.0 if auto is None else auto.share)
    room = min(0.5, 1.0 - others - 1e-6)  # a share above one half leaves too little for the release to suggest
    if not all(runs(rnd, owner, share=room / parts) for rnd, owner in failing):
        return None
    share = _least(lambda s: all(runs(rnd, owner, share=min(s, room) / parts) for rnd, owner in failing),
                   failing[0][0].share * parts)
    share = round_up(share)
    return None if share > room else f"{option} {share:g}"


def _least(ok: Callable[[float], bool], start: float) -> float:
    """The smallest ``x >= start`` with ``ok(x)`` (``ok`` monotone), to a relative 1e-9 from above; ``inf`` if none
    below ``start * 1e12``."""
    low, high = start, start
    while not ok(high):
        low, high = high, high * 2.0
        if high > start * 1e12:
            return math.inf
    while high > low * (1 + 1e-9):
        mid = math.sqrt(low * high)
        low, high = (low, mid) if ok(mid) else (mid, high)
    return high
