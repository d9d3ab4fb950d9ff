r"""Releases whose bounds are chosen privately: ``row_norm="auto"``, ``response_bound="auto"``.

A share of the budget (:class:`BoundBudget`, 10% by default) pays for private
quantiles of the row norms ``||x - c||`` (and of ``|y|``) on a public grid
(:mod:`~dpmoments.moments.private_bounds`); the release then runs on the rest
with those bounds, and the two compose (basic composition,
:func:`dpmoments.privacy.composition.compose`). The returned
:class:`~dpmoments.Release` lists each share in ``parts``.

Which quantile
--------------
``quantile="auto"`` (the default) aims at clipping about

.. math::

    m = \max\big(2\, \mathbb E\|N_1\|,\; 2(\ln(G + 1) + 5)/\varepsilon_b\big)

rows, where :math:`N_1` is the release's noise at ``R = r = 1`` and ``n = 1``
(Frobenius norm; public, from the calibration alone). Lowering the bound
removes noise in proportion to :math:`\mathbb E\|N\|` and adds clipping bias
in proportion to the number of rows beyond it, so the two balance near a
fixed *number* of clipped rows, whatever ``n``: the best quantile rises
towards 1 as ``n`` grows. The factor 2 was chosen on the benchmark's data
(``docs/bounds.md`` gives the comparison with 1 and 4); a fixed 0.95 clips 5% of the rows at
every ``n``, and its bias then dominates from ``n = 10^4`` on. The second
term keeps the target above the draw's own rank error (``epsilon_b`` is the
draw's epsilon, ``G + 1`` the number of bins): below it, the many empty bins
above the data, each scoring ``-m``, would together outweigh the right one.

The clipping diagnostic
-----------------------
A further slice of the share (``diagnostic``, 10% of it) releases the
number of rows beyond the chosen row bound with Laplace noise
(:func:`~dpmoments.moments.private_bounds.noisy_clipped_count`); the release
reports the noisy fraction and its noise, and a
:class:`~dpmoments.exceptions.BoundWarning` is raised when it is more than
10% by over two noise standard deviations.

``epsilon = inf``
-----------------
Nothing is private, so every draw returns the best bin exactly: the target
is then no clipped row (no noise to balance), the bound covers every row,
the release is the exact statistic (reported not private, with a
:class:`~dpmoments.exceptions.NotPrivateWarning`) and no count is released.
"""

import dataclasses
import math
import warnings
from dataclasses import dataclass, field

from .._rng import spawn
from ..exceptions import BoundWarning
from ..mechanisms.laws import ADDITIVE, offered
from ..privacy import ZCDP, PureDP, calibrate_gaussian, compose
from .binned_sums import binned_pass
# What a draw says when it is refused or lands badly, re-exported: the private choices read them from here.
from .bound_messages import (CLIPPED_WARNING, clipping_bias, minimum_on_refusal, round_up, warn_clipped,
                             warn_range_end)
from .calibrated import calibrate
from .counts import COUNT_SHARE, split_budget, splits_in_rho
from .draw_grid import draw_grid, draw_grid_note  # a small table's coarser grid (its module says why)
from .private_bounds import (TIE_PRIOR, SearchRange, as_search_range, noisy_clipped_count, quantile_pass,
                             select_quantiles)
from .release import Part, em_draws, randomness_of, release_part
from .sensitivity import moment_sensitivity
from .statistics import SECOND, as_moment
from ..data import as_source, same_file_version

__all__ = ["BoundBudget", "as_bound_budget", "is_default_share", "check_bound_budget_used", "bound_share_unused", "is_auto",
           "release_with_private_bounds", "clip_target", "choose_bounds", "sampling_quantile", "CLIPPED_WARNING",
           "RANK_ERROR_T", "minimum_on_refusal", "clipping_bias", "round_up"]

CLIP_FACTOR = 2.0   # m = CLIP_FACTOR * E||N_1||, see the module docstring
RANK_ERROR_T = 3.0  # the rank error below holds with probability 1 - e^-3 = 95%
MARGIN_T = TIE_PRIOR  # "auto" never aims at fewer clipped rows than the rank error at 1 - e^-5 = 99.3%
FIXED_LOWEST = 0.75  # choose_bounds lowers its 0.95-quantile to make room for the rank error, never below this
SAMPLING_CLIPPED_POWER = 0.5  # sampling_quantile: clip about n ** SAMPLING_CLIPPED_POWER rows


