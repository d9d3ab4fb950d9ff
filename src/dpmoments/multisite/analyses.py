r"""What each analysis releases across sites, and the post-processing that turns the releases into its input.

:data:`ANALYSES` is the table the API, ``dpmoments simulate`` and the deployments share:
for each analysis, the rows a site forms, the rounds it releases (with their shares of
every site's budget), how the rounds compose, and what the aggregator makes of them --
a :class:`~dpmoments.Release` (every second-moment estimator, and model selection, fits
it with ``fit_release``), a :class:`~dpmoments.moments.tensor_moments.TensorMoments`
(``PrivateTensorDecomposition.fit_release``) or an :class:`IRLSFit`. Everything after the
releases is post-processing.

* ``covariance``, ``correlation``, ``pca``, ``precision``, ``ridge``: one second moment. With
  ``center="private"`` a location step (per-coordinate medians of noisy counts, ``m``) comes
  first, the second moment ``S`` and the mean ``a`` of the clipped rows centred at ``m`` are
  released in one step, and the aggregator forms :math:`S - a a^T`, the covariance about the
  private mean ``m + a`` (post-processing).
* ``select``: one second moment of the rows ``(x, y)`` (model selection reads ``X^T X``,
  ``X^T y`` and ``y^T y`` from it).
* ``tensor-mog``: the second moment, the plain third moment and the mean (the cross moment
  against the constant 1), shares ``(0.5, 0.4, 0.1)``; the aggregator forms
  :math:`\hat M_3 = \hat T_3 - \sigma^2\mathcal T(\hat m)` (``sigma2`` public). The
  single-machine release folds the mean into one statistic; across sites the plain
  moments are what a site can release, so the mean costs a third round.
* ``tensor-stm``: each document becomes the row :math:`(x_1, x_2, x_3)\in\{0,1\}^{3D}`,
  :math:`\|z\| = \sqrt3`; :math:`\hat M_2` is the symmetrised mean of the (1,2), (1,3), (2,3)
  blocks of its second moment and :math:`\hat M_3` the symmetrised (1,2,3) block of its
  third (shares ``(0.5, 0.5)``). The embedded rows' generic sensitivities exceed the
  one-hot-specific ones of the single-machine release.
* ``regress`` (IRLS, Park & Welling): ``J`` steps, each releasing the weighted moments
  ``A`` (cross) and ``B`` (second) at the previous private iterate, shares ``split/J`` and
  ``(1 - split)/J`` of a zCDP budget; :math:`\theta_j = \tilde B_+^{-1}\tilde A` with the
  eigenvalues of ``B`` floored at ``2 sqrt(d)`` times its noise std (public). With the option
  ``sampling_budget`` two more steps release the residual scale and the LAD sandwich's matrices at the final
  iterate (:mod:`~dpmoments.multisite.irls_sampling`), the iterations taking the rest.
"""

import dataclasses
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._validation import check_int, check_nonnegative, check_positive
from ..mechanisms.laws import NONE
from ..moments import Release, symmetrise_matrix, symmetrise_tensor
from ..privacy import compose
from ..moments.auto_release import warn_clipped
from ..moments.clipping_bias import excess_released
from ..moments.release import Part
from ..moments.tensor_moments import TensorBudget, TensorMoments, mean_correction
from ..moments.ranged_release import ranges_note
from .column_ranges import MODELS, ranges_mapped_back
from .irls_sampling import (bandwidth_of, sampling_params, sampling_rounds, sampling_share, solve_iteration,
                            split_releases)
from .plan import Plan, Round
from .report import AnalysisReport

__all__ = ["Analysis", "ANALYSES", "plan_analysis", "finish_analysis", "IRLSFit", "IRLS_DEFAULTS"]


@dataclass(frozen=True)
class Analysis:
    """One row of :data:`ANALYSES`."""

    name: str
    rows: str            # what a site's rows are (see Plan)
    needs_y: bool
    composition: str     # "auto": zCDP where the plan chooses a bound or centre privately, else basic (Plan.build)
    output: str          # "release", "tensor", "irls"


