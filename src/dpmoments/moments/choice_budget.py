"""The budget of a release with private choices, and the refusal of draws too weak for the public ``n``.

:class:`PrivateChoiceBudget` splits the total into the shares each private
choice and release spends (of ``rho`` in zCDP with Gaussian noise, of
``epsilon`` with Laplace noise) and composes what was spent;
:func:`check_draws` judges every planned draw against the public row count
(:func:`public_rows`) before the first is made. Used by
:mod:`~dpmoments.moments.private_release`, :mod:`~dpmoments.moments.coinpress`
and the tensor estimator's private bound.
"""

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..data import as_source, iter_chunks
from ..exceptions import TooFewRowsError
from ..mechanisms.laws import named
from ..privacy import ZCDP, PureDP, calibrate_gaussian, compose, zcdp_to_approx_dp
from .auto_release import minimum_on_refusal, rank_error
from .private_bounds import check_margin, least_epsilon_each
from .release import Part, em_draws

__all__ = ["CenterBudget", "PrivateChoiceBudget", "check_draws", "widen_choices", "public_rows", "refinement_steps",
           "draw_plan", "upper_share", "UPPER_SHARE", "what_for", "CHOICES_CAP", "WIDENED_NOTE", "BOUND_OPTION",
           "LOCATION_OPTION", "SCALE_SHARE", "REFINE_MEAN", "ONE_STEP_MEAN"]

BOUND_OPTION, LOCATION_OPTION = "'bound_budget'", "CenterBudget.location"  # named in refusals (the CLI renames them)
SCALE_SHARE = 0.5  # of bound_budget, when both scales and the row bound are chosen privately
# The most of the whole budget the 0.75-quantiles of the distances beside the scales drawn about the private medians
# may take from the second moment (upper_share; private_passes.column_scales)
UPPER_SHARE = 0.05
UPPER_RANK_ERROR = 0.09  # of n: the rank error that share aims at, inside the 10% a weak draw is warned at
# Shares of CenterBudget.mean taken by the refinement steps of a private location (the last mean gets the rest):
# small early steps suffice, as each only needs to shrink the error by a factor ~n / (2 z sqrt(d)).
REFINE_MEAN = (0.05, 0.05, 0.1, 0.2)  # with 2 or 3 steps, the same 0.4 in these proportions
# With one step (few rows) and a private row bound, its mean takes half of CenterBudget.mean and the final mean,
# about it at twice the row bound, the rest: the one step clips about the origin at a bound its weak draw puts near
# the rows' median norm, so as the centre it carried a clipping bias of 1-5 times its noise (iris, grunfeld,
# macrodata at epsilon = 4), which every interval had to count
ONE_STEP_MEAN = 0.5
# On a table too small for the draws at their given shares, the location and bound shares are raised together, up to
# this much of the budget in all (widen_choices): at epsilon = 1 diabetes (442 rows) runs with 13% of it, star98
# (303) with 27%, where the defaults' 15% were refused; the second moment keeps at least what this leaves.
CHOICES_CAP = 0.35
WIDENED_NOTE = "the private location and bound took"  # how the release's postprocessing says so (the CLI prints it)