def is_auto(value):
    return isinstance(value, str) and value == "auto"


@dataclass(frozen=True)
class BoundBudget:
    """How a privately chosen bound shares the budget.

    Parameters
    ----------
    share : float in (0, 1), default 0.1
        The fraction of epsilon spent choosing bounds (and, with
        ``scale="private"``, column scales); the rest goes to the release.
    quantile : "auto" or float in (0, 1), default "auto"
        ``"auto"``: clip about ``2 E||N_1||`` rows (module docstring) where
        the release's noise is known in advance; elsewhere 0.95.
    search : SearchRange or (low, high), default SearchRange()
        The public grid: 1e-6 to 1e8 in 1000 log-spaced steps.
    diagnostic : float in [0, 1), default 0.1
        The fraction of ``share`` that releases the noisy number of clipped
        rows; 0 turns the diagnostic off.
    bias : float in [0, 1), default 0.1
        The fraction of the whole budget (beside ``share``) that releases
        what clipping at the chosen bound removed from each variance
        (:mod:`dpmoments.moments.clipping_bias`), so that the estimators'
        intervals count the clipping bias; 0 turns it off (the intervals
        then say that they leave it out).
    """

    share: float = 0.1
    quantile: object = "auto"
    search: SearchRange = field(default_factory=SearchRange)
    diagnostic: float = 0.1
    bias: float = 0.1

    def __post_init__(self):
        if isinstance(self.share, bool) or not isinstance(self.share, (int, float)) or not 0 < self.share < 1:
            raise ValueError(f"'bound_budget' must be a share in (0, 1); got {self.share!r}.")
        if not is_auto(self.quantile) and (isinstance(self.quantile, bool) or not isinstance(
                self.quantile, (int, float)) or not 0 < self.quantile < 1):
            raise ValueError(f"'quantile' must be 'auto' or in (0, 1); got {self.quantile!r}.")
        if isinstance(self.diagnostic, bool) or not isinstance(self.diagnostic, (int, float)) \
                or not 0 <= self.diagnostic < 1:
            raise ValueError(f"'diagnostic' must be a fraction in [0, 1); got {self.diagnostic!r}.")
        if isinstance(self.bias, bool) or not isinstance(self.bias, (int, float)) or not 0 <= self.bias < 1:
            raise ValueError(f"'bias' must be a share in [0, 1); got {self.bias!r}.")
        object.__setattr__(self, "search", as_search_range(self.search))

    def fixed_quantile(self):
        """The quantile where no noise-balancing rule applies (per-column scales, IRLS, model selection)."""
        return 0.95 if is_auto(self.quantile) else float(self.quantile)

    def to_dict(self):
        return {"share": self.share, "quantile": self.quantile, "search": self.search.to_dict(),
                "diagnostic": self.diagnostic, "bias": self.bias}


def as_bound_budget(bound_budget):
    """A share in (0, 1) or a :class:`BoundBudget`."""
    if isinstance(bound_budget, BoundBudget):
        return bound_budget
    if isinstance(bound_budget, bool) or not isinstance(bound_budget, (int, float)):
        raise TypeError(f"'bound_budget' must be a share in (0, 1) or a BoundBudget; got {bound_budget!r}.")
    return BoundBudget(share=float(bound_budget))


def is_default_share(bound_budget):
    """Whether the bound's share is the default one: how the library tells a share left alone from one chosen (a
    share typed equal to the default reads as the default; float32 too)."""
    return math.isclose(as_bound_budget(bound_budget).share, BoundBudget.share, rel_tol=1e-6)


def check_bound_budget_used(bound_budget, row_norm, scale):
    """Refuse a bound's share other than the default where no bound is private (a public ``row_norm`` and no private
    scales): it paid for nothing and was silently ignored (the command line refuses ``--bound-share`` there)."""
    if not is_auto(row_norm) and scale is None and not is_default_share(bound_budget):
        raise ValueError(bound_share_unused("'bound_budget'", "row_norm='auto', scale='private'") + ": leave it out.")


def bound_share_unused(option, private_bound):
    """The one wording, library and command line, of a bound's share given where the bound is public."""
    return f"{option} applies only to a private bound ({private_bound}); this run's bound is public"