ANALYSES = {a.name: a for a in (
    Analysis("covariance", "x", False, "auto", "release"),
    Analysis("correlation", "x", False, "auto", "release"),
    Analysis("pca", "x", False, "auto", "release"),
    Analysis("precision", "x", False, "auto", "release"),
    Analysis("ridge", "x", False, "auto", "release"),
    Analysis("select", "xy", True, "basic", "release"),
    Analysis("tensor-mog", "x", False, "basic", "tensor"),
    Analysis("tensor-stm", "stm", False, "basic", "tensor"),
    Analysis("regress", "x", True, "zcdp", "irls"),
)}


#: The analyses of one second moment, which a private centre can centre.
CENTRED = ("covariance", "correlation", "pca", "precision", "ridge")


#: ``irls``'s defaults, those of ``PrivateIRLS`` (``estimators.model_defaults``: ``N_ITER``, ``W_MAX_AUTO``,
#: ``INTERCEPT_SCALE``; the wing imports no estimator, and a test checks they agree).
IRLS_DEFAULTS = {"n_iter": 10, "w_max_per_bound": 5.0, "intercept": 0.5, "sampling_budget": 0.1}


def intercept_factor(share):
    """``sqrt(1 + c^2)``: the bound ``R`` of an intercept plan's rows ``(x clipped to R / s, c R / s)`` over that of
    its features (``c``: the intercept column's constant as a share of the features' bound, public)."""
    return math.sqrt(1.0 + check_positive(share, "intercept") ** 2)


def _w_max(options, response_bound):
    """IRLS's largest weight: ``w_max``, or ``w_max_per_bound / response_bound`` (a single-site ``regress``'s
    default, ``W_MAX_AUTO / B``). With an ``"auto"`` response bound the rounds are planned at the unit bound
    and :meth:`~.plan.Plan.resolved` divides their ``w_max`` by the chosen bound (public once chosen)."""
    if options.get("w_max") is not None:
        if options.get("w_max_per_bound") is not None:
            raise ValueError("give 'w_max' or 'w_max_per_bound', not both.")
        return check_positive(options["w_max"], "w_max")
    per_bound = check_positive(options.get("w_max_per_bound"), "w_max")
    if isinstance(response_bound, str):  # "auto": planned at the unit bound
        return per_bound
    return per_bound / check_positive(response_bound, "response_bound")


def _rounds(name, options, response_bound=None):
    if name == "tensor-mog":
        s2, s3, sm = options.get("shares", (0.5, 0.4, 0.1))
        return (Round("second", s2), Round("third", s3), Round("cross", sm, response="ones"))
    if name == "tensor-stm":
        s2, s3 = options.get("shares", (0.5, 0.5))
        return (Round("second", s2), Round("third", s3))
    if name == "regress":
        J, split = check_int(options["n_iter"], "n_iter"), float(options.get("split", 0.5))
        if not 0 < split < 1:
            raise ValueError(f"'split' must be a fraction in (0, 1); got {split!r}.")
        w, p = _w_max(options, response_bound), float(options.get("p", 1.0))
        sampling = sampling_share(options, p)  # None: no sampling rounds, the plan as before (its digest too)
        keep = 1.0 if sampling is None else 1.0 - sampling
        iterations = tuple(r for j in range(J) for r in (Round("cross", keep * split / J, j, w_max=w, p=p),
                                                         Round("second", keep * (1 - split) / J, j, w_max=w, p=p)))
        return iterations + (() if sampling is None else sampling_rounds(sampling, J, w, p))
    return (Round("second"),)


def _check_centre_and_ranges(name, options, facts):
    """Refuse a private centre or ranges where the analysis takes none; the response's range checked (below)."""
    if isinstance(facts.get("center"), str) and name not in CENTRED:
        raise ValueError(f"center='private' across sites is for {', '.join(CENTRED)}; analysis {name!r} is "
                         "not taken about a centre (its statistics are the model's moments about the origin, or "
                         "of the raw rows and response); give no centre.")
    if (facts.get("ranges") is not None or options.get("response_range") is not None) and \
            name not in CENTRED + MODELS:
        raise ValueError(f"'ranges' across sites are for {', '.join(CENTRED + MODELS)}; analysis {name!r} takes "
                         "none (give its public bounds instead).")
    _response_range(name, options, facts)