class PrivateChoiceBudget:
    """Shares of the total: of rho (Gaussian, zCDP) or of epsilon (Laplace, pure); exact at epsilon = inf."""

    def __init__(self, epsilon, delta, mechanism, calibration, neighbours="replace-one"):
        self.epsilon, self.delta, self.calibration, self.parts = epsilon, delta, calibration, []
        self.neighbours = neighbours
        self.exact = math.isinf(epsilon)
        law = named(mechanism)  # a name where a release's record is asked again (cli/_release)
        self.zcdp = law is not None and law.zcdp and not law.discrete and not self.exact
        if self.zcdp and delta is None:  # as release_second_moment words it, not "must be a real number"
            raise ValueError(f"mechanism={law.name!r} needs 'delta' in (0, 1); got None.")
        self.rho = calibrate_gaussian(epsilon, delta, 1.0, calibration="zcdp")[1].rho if self.zcdp else None
        self.weakest = None  # (epsilon, what) of the weakest draw made: warned about if unreliable (_finish)
        self.also = ""  # a further remedy a refusal names (private_second_moment: every column's range)
        self.widened = None  # (given, taken, most allowed) of the private choices' shares where widen_choices ran
        self.coarsened = None  # (steps given, steps taken) of the grid where small_grid.coarser_grid made it coarser
        self.one_draw = False  # the location's last drawn bound is also the row bound (reused_bound.one_draw_grid)
        self.reused_bound = None  # that bound, once drawn
        self.draw_freed = 0.0  # the share of the row bound's draw not made there

    def widening_note(self):
        """The release's record of a small table's widened choices (:func:`widen_choices`): public values only."""
        if self.widened is None:
            return ()
        given, taken, _ = self.widened
        given += self.draw_freed  # one draw instead of two (reused_bound.py): the shares given had the other's
        return (f"{WIDENED_NOTE} {100 * taken:.0f}% of the budget instead of {100 * given:.0f}% "
                "(too few rows for their draws at the shares given; the second moment has less)",)

    def drawn(self, each, what):
        """Note a draw's epsilon: where n is private no draw is refused, so the weakest is warned about instead."""
        if math.isfinite(each) and (self.weakest is None or each < self.weakest[0]):
            self.weakest = (each, what)

    def draws(self, share, k=1):
        """(epsilon of each of ``k`` exponential-mechanism draws, their joint guarantee)."""
        if self.exact:
            return math.inf, PureDP(math.inf)
        if self.zcdp:
            return math.sqrt(8.0 * share * self.rho / k), ZCDP(share * self.rho)
        return share * self.epsilon / k, PureDP(share * self.epsilon)

    def release(self, share):
        """The (epsilon, delta, calibration) that make a release spend ``share`` of the budget."""
        if self.zcdp:  # calibrate_gaussian(..., "zcdp") turns this back into share * rho
            return dict(epsilon=zcdp_to_approx_dp(share * self.rho, self.delta), delta=self.delta,
                        calibration="zcdp")
        return dict(epsilon=share * self.epsilon, delta=self.delta, calibration=self.calibration)

    def refusal(self, share, option):
        """Refused draws (too few rows) name the smallest epsilon, or ``option``'s ``share``, that would run them."""
        return minimum_on_refusal(epsilon=self.epsilon, delta=self.delta, share=share, zcdp=self.zcdp, option=option,
                                  also=self.also, basis=self._basis())

    def _basis(self):
        """What the epsilon a refusal names assumes: the shares as given, or the small-table rules that ran."""
        grid = "" if self.coarsened is None else f" on a grid of {self.coarsened[1]} steps"
        grid += " with one draw (the location's bound reused as the row bound)" if self.one_draw else ""
        if self.widened is None:
            return f"the same shares{grid}"
        return f"the private location and bound at up to {100 * self.widened[2]:.0f}% of the budget{grid}"

    def count(self, share):
        return dict(rho=share * self.rho) if self.zcdp else dict(epsilon=share * self.epsilon)

    def record(self, label, guarantee, share, draws=None, **released):
        """A part of the budget; ``draws=(k, epsilon_each)`` for exponential-mechanism draws (recorded with it)."""
        recorded = None if draws is None or self.exact else em_draws(*draws, self.zcdp)
        self.parts.append(Part(label, guarantee, share, released, recorded))

    def total(self):
        composed = compose([p.guarantee for p in self.parts])
        return composed.to_approx_dp(self.delta) if self.zcdp else composed


def public_rows(X, counted=None):
    """The row count (public under the relations that call this): the shape, else ``counted`` by a pass.

    A dask frame counts its partitions' lengths (so it takes the steps an array of the same rows
    takes); a dask array of unknown chunk sizes: ``None``. A stream is counted by a pass unless the
    caller's first pass ``counted`` it.
    """
    src = as_source(X)
    n = src.total_rows if src.kind in ("array", "frame", "sparse", "dask") else None
    if n is not None or src.kind == "dask":
        return n
    if counted is not None:
        return int(counted)
    return sum((chunk[0] if isinstance(chunk, tuple) else chunk).shape[0] for chunk in iter_chunks(X))


def check_draws(n, budget, plan, margin=0.5):
    """Refuse before any draw when one of ``plan``'s is too weak for the public ``n``, naming what runs them ALL.

    ``plan``: ``(what, option, option share, epsilon each, bins)`` per draw.
    Each aims at a rank ``margin * n`` rows from an end at best (a median, or
    a clip target below ``n / 2`` rows: 0.5; :func:`~dpmoments.moments.private_bounds.check_margin`),
    so its smallest epsilon is ``2 (ln(bins) + 5) / (margin n)``. The refusal
    names the total epsilon at which the weakest runs (then all do: every
    draw's epsilon grows in proportion), and an option's share only when that
    option's draws are the only ones refused (raising one share does nothing
    for the others). ``margin`` may be a list, one per draw.
    """
    if n is None:
        return
    failing = []
    margins = margin if isinstance(margin, (list, tuple)) else [margin] * len(plan)
    for (what, option, option_share, each, bins), m in zip(plan, margins):
        try:
            check_margin(n, m * n, each, bins, what)
        except TooFewRowsError as err:
            failing.append((err.needed_each / err.epsilon_each, err, option, option_share))
    if failing:
        ratio, err, option, option_share = max(failing, key=lambda f: f[0])
        alone = all(f[2] == option for f in failing)
        with budget.refusal(option_share if alone else math.inf, option):
            raise err