def sampling_quantile(n, budget, noise_norm=0.0):
    """The quantile a bound aims at where the estimate's interval counts sampling (IRLS): public.

    A fixed 0.95-quantile clips 5% of the rows at every ``n``, and the bias that clipping gives a
    regression's slopes is about proportional to the clipped share, while the interval narrows as
    ``1/sqrt(n)``: at 300,000 rows the bias outgrew the interval (``docs/regression.md``). The target
    is the larger of two numbers of clipped rows: about ``sqrt(n)``, so that the clipped share, and
    with it the bias, falls as ``1/sqrt(n)`` like the sampling error (a fixed fraction of it); and,
    where the noise is the larger part, the covariance's balance ``CLIP_FACTOR * noise_norm``
    (``noise_norm``: the norm of the release's noise at ``n = 1`` and unit bounds, public, from the
    calibration; module docstring). The quantile is ``1 - rows / n``, never below the fixed
    quantile. ``n`` is public (replace-one); a quantile the caller set (``BoundBudget(quantile=...)``)
    is kept as given.
    """
    fixed = budget.fixed_quantile()
    if not is_auto(budget.quantile):
        return fixed
    rows = max(n ** SAMPLING_CLIPPED_POWER, CLIP_FACTOR * noise_norm)
    return max(fixed, 1.0 - rows / n)


def check_auto_source(X, what="row_norm='auto'"):
    """Refuse sources that cannot be read more than once, or summed only sparsely."""
    src = as_source(X)
    if src.sparse:
        raise ValueError(f"{what} needs dense X: the private bound is chosen from dense rows; "
                         "give a public bound for scipy.sparse input.")
    if not src.rereadable:
        raise ValueError(f"{what} reads the data more than once (the bound, then the release); pass an array, "
                         "a path, a dask array or a list of chunks, not a one-shot iterator.")


def check_auto_privacy(mechanism, secure, what="row_norm='auto'"):
    if mechanism not in ADDITIVE:  # a value: the caller parsed the name
        raise ValueError(f"{what} supports mechanism {offered(ADDITIVE)}; got {str(mechanism)!r}.")
    if secure:
        raise ValueError(f"{what} is not available with secure=True: the private quantile draws "
                         "floating-point noise; give a public bound.")


def noise_norm(statistic, mechanism, d, epsilon, delta, neighbours, calibration, count_share=COUNT_SHARE):
    """``E||N_1||``: the Frobenius norm of the release's noise at R = r = 1, n = 1 (public).

    Under add-remove the noise is on the sum (the same as on the mean at
    ``n = 1``), from the sums' part of the budget (``1 - count_share``).
    """
    if math.isinf(epsilon):
        return 0.0
    norm = mechanism.norm
    n_samples = 1
    if neighbours == "add-remove":
        in_rho = splits_in_rho(mechanism, calibration)
        n_samples, (epsilon, delta) = None, split_budget(epsilon, delta, count_share, in_rho)[1]
    sens = moment_sensitivity(statistic, norm=norm, n_samples=n_samples, n_features=d, neighbours=neighbours,
                              row_norm=1.0, response_bound=1.0)
    sd = mechanism.sd(calibrate(mechanism, epsilon, delta, sens, calibration)[0])
    return sd * math.sqrt(as_moment(statistic).entries(d))


def clip_target(budget, statistic, mechanism, d, epsilon, delta, neighbours, calibration, epsilon_each,
                count_share=COUNT_SHARE):
    """(quantile, clipped_rows) for :func:`select_quantiles`: one of them is None.

    ``"auto"`` aims at ``2 E||N_1||`` clipped rows, but never fewer than the
    draw's own rank error at ``t = 5`` (:func:`rank_error`): every bin above
    the data scores minus that target, so a smaller one would let the many
    empty bins above the data win (a bound far too large).
    """
    if not is_auto(budget.quantile):
        return float(budget.quantile), None
    balanced = CLIP_FACTOR * noise_norm(statistic, mechanism, d, epsilon, delta, neighbours, calibration,
                                        count_share)
    return None, max(balanced, rank_error(epsilon_each, budget.search, t=MARGIN_T))