def _response_range(name, options, facts):
    """A public ``response_range`` (select, regress): checked and kept as a pair; it bounds the mapped response by 1
    for free, so IRLS's ``response_bound`` becomes 1 (a public bound beside it would be read in the mapped units:
    refused, as one machine refuses it)."""
    span = options.get("response_range")
    if span is None:
        return
    if name not in ("select", "regress"):
        raise ValueError(f"'response_range' is for select and regress; analysis {name!r} has no response.")
    lower, upper = (float(v) for v in span)
    if not (math.isfinite(lower) and math.isfinite(upper - lower) and lower < upper):
        raise ValueError(f"'response_range' must be two finite numbers lower < upper; got {span!r}.")
    options["response_range"] = (lower, upper)
    if name == "regress":
        if facts.get("response_bound") not in (None, "auto"):
            raise ValueError("'response_bound' and the target's range both bound the response: give one (the range "
                             "bounds it for free).")
        facts["response_bound"] = 1.0


def plan_analysis(name, protocol, sites, n, *, n_features, options=None, composition=None, **facts):
    """The :class:`~.plan.Plan` of analysis ``name`` (a key of :data:`ANALYSES`) from public facts.

    ``n_features`` is the width of the site's *data* (word-id documents: their vocabulary
    comes from ``options["vocabulary_size"]``); ``facts`` go to :meth:`Plan.build`.
    """
    if name not in ANALYSES:
        raise ValueError(f"'analysis' must be one of {sorted(ANALYSES)}; got {name!r}.")
    a, options = ANALYSES[name], dict(options or {})
    if name == "tensor-mog":
        options["sigma2"] = check_nonnegative(options.get("sigma2"), "sigma2")
    width = n_features + (a.rows == "xy")
    vocab = None
    if a.rows == "stm":
        vocab = check_int(options.get("vocabulary_size"), "vocabulary_size")
        width = 3 * vocab
        facts["row_norm"] = math.sqrt(3.0)  # a document's embedded row has norm exactly sqrt(3): public
    _check_centre_and_ranges(name, options, facts)
    if name == "regress" and facts.get("response_bound") is None:
        raise ValueError("analysis 'regress' needs the public 'response_bound'.")
    if name == "regress" and options.get("intercept") is not None:  # the sites append a constant column
        width, scale = width + 1, intercept_factor(options["intercept"])
        if not isinstance(facts.get("row_norm"), str):  # the public bound on x: the formed rows' is larger
            facts["row_norm"] = check_positive(facts.get("row_norm"), "row_norm") * scale
    if name == "regress" and options.get("w_max") is None and not isinstance(facts.get("response_bound"), str):
        options["w_max"] = _w_max(options, facts.get("response_bound"))  # a public bound: w_max is fixed now
        options.pop("w_max_per_bound", None)
    return Plan.build(protocol, sites, n, n_features=width, rounds=_rounds(name, options, facts.get("response_bound")),
                      rows=a.rows,
                      vocabulary_size=vocab, composition=composition or a.composition, analysis=name,
                      options={k: v for k, v in options.items() if k != "shares"}, **facts)


@dataclass(frozen=True, eq=False)
class IRLSFit:
    """Private IRLS across sites: the coefficients and the guarantee they consumed.

    ``coef`` solves the final iteration's released ``B theta = A`` with the eigenvalues of ``B``
    raised to ``auto_psd_floor``; ``PrivateIRLS.fit_release`` gives them their standard errors. With an
    intercept (the plan's option ``intercept``), the sites appended the public constant
    ``intercept_scale`` to their clipped rows: the intercept is ``intercept_scale * coef[-1]``.
    """

    coef: np.ndarray
    n_iter: int
    guarantee: object
    releases: tuple
    n_psd_clipped: tuple
    intercept_scale: Optional[float] = None  # the sites' constant column (the last coefficient's), or None
    ranges: Optional[tuple] = None  # the plan's public feature ranges (the sites mapped their rows by them), or None
    response_range: Optional[tuple] = None  # the plan's public range of y, or None
    postprocessing: tuple = ()  # the line naming the ranged columns, where the sites mapped their rows
    sampling: tuple = ()  # the residual scale, K_h and V releases at the final iterate (sampling_budget), or ()
    bandwidth: Optional[float] = None  # the h K_h was taken at (post-processing of the released scale), or None