def upper_share(n, budget, d, search):
    """The share of the budget the ``d`` columns' 0.75-quantile draws beside their scales take from the second moment
    (:func:`~dpmoments.moments.private_passes.column_scales`), 0.0 where they are not drawn; public facts only.

    The share that puts each draw's rank error (:func:`~dpmoments.moments.auto_release.rank_error`) at
    ``UPPER_RANK_ERROR`` of the public ``n`` (inside the line a weak draw is warned at), at most
    :data:`UPPER_SHARE`; none where even that share leaves a draw aimed a quarter of the rows from the top that the
    bins above the data outweigh (the rule of
    :func:`~dpmoments.moments.private_bounds.check_margin`), or where ``n`` is private (add-remove, a stream not
    counted): the second moment then keeps it and the release is the one made before these draws.
    """
    if n is None or budget.exact or d == 0:
        return 0.0
    bins = search.steps + 1
    wanted = rank_error(1.0, search) / (UPPER_RANK_ERROR * n)  # epsilon per draw for that rank error
    share = min(UPPER_SHARE, wanted ** 2 * d / (8.0 * budget.rho) if budget.zcdp else wanted * d / budget.epsilon)
    each = budget.draws(share, d)[0]
    return share if each >= least_epsilon_each(0.25 * n, bins) else 0.0


def widen_choices(n, budget, shares, plan_of):
    """The shares with the location and bound options raised where a draw of ``plan_of(shares)`` would be refused.

    Each option is raised to the least share that runs its draws (a draw's epsilon grows as the square root of its
    share in zCDP, in proportion with pure shares), the two together at most ``CHOICES_CAP`` of the budget and
    never more than half of what the second moment had; where that is not enough, the options whose draws are too
    weak share what the limit leaves beside the others' in proportion to what they need, so that
    :func:`check_draws`'s refusal names the epsilon at which this rule runs them (there the others still run).
    A function of the public ``n``, the grid and the shares only (no data); the shares still add up to the whole,
    so the guarantee is the one asked for. ``shares`` itself where nothing is refused or ``n`` is private.
    """
    options = {LOCATION_OPTION: "location", BOUND_OPTION: "bound"}
    taken = shares["location"] + shares["bound"]
    if n is None or budget.exact or taken <= 0:
        return shares
    need = {key: shares[key] for key in options.values()}
    for what, option, _, each, bins in plan_of(shares):
        try:
            check_margin(n, 0.5 * n, each, bins, what)
        except TooFewRowsError as err:
            ratio = err.needed_each / err.epsilon_each
            key = options[option]
            need[key] = max(need[key], shares[key] * (ratio ** 2 if budget.zcdp else ratio) * (1 + 1e-9))
    failing = [key for key in need if need[key] > shares[key]]
    if not failing:
        return shares
    limit = min(CHOICES_CAP, taken + (1.0 - sum(shares.values())) / 2.0)
    room = limit - sum(shares[key] for key in need if key not in failing)  # an option whose draws run keeps its share
    # the shares given are already at the cap: the caller's, not moved between options
    if room <= sum(shares[key] for key in failing):
        return shares
    fit = _fit(room, [(shares[key], need[key]) for key in failing])  # below 1: refused, at the shares whose
    widened = {**shares, **{key: max(shares[key], need[key] * fit) for key in failing}}  # epsilon it names
    budget.widened = (taken, sum(widened[key] for key in need), limit)
    return widened


def _fit(room, options):
    """The largest ``r <= 1`` with ``sum(max(given, need * r)) <= room`` over ``options`` (given, need) pairs: the
    shares the rule takes at the smallest epsilon where it runs are these ones at this epsilon (each need scales as
    ``r``, the reciprocal of the growth of rho or epsilon), so a refusal at them names that epsilon."""
    def total(r):
        return sum(max(given, need * r) for given, need in options)

    if total(1.0) <= room:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if total(mid) <= room else (low, mid)
    return low


def what_for(label):
    return "row_norm='auto'" if label == "row_norm" else "center='private' without a prior"