def rank_error(epsilon_each, search, t=RANK_ERROR_T):
    """Rows between the target rank and the drawn bin, with probability ``1 - e^-t``.

    The exponential mechanism over ``G + 1`` bins draws a bin scoring below
    ``-2 (ln(G + 1) + t) / epsilon`` with probability at most ``e^-t``.
    """
    return 2.0 * (math.log(search.steps + 1) + t) / epsilon_each


def warn_unreliable(epsilon_each, search, n, what):
    """A :class:`BoundWarning` when the draw's rank error is above 10% of the (public or noisy) ``n``."""
    err = rank_error(epsilon_each, search)
    if err > 0.1 * n:
        warnings.warn(f"the private {what} is unreliable here: its rank error (about {err:.0f} rows, from "
                      f"epsilon={epsilon_each:.3g} per draw) exceeds 10% of the {n} rows; give a larger "
                      "'bound_budget', a larger epsilon or a public bound.", BoundWarning, stacklevel=4)


def public_n_what(neighbours, what):
    """``what`` where ``n`` is public (the draws may then refuse to run), else ``None`` (warn afterwards)."""
    return None if neighbours == "add-remove" else what


@same_file_version()
def release_with_private_bounds(release, X, y=None, *, statistic, epsilon, delta, row_norm, response_bound=None,
                                bound_budget, center, mechanism, neighbours, calibration, rng, chunk_size, **kwargs):
    """Choose ``row_norm`` / ``response_bound`` privately, then call ``release`` with the rest of the budget.

    ``release`` is one of the ``release_*`` functions and ``statistic`` its
    moment (``"second"``, ``"cross"``, ``"third"``). The arguments are
    theirs, already validated.
    A second moment read from a file or chunks is read once: the bound's pass
    also sums it at every grid edge (:mod:`~dpmoments.moments.binned_sums`).
    A third moment is not: it is compute-bound (``d^3/6`` products a row), and
    fusing would double that work to save one read.

    Privacy
    -------
    Basic composition of: one exponential-mechanism draw per auto bound
    (pure, sensitivity 1, :mod:`~dpmoments.moments.private_bounds`), the
    Laplace count of clipped rows (pure, sensitivity 1), and the release at
    ``(1 - share) epsilon`` with the caller's ``delta``; under the release's
    own relation (the draws and the clipped count have sensitivity 1 under
    all three). Under add-remove the release's own noisy row count is part
    of its guarantee, and its part says so (:func:`release_part`). Only the
    drawn bounds and the noisy counts are added to the release's outputs.
    """
    budget = as_bound_budget(bound_budget)
    check_auto_privacy(mechanism, kwargs.get("secure", False))
    check_auto_source(X if y is None else (X, y))
    autos = [s for s, v in (("row-norm", row_norm), ("abs-response", response_bound)) if is_auto(v)]
    eps_bounds = budget.share * epsilon
    # no diagnostic at epsilon = inf: nothing is private, and an exact count is never released
    eps_diag = budget.diagnostic * eps_bounds if "row-norm" in autos and math.isfinite(epsilon) else 0.0
    eps_each = (eps_bounds - eps_diag) / len(autos)
    eps_main = epsilon * (1.0 - budget.share)
    gen_bounds, gen_diag, gen_main = spawn(rng, 3)
    binned = _fused_pass(X, y, statistic, autos, center, budget.search, chunk_size)
    counts, d = _bound_counts(X, y, autos, center, budget.search, chunk_size, binned)
    quantile, clipped = clip_target(budget, statistic, mechanism, d, eps_main, delta, neighbours, calibration,
                                    eps_each, kwargs.get("count_share", COUNT_SHARE))
    chosen, parts = _draw_bounds(autos, counts, budget, eps_each, quantile, clipped, gen_bounds, epsilon=epsilon,
                                 delta=delta, neighbours=neighbours)
    bounds = {"row_norm": chosen.get("row_norm", row_norm)}
    if response_bound is not None:
        bounds["response_bound"] = chosen.get("response_bound", response_bound)
    summed = binned.clipped(chosen["row_norm"], center) if binned is not None and binned.fused else None
    rel = release(X if summed is None else summed, *(() if y is None else (y,)), epsilon=eps_main, delta=delta, mechanism=mechanism,
                  neighbours=neighbours, calibration=calibration, center=center, rng=gen_main, chunk_size=chunk_size,
                  **bounds, **kwargs)
    if eps_diag:
        parts.append(_clipped_rows_part(counts[0], budget.search.edges(), chosen["row_norm"], rel.n,
                                        epsilon=epsilon, eps_diag=eps_diag, rng=gen_diag))
        warn_clipped(parts[-1].released["clipped_fraction"], parts[-1].released["clipped_fraction_noise_sd"],
                     any(p.released.get("at_range_end") for p in parts))
    parts.append(release_part(as_moment(statistic).label, rel, eps_main / epsilon))
    for part in parts[:len(autos)]:
        if part.released["at_range_end"]:
            warn_range_end(part.label, budget.search)
    warn_unreliable(eps_each, budget.search, rel.n, "bound")
    return dataclasses.replace(rel, guarantee=compose([p.guarantee for p in parts]), parts=tuple(parts),
                               randomness=randomness_of(rng, epsilon))