def next_params(plan):
    """IRLS: the public iterate of each step from the previous step's releases (``None`` otherwise)."""
    if plan.analysis != "regress":
        return None
    d = plan.n_features

    def params(step, releases):
        if not releases:  # the first IRLS step (after an auto plan's bound step, too)
            return np.zeros(d)
        stat = plan.rounds[plan.rounds_of(step)[0]].stat
        if stat.sampling:  # the final iterate (and the bandwidth): irls_sampling
            return sampling_params(plan, stat, releases)
        A, B = releases[-2], releases[-1]
        return _solve(A, B)[0]

    return params


_solve = solve_iteration


def finish_analysis(plan, result, *, protocol_notes=()):
    """``(output, report)`` of a finished run of ``plan`` (see the module docstring).

    An ``auto`` plan's bound step is a part of the report like every release (its share, the
    chosen bound, each site's guarantee), and the report's ``choices`` list every share; a
    single release then carries the composed guarantee and those parts (``Release.parts``).
    """
    releases, reports = result
    bound, location = getattr(result, "bound", None), getattr(result, "location", None)
    a = ANALYSES.get(plan.analysis)
    single = a is None or a.output == "release"
    if single and bound is None and location is None:
        return _in_user_units(plan, releases[0]), reports[0]
    names = _release_names(plan, None if single else a.output, len(releases))
    parts = {} if location is None else {f"location {k + 1}": rep for k, rep in enumerate(location.reports)}
    parts.update({} if bound is None else {f"bound {name}": rep for name, rep in bound.reports.items()})
    parts.update(zip(names, reports))
    report = AnalysisReport(plan.protocol, plan.analysis, plan.colluders, plan.target, plan.composition, parts,
                            _round_shares(plan), tuple(protocol_notes),
                            delta=max(plan.delta) if plan.composition == "zcdp" else None,
                            choices=_choices(plan, bound, location, names, reports, releases),
                            collusion=plan.collusion)
    if single:
        release = releases[0] if location is None else _about_mean(location.center, releases[0], releases[-1],
                                                                   location.column_scale, bool(location.reports))
        clipped = None if bound is None else bound.details.get("row_norm", {})
        if clipped and "clipped_fraction" in clipped:  # as the single machine warns, on the same rule
            warn_clipped(clipped["clipped_fraction"], clipped["clipped_fraction_noise_sd"], clipped["at_range_end"])
        release = dataclasses.replace(release, guarantee=report.guarantee, parts=report.choices)
        return _in_user_units(plan, release), report
    if a.output == "tensor":
        return _tensor(plan, releases, report), report
    return _irls(plan, releases, report), report


def _irls(plan, releases, report):
    """The :class:`IRLSFit` of a finished run: the final iteration's coefficients, and the public facts that map
    them back (the sites' constant column, the ranges)."""
    releases, sampling = split_releases(plan, releases)
    theta, clipped = _solve(releases[-2], releases[-1])
    share = plan.option("intercept")
    kappa = None if share is None else share * releases[-1].row_norm / intercept_factor(share)
    h = bandwidth_of(plan, releases[-2], sampling[0]) if sampling else None
    span = plan.option("response_range")
    steps = () if plan.ranges is None and span is None else (_ranges_line(
        plan, "each site clipped and standardised its own rows" + (
            "" if span is None else f"; the response clipped to its range {tuple(span)}")),)
    return IRLSFit(theta, len(releases) // 2, report.guarantee, tuple(releases), (clipped,), kappa, plan.ranges,
                   None if span is None else tuple(span), steps, sampling, h)


def _in_user_units(plan, release):
    """A release of rows the sites mapped by the plan's ranges, mapped back (post-processing); else as it is.

    Model selection's rows are ``(x, y)``: the response's range (or none) is the last column's, and the release
    keeps its moments in the mapped units, where the selection runs as on one machine (``column_scale`` and
    ``center`` bring its coefficients back)."""
    span = plan.option("response_range")
    if plan.ranges is None and span is None:
        return release
    ranges, names = plan.ranges or (None,) * plan.feature_width, plan.columns
    if plan.rows == "xy":
        ranges = tuple(ranges) + (None if span is None else tuple(span),)
        names = None if names is None else tuple(names) + (plan.response_column or "y",)
    return ranges_mapped_back(release, ranges, names)