def refinement_steps(n, d, budget, share, scale, search):
    """How many refinement steps: as many as leave each draw reliable, from public quantities only.

    A bound draw is reliable when its rank error is within a tenth of ``n``
    (as :func:`~dpmoments.moments.auto_release.warn_unreliable`). With scales,
    the ``d`` coarse column medians and ``d`` coarse scales split a draw's
    share between them, and one drawn far off (a scale of 1e-6 for a column
    of spread 0.1, say) would multiply that column by 1e5 in every later
    step: each must stay within the middle half of its column's ranks, with
    probability ``1 - e^-5`` jointly over the ``2d`` draws. ``n`` is public
    under replace-one and zero-out (a stream is counted by one pass); under
    add-remove, or for a dask collection of unknown length, every step is
    taken and a weak draw is warned about afterwards.
    """
    if n is None:
        return len(REFINE_MEAN)

    def reliable(steps):
        split = share / (steps + 2 * (scale is not None))
        if rank_error(budget.draws(split)[0], search) > 0.1 * n:
            return False
        return scale is None or \
            rank_error(budget.draws(split, d)[0], search, t=5.0 + math.log(2 * d)) <= 0.25 * n

    return next((steps for steps in range(len(REFINE_MEAN), 1, -1) if reliable(steps)),
                1 if scale is None else 0)  # one step from the origin; with scales, the medians alone


def draw_plan(d, budget, shares, scale, auto, steps, bounds):
    """Every draw a private location leads to: ``(what, option, option share, epsilon each, bins)``, in order."""
    loc, unsigned, signed = shares["location"], bounds.search.steps + 1, 2 * bounds.search.steps + 2
    medians = "private column medians (center='private', no prior)"
    if steps == 0:
        plan = [(medians, LOCATION_OPTION, loc, budget.draws(loc, d)[0], signed)]
    else:
        each = budget.draws(loc / (steps + 2 * (scale is not None)))[0]
        plan = [(medians, LOCATION_OPTION, loc, budget.draws(loc / (steps + 2), d)[0], signed),
                ("private coarse column scales (scale='private')", LOCATION_OPTION, loc,
                 budget.draws(loc / (steps + 2), d)[0], unsigned)] if scale is not None else []
        plan.append((f"private location ({what_for('location')})", LOCATION_OPTION, loc, each, unsigned))
    bound = shares["bound"]
    scale_share = bound * (SCALE_SHARE if auto else 1.0) if scale is not None else 0.0
    if scale is not None:
        plan.append(("private column scales (scale='private')", BOUND_OPTION, bound, budget.draws(scale_share, d)[0],
                     unsigned))
    if auto:
        share = (bound - scale_share) * (1.0 - bounds.diagnostic)
        plan.append((f"private row_norm ({what_for('row_norm')})", BOUND_OPTION, bound, budget.draws(share)[0],
                     unsigned))
    return plan


@dataclass(frozen=True)
class CenterBudget:
    """How a private centre shares the budget with the second moment.

    ``mean`` is the fraction of the budget spent on the private mean; the
    rest goes to the second moment of the rows centred at that private mean
    (and to any private bound or scales). The parts compose to the
    estimator's (epsilon, delta); with Gaussian noise the fractions are of
    rho, in zCDP (:mod:`dpmoments.moments.private_release`).

    ``prior`` is a *public* guess of the centre. The mean is released as
    ``prior + mean(clip(x - prior))``, so rows are clipped around the guess
    rather than around the origin: for data far from zero (log intensities,
    say) clipping around the origin would bias the mean. Without a prior
    (the default), where to clip is chosen privately and refined, the draws
    paid from ``location`` and the refining means from ``mean``: from the
    origin (or, with ``scale="private"``, the private column medians), up to
    four steps each draw a bound on ``||x - c||`` and move ``c`` by the mean
    clipped about ``c`` at it, so that data far from the origin are centred
    as well as data near it (``docs/bounds.md``, "Refining the location"). Give
    ``prior=(0, ..., 0)`` to clip around the origin at a public bound for
    free.
    """

    mean: float = 0.2
    prior: Optional[tuple] = None
    location: float = 0.05

    def __post_init__(self):
        for name in ("mean", "location"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
                raise ValueError(f"'{name}' must be a fraction in (0, 1); got {value!r}.")
        if self.prior is not None:
            prior = np.asarray(self.prior, dtype=float)
            if prior.ndim != 1 or not np.all(np.isfinite(prior)):
                raise ValueError(f"'prior' must be a finite 1-D vector (a public guess of the centre); got {self.prior!r}.")
            object.__setattr__(self, "prior", tuple(prior.tolist()))

    @property
    def second_moment(self):
        return 1.0 - self.mean