def _bound_counts(X, y, autos, center, search, chunk_size, binned):
    """The histograms the bounds are drawn from, and the width ``d``: one pass, or the fused pass's bins."""
    if binned is None:
        return quantile_pass(X if y is None else (X, y), [(s, center, None) for s in autos], search=search,
                             chunk_size=chunk_size)
    return [binned.bin_counts()], binned.d  # the bound's pass also summed the second moment at every grid edge


def _draw_bounds(autos, counts, budget, eps_each, quantile, clipped, rng, *, epsilon, delta, neighbours):
    """One exponential-mechanism draw per auto bound, ``eps_each``-DP each: ``(chosen values, their parts)``."""
    edges = budget.search.edges()
    chosen, parts = {}, []
    for stat, c in zip(autos, counts):
        name = "row_norm" if stat == "row-norm" else "response_bound"
        with minimum_on_refusal(epsilon=epsilon, delta=delta, share=budget.share, zcdp=False):
            values, outside = select_quantiles(c, edges, epsilon_each=eps_each, quantile=quantile,
                                               clipped_rows=clipped, rng=rng,
                                               what=public_n_what(neighbours, f"{name}='auto'"))
        chosen[name] = float(values[0])
        target = f"{quantile:g}-quantile" if clipped is None else f"clip about {clipped:.3g} rows"
        parts.append(Part(name, PureDP(eps_each), eps_each / epsilon,
                          {name: chosen[name], "target": target, "at_range_end": bool(outside[0])},
                          None if math.isinf(eps_each) else em_draws(1, eps_each, zcdp=False)))
    return chosen, parts


def _clipped_rows_part(counts, edges, row_norm, n, *, epsilon, eps_diag, rng):
    """The Laplace count of the rows clipped at the drawn ``row_norm`` (``eps_diag``-DP), as a fraction of ``n``."""
    noisy = noisy_clipped_count(counts, edges, row_norm, epsilon=eps_diag, rng=rng)
    return Part("clipped rows", noisy.guarantee, eps_diag / epsilon,
                {"clipped_fraction": noisy.value / n, "clipped_fraction_noise_sd": noisy.noise_sd / n})


def _fused_pass(X, y, statistic, autos, center, search, chunk_size):
    """A second moment read from a file or chunks: its bound's pass sums it too (else None: two passes).

    An array in memory is cheaper to read twice than to sum twice per row; a
    dask collection is counted inside its own tasks.
    """
    if as_moment(statistic) is not SECOND or y is not None or autos != ["row-norm"] or as_source(X).kind in ("array", "frame", "dask"):
        return None
    return binned_pass(X, moment="second", search=search, center=center, chunk_size=chunk_size)