def _round_shares(plan):
    """The report's budget: each round's share, named by its statistic (and bound, or the mean it is)."""
    return {f"round {i} ({r.statistic}{'' if r.bound is None else ' of ' + r.bound}"
            f"{': the mean' if i == plan.mean_round else ''})": r.share for i, r in enumerate(plan.rounds)}


def _release_names(plan, output, n_releases):
    """The report's name of each release: its statistic (or "mean") for one release, a tensor's three moments, or
    IRLS's ``A0, B0, A1, ...``."""
    if output is None:
        return tuple("mean" if i == plan.mean_round else plan.rounds[i].statistic for i in plan.release_rounds)
    if output == "tensor":
        return ("second", "third", "mean")
    sampled = [plan.rounds[i].statistic for i in plan.release_rounds if plan.rounds[i].stat.sampling]
    return tuple(f"{k}{j}" for j in range((n_releases - len(sampled)) // 2) for k in ("A", "B")) + tuple(sampled)


def _about_mean(location, second, mean, scale=None, stepped=True):
    """The second moment ``S`` about the location ``m`` and the mean ``a`` about it: ``S - a a^T``, about ``m + a``.

    With private column scales ``s`` the rows were ``(x - m) / s``: the release is of those standardised rows
    (``column_scale`` ``s``), about ``m + s a`` in the rows' own units, as one machine's scaled release.
    ``stepped``: ``m`` came from location steps (else it is the ranges' midpoints, ``Plan.build``'s ranges alone).
    Post-processing of two releases; the release keeps the second moment's noise scale (the
    mean's noise enters through :math:`a a^T`, second order in it).
    """
    a = mean.cross_moment
    s = None if scale is None else np.asarray(scale, dtype=np.float64)
    m = "location m (noisy per-coordinate medians)" if stepped else \
        "m the ranges' midpoints (too few rows for location steps; every column ranged)"
    steps = (f"private centre: {m}, second moment S and mean a of the clipped rows about m; S - a a^T, about m + a",)
    if s is not None:
        steps += ("standardised by private column scales s (the median distance from each column's median in the last "
                  "location step's noisy histograms, at least the gap to its next values); estimates are mapped back",)
    return dataclasses.replace(second, second_moment=symmetrise_matrix(second.second_moment - np.outer(a, a)),
                               center=np.asarray(location) + (a if s is None else s * a), column_scale=s,
                               postprocessing=second.postprocessing + steps)


def _choices(plan, bound, location, names, reports, releases):
    """The report's private choices: the location's and each bound's share and output, then each release's share
    (worst site's view); the mean's with its noise scale, which the centre check reads (as single-site)."""
    if bound is None and location is None:
        return ()
    out = [] if location is None else [
        Part(f"location (step {k + 1} of {plan.location.steps})", rep.joint_view, plan.rounds[plan.rounds_of(k)[0]].share,
             dict(detail)) for k, (rep, detail) in enumerate(zip(location.reports, location.details))]
    if bound is not None:
        shares = {plan.rounds[r].bound: plan.rounds[r].share for r in plan.rounds_of(plan.bound_step)}
        out += [Part(name, rep.joint_view, shares[name], dict(bound.details[name]))
                for name, rep in bound.reports.items()]
    moment = [plan.rounds[i] for i in plan.release_rounds]
    out += [Part(r.stat.label if name == r.statistic else "mean" if name == "mean" and plan.location is not None
                 else f"{r.stat.label} ({name})", rep.joint_view, r.share, _released(name, rel, bound))
            for name, r, rep, rel in zip(names, moment, reports, releases)]
    return tuple(out)


def _released(name, release, bound):
    """What a moment round's part shows: the mean's noise scale (the centre check reads it, as single-site) and what
    the centre's clipping bias is bounded from (:func:`_mean_clipping`); the clipping excess as the single machine's
    part (the intervals read it), its rows beyond twice the bound from the bound step's histograms
    (:func:`~dpmoments.multisite.run.rows_beyond`)."""
    if name == "mean":
        return dict(noise_scale=release.noise_scale, **_mean_clipping(release, bound))
    if name != "excess":
        return {}
    far = bound.details["row_norm"]
    return excess_released(release.cross_moment, release.noise_scale, far["rows_beyond_outer"],
                           far["rows_beyond_noise_sd"], release.row_norm)


def _mean_clipping(mean, bound):
    """What the error budget reads of the mean's own clipping (``estimators/centre_bias.py``), released values only:
    its bound ``R`` and step ``a`` (the cross moment, the centre less the location ``m``), that the second moment was
    clipped about ``m`` too, and, with a bound step, its noisy count of the rows beyond ``R`` about ``m``: the bound
    step was answered at the final location and scales (a site refuses a later centre), so those are the rows the
    mean clipped. As a share of the mean's ``n`` (fewer where a site dropped: the count is of at least their rows)."""
    out = {"row_norm": float(mean.row_norm), "offset": [float(v) for v in np.ravel(mean.cross_moment)],
           "second_moment_about": "location"}
    counted = None if bound is None else bound.details.get("row_norm", {})
    if counted and "clipped_fraction" in counted:
        per = float(counted["rows"]) / max(float(mean.n), 1.0)
        out.update(clipped_fraction=float(counted["clipped_fraction"]) * per,
                   clipped_fraction_noise_sd=float(counted["clipped_fraction_noise_sd"]) * per)
    return out


def _derived(release, name, value, n_features, guarantee, steps):
    exact = release.law is NONE
    return Release(n=release.n, n_features=n_features, row_norm=release.row_norm, mechanism=release.mechanism,
                   noise_scale=release.noise_scale, neighbours=release.neighbours, guarantee=guarantee,
                   randomness=release.randomness, calibration=release.calibration,
                   sensitivity=None if exact else release.sensitivity,
                   sensitivity_norm=None if exact else release.sensitivity_norm,
                   postprocessing=release.postprocessing + tuple(steps), **{name: value})


def _tags(tag):
    return tag if isinstance(tag, tuple) else (tag,)


def _ranges_line(plan, note):
    """The line naming which feature columns had public ranges (the sites applied them to their own rows)."""
    names = plan.columns or tuple(f"x{j}" for j in range(plan.feature_width))
    ranged = [r is not None for r in (plan.ranges or (None,) * plan.feature_width)]
    return ranges_note(names, ranged, note, "own units under the row bound")


def _tensor(plan, releases, report):
    tag = f"multisite-tensor(model={plan.analysis[7:]}, protocol={plan.protocol})"
    if plan.ranges is not None:  # the mixture's ranges clip only: the moments are in the data's units
        tag = (tag, _ranges_line(plan, "each site clipped its own rows (no standardising: sigma2 is in the data's "
                                       "units)"))
    shares = [plan.rounds[i].share for i in plan.release_rounds]
    if plan.analysis == "tensor-mog":
        second, third, mean = releases
        sigma2 = float(plan.option("sigma2"))
        M3 = symmetrise_tensor(third.third_moment - sigma2 * mean_correction(mean.cross_moment))
        g3 = compose([third.guarantee, mean.guarantee], composition=plan.composition)
        r2 = _derived(second, "second_moment", second.second_moment, plan.n_features, second.guarantee, (*_tags(tag),))
        r3 = _derived(third, "third_moment", M3, plan.n_features, g3,
                      (*_tags(tag), "third - sigma2 * T(mean) (mean: its own round)"))
        budget = TensorBudget(second=shares[0], third=min(1.0 - shares[0], shares[1] + shares[2]))
        return TensorMoments("mog", r2, r3, report.guarantee, sigma2, budget)
    D = int(plan.vocabulary_size)
    b = [slice(j * D, (j + 1) * D) for j in range(3)]
    S2, S3 = releases[0].second_moment, releases[1].third_moment
    M2 = symmetrise_matrix((S2[b[0], b[1]] + S2[b[0], b[2]] + S2[b[1], b[2]]) / 3.0)
    M3 = symmetrise_tensor(S3[b[0], b[1], b[2]])
    r2 = _derived(releases[0], "second_moment", M2, D, releases[0].guarantee,
                  (*_tags(tag), "stm: sym mean of blocks (1,2), (1,3), (2,3) of the (x1, x2, x3) embedding"))
    r3 = _derived(releases[1], "third_moment", M3, D, releases[1].guarantee,
                  (*_tags(tag), "stm: sym block (1,2,3) of the (x1, x2, x3) embedding"))
    return TensorMoments("stm", r2, r3, report.guarantee, None, TensorBudget(second=shares[0], third=shares[1]))