def choose_bounds(source, statistics, *, epsilon, budget, share, rng=None, neighbours="replace-one", delta=None,
                  zcdp=False, quantile=None, basis="the same shares"):
    """Several public-bound parameters chosen privately in one pass, at the fixed quantile.

    Parameters
    ----------
    source : array, (X, y) pair, path, dask array or list of chunks
    statistics : dict
        Parameter name -> statistic of :data:`~dpmoments.moments.private_bounds.STATISTICS`
        (no centre), e.g. ``{"row_norm": "row-norm", "response_bound": "abs-response"}``.
    epsilon : float in (0, inf]
        The caller's total.
    budget : BoundBudget
    share : float
        The fraction of the budget spent (``budget.share``, or a part of it),
        split equally between the draws.
    delta : float in (0, 1), optional
        With ``zcdp``: the caller's delta.
    zcdp : bool, default False
        The share is of ``rho``, the largest zCDP parameter whose conversion
        fits ``(epsilon, delta)``: each draw gets ``sqrt(8 share rho / k)``
        (for a caller that composes in zCDP); otherwise of ``epsilon``, each
        draw ``share * epsilon / k`` (pure).
    quantile : float in (0, 1), optional
        The quantile aimed at (:func:`sampling_quantile` for IRLS); default ``budget.fixed_quantile()``.
    basis : str
        What a refusal's smallest epsilon assumes (the caller's words where it widened the share).

    Each draw aims at the quantile (by default the fixed one, ``budget.fixed_quantile()``, 0.95),
    lowered so that at least the draw's own rank error ``f`` in rows lies
    above it (:func:`~dpmoments.moments.private_bounds.target_rank`), but
    never below the 0.75-quantile: at a few hundred rows a 0.95-quantile is
    closer to the top of the data than the draw can resolve (it would be
    refused), while a target at rank ``n - f >= 3n/4`` puts the drawn bound
    above the median with probability ``1 - e^-5``. Where ``f > n/4`` the draw
    is refused (with ``n`` public), saying from which epsilon it would run.

    Returns
    -------
    (dict, list of Part)
        The chosen values, and one part per draw (``PureDP``, or ``ZCDP`` with ``zcdp``).

    Privacy
    -------
    One exponential-mechanism draw per parameter (sensitivity 1 under every
    relation): ``share * epsilon / k``-DP each, adding up to ``share *
    epsilon``; or, with ``zcdp``, ``share * rho / k``-zCDP each (an
    ``e``-DP exponential mechanism is ``e^2/8``-zCDP).
    """
    check_auto_source(source if not isinstance(source, tuple) else source[0], "a private bound")
    k = len(statistics)
    if zcdp and math.isfinite(epsilon):
        rho = share * calibrate_gaussian(epsilon, delta, 1.0, calibration="zcdp")[1].rho
        each, guarantee = math.sqrt(8.0 * rho / k), ZCDP(rho / k)
    else:
        each = share * epsilon / k
        guarantee = PureDP(each)
    passes = [(stat, None, None) for stat in statistics.values()]
    counts, _ = quantile_pass(source, passes, search=budget.search)
    q, values, parts = budget.fixed_quantile() if quantile is None else float(quantile), {}, []
    n = int(counts[0].counts[0].sum()) if public_n_what(neighbours, True) and math.isfinite(each) else None
    search = draw_grid(n, budget.search, each, q, lambda grid: rank_error(each, grid, t=MARGIN_T), FIXED_LOWEST)
    if search is not budget.search:  # the pass again on that grid (a small table: cheap)
        counts, _ = quantile_pass(source, passes, search=search)
    coarser = draw_grid_note(budget.search, search)
    floor = rank_error(each, search, t=MARGIN_T) if math.isfinite(each) else None
    for (name, stat), bins, gen in zip(statistics.items(), counts, spawn(rng, k)):
        with minimum_on_refusal(epsilon=epsilon, delta=delta, share=budget.share, zcdp=zcdp and delta is not None,
                                basis=f"{basis}{coarser}"):
            drawn, outside = select_quantiles(bins, search.edges(), epsilon_each=each, quantile=q, rng=gen,
                                              what=public_n_what(neighbours, f"{name}='auto'"), min_clipped=floor,
                                              lowest=FIXED_LOWEST)
        values[name] = float(drawn[0])
        target = f"{q:g}-quantile of {stat}" + ("" if floor is None or q < 0.5 else
                                                 f", lowered if needed to leave {floor:.3g} rows above it (the "
                                                 "draw's rank error)") + (coarser and f", drawn{coarser} (too few "
                                                                         "rows for the draw on the finer one)")
        parts.append(Part(name, guarantee, share / k,
                          {name: values[name], "target": target, "at_range_end": bool(outside[0])},
                          em_draws(1, each, zcdp and math.isfinite(epsilon)) if math.isfinite(each) else None))
        if outside[0]:
            warn_range_end(name, search)
    return values, parts
