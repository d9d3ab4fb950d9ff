r"""The spread the noise induces in the model fits: tensor mixtures, model selection (IRLS: ``_irls_error``).

Same contract as :mod:`dpmoments.estimators._uncertainty_matrix`: each
function returns the fitted attributes to set, computed from released
numbers and noise laws only. docs/uncertainty.md says what each one means.
"""

import dataclasses
import math

import numpy as np

from ..mechanisms.laws import NONE
from .diagnostics import Diagnostics
from .uncertainty import basic_interval, bootstrap_generator, bootstrap_se, check_draws, check_level
from .uncertainty import noise_law, redraw, redraw_count
from .uncertainty import z_value
from .tensor_error import model_error, shifted, tensor_scope
from .._rng import spawn

__all__ = ["tensor_spread", "selection_margin", "selection_stability"]


# -- tensor decompositions --------------------------------------------------------------------------------------
def _tensor_checks(moments, weights, K, diag):
    """Whitening and weight checks; returns the whitening signal-to-noise ``lambda_K(M2) / ||E_2||``."""
    law = noise_law(moments.second)
    d = moments.second.n_features
    edge = law.spectral_norm(d)
    m2 = np.linalg.eigvalsh(moments.m2 - law.diagonal_mean * np.eye(d))[::-1]
    snr = math.inf if edge == 0 else float(m2[K - 1] / edge)
    floor = max(edge, 0.0)
    if m2[K - 1] <= floor:
        diag.flag("whitening-failure", f"the smallest of the {K} eigenvalues of M2 kept ({m2[K - 1]:.3g}) is not "
                                       f"above the noise's spectral norm ({edge:.3g}): whitening divides by noise, so "
                                       "the components and weights are noise.")
    if moments.model == "mog":
        smallest = float(np.linalg.eigvalsh(moments.second.second_moment)[0]) - law.diagonal_mean
        # The smallest eigenvalue of n rows' second moment sits near sigma2 (1 - sqrt(d/n))^2 (Marchenko-Pastur),
        # below sigma2 with no noise at all: twice that dip (public n, d, sigma2) is sampling, not misfit.
        dip = moments.sigma2 * min(1.0, 4.0 * math.sqrt(d / max(float(moments.second.n), 1.0)))
        if moments.sigma2 > smallest + edge + dip:
            diag.flag("sigma2-above-spectrum", f"sigma2 = {moments.sigma2:.3g} exceeds the smallest eigenvalue of "
                                               f"the released second moment ({smallest:.3g}) by more than the noise "
                                               f"({edge:.3g}) and the rows' sampling ({dip:.3g}): the mixture's "
                                               "variance is too large for these data.")
    total = float(np.sum(weights))
    # Weights are noisy (1 / lambda^2): a little above 1 is noise, far above 1 or a sum far from 1 is failure.
    if not np.all(np.isfinite(weights)) or np.any(weights > 1.5) or not 0.5 <= total <= 2.0:
        diag.flag("weights-outside-unit-interval", f"the mixture weights (sum {total:.3g}) are not proportions: "
                                                   "a weight above 1.5, or a sum off 1 by more than a factor 2, "
                                                   "means the decomposition did not find the mixture.")
    return snr


def _aligned(reference, components, weights):
    """Reorder a draw's components (and weights) to match the fitted ones (least total squared distance)."""
    cost = ((reference[:, None, :] - components[None, :, :]) ** 2).sum(axis=2)
    cost = np.where(np.isfinite(cost), cost, 1e300)
    from scipy.optimize import linear_sum_assignment  # here: scipy.optimize costs a command a quarter CPU-second

    _, cols = linear_sum_assignment(cost)
    return components[cols], weights[cols]


def tensor_spread(moments, est, decompose, n_draws, level, rng, owner, target="population"):
    """Checks of the whitening and the weights; with ``n_draws``, bootstrap spreads of means and weights.

    ``decompose(moments, rng) -> (components, weights)`` reruns the
    post-processing (whitening, power method, un-whitening) on one draw. Each draw carries the
    releases' noise and, for ``target="population"``, the rows' sampling deviation under the fitted
    model; a mixture's intervals also take in its clipping bias under the fitted model
    (:mod:`dpmoments.estimators.tensor_error`). ``noise_se`` keeps the noise's own share.
    """
    level, n_draws = check_level(level), check_draws(n_draws)
    diag = Diagnostics(owner)
    K = est.components_.shape[0]
    snr = _tensor_checks(moments, est.weights_, K, diag)
    attrs = {"components_se_": None, "weights_se_": None, "weights_interval_": None, "components_interval_": None,
             "weights_noise_se_": None, "components_noise_se_": None}
    error = None
    if n_draws:
        gen = bootstrap_generator(rng)
        model_gen, shift_gen = spawn(gen, 2)  # the noise draws stay on gen: the same as without the other parts
        error = model_error(moments, est.components_, est.weights_, target, model_gen)
        attrs.update(_tensor_draws(moments, est, decompose, n_draws, level, (gen, shift_gen), error))
    laws = {"second": noise_law(moments.second).to_dict(), "third": noise_law(moments.third).to_dict()}
    summary = {"method": "parametric bootstrap" if n_draws else "closed-form checks", "level": level,
               "n_draws": n_draws, "noise": laws, "signal_to_noise": snr, "target": target,
               "signal_to_noise_definition": "the K-th eigenvalue of M2 / the spectral norm of its noise "
                                             "(below 1 the whitening divides by noise)",
               "weights": est.weights_.tolist(), "weights_sum": float(np.sum(est.weights_)),
               "weights_se": None if attrs["weights_se_"] is None else attrs["weights_se_"].tolist(),
               **tensor_scope(n_draws, error, target, moments.model)}
    attrs.update(snr_=snr, diagnostics_=diag.as_list(), uncertainty_=summary)
    return attrs


def _tensor_draws(moments, est, decompose, n_draws, level, gens, error):
    """The draws (noise, plus sampling under the fit) and the intervals, widened by the clipping bias's shift."""
    (gen, shift_gen), noise, total = gens, ([], []), ([], [])
    for _ in range(n_draws):
        count = redraw_count(moments.second, gen)  # add-remove: one noisy count, shared by both releases
        draw = dataclasses.replace(moments, second=redraw(moments.second, gen, count),
                                   third=redraw(moments.third, gen, count))
        _append(noise, _aligned(est.components_, *decompose(draw, gen)))
        if error is not None and error.sampling and error.fits:
            moved = shifted(draw, error.shift(shift_gen))
            _append(total, _aligned(est.components_, *decompose(moved, shift_gen)))
    total = total if total[0] else noise
    comps, weights = np.array(total[0]), np.array(total[1])
    with np.errstate(invalid="ignore"):
        out = dict(components_se_=bootstrap_se(comps), weights_se_=bootstrap_se(weights),
                   components_noise_se_=bootstrap_se(np.array(noise[0])),
                   weights_noise_se_=bootstrap_se(np.array(noise[1])),
                   weights_interval_=basic_interval(est.weights_, weights, level),
                   components_interval_=basic_interval(est.components_, comps, level))
    if error is not None and not error.fits:  # sampling and clipping cannot be bounded: no interval
        for key in ("components_interval_", "weights_interval_"):
            out[key] = np.full_like(out[key], np.nan)
    elif error is not None and error.bias is not None:  # the hull of the interval and that interval moved by b's shift
        c, w = _aligned(est.components_, *decompose(shifted(moments, error.bias), shift_gen))
        for key, move in (("components_interval_", c - est.components_), ("weights_interval_", w - est.weights_)):
            iv = out[key]
            out[key] = np.stack([np.minimum(iv[0], iv[0] + move), np.maximum(iv[1], iv[1] + move)])
    out["weights_interval_"] = within_proportions(est.weights_, out["weights_interval_"])
    return out


def within_proportions(weights, interval):
    """A weight's interval cut to ``[min(0, w), max(1, w)]``: a mixture weight (a topic's share) lies in [0, 1], so
    the cut never loses the truth (post-processing: coverage can only rise), and an estimate the noise put outside
    [0, 1] stays inside its own interval (the console says it is outside). NaN (withheld) stays NaN."""
    w = np.asarray(weights, dtype=float)
    return np.stack([np.maximum(interval[0], np.minimum(w, 0.0)), np.minimum(interval[1], np.maximum(w, 1.0))])


def _append(pair, drawn):
    pair[0].append(drawn[0])
    pair[1].append(drawn[1])


# -- model selection --------------------------------------------------------------------------------------------
def _rival_wins(gap, scale, mechanism):
    r"""P(one rival trailing by ``gap`` beats the exact argmin) under the selection's noise of scale ``scale``.

    Report-noisy-min: :math:`P(W_0 - W_j > g) = \tfrac12 e^{-g/b}(1 + g/(2b))` for i.i.d.
    Laplace(b); the exponential mechanism: the odds :math:`e^{-g/b}`.
    """
    t = np.asarray(gap, dtype=float) / scale
    if mechanism == "exponential":
        return np.exp(-t)
    return 0.5 * np.exp(-t) * (1.0 + t / 2.0)


def tie_probability(gap, scale):
    r"""How often two *tied* models would be separated by a noisy gap of at least ``gap``: :math:`e^{-g/b}(1 + g/(2b))`.

    The difference of two i.i.d. Laplace(b) draws exceeds ``g`` in absolute
    value with this probability. Ties among more models make small gaps more
    likely still, so the figure errs towards saying "within the noise".
    """
    t = gap / scale
    return float(math.exp(-t) * (1.0 + t / 2.0))


def selection_margin(phi, scale, n_candidates, mechanism, gap=None, owner="PrivateModelSelection"):
    r"""How likely the noisy choice is the exact argmin, from public facts and the released gap.

    ``selection_probability``: a lower bound on P(noisy argmin = exact argmin)
    when every rival trails the exact argmin by at least ``phi`` (as a model
    adding a variable that explains nothing does): one minus the union bound
    over the ``m - 1`` rivals, or :math:`1/(1 + (m-1)e^{-\varphi/b})` for the
    exponential mechanism; ``scale`` is ``b = 2 Delta / epsilon``. It needs no
    data, and cannot see rivals closer than ``phi``. ``gap``, the noisy gap
    between the two best noisy criteria (released for free by
    report-noisy-min, or read from released scores), can: its
    :func:`tie_probability` says how often two tied models would be separated
    by as much.
    """
    diag, m = Diagnostics(owner), int(n_candidates)
    if scale == 0 or m <= 1:
        # one candidate: nothing is chosen, so no signal against the noise to state (nan, "no value here")
        prob, snr, tie = 1.0, math.nan if m <= 1 else math.inf, (None if gap is None else 0.0)
    else:
        snr = phi / scale
        wins = _rival_wins(phi, scale, mechanism)
        prob = float(1.0 / (1.0 + (m - 1) * wins)) if mechanism == "exponential" else max(0.0, 1.0 - (m - 1) * wins)
        tie = None if gap is None or not math.isfinite(gap) else tie_probability(gap, scale)
    if prob < 0.5:
        diag.flag("selection-within-noise", f"the penalty per variable ({phi:.3g}) is small against the selection "
                                            f"noise (scale {scale:.3g}): a model with variables that explain "
                                            f"nothing may be chosen over the best one (P(exact choice) >= "
                                            f"{prob:.2f} is all that can be said); raise phi or epsilon.")
    if tie is not None and tie > 0.05:
        diag.flag("selection-within-noise", f"the chosen model beat the runner-up by a noisy gap of {gap:.3g}, "
                                            f"which two equally good models would show {100 * tie:.0f}% of the "
                                            f"time under the selection noise (scale {scale:.3g}): the choice is "
                                            "not distinguishable from its runner-up.")
    summary = {"method": "closed-form", "selection_probability": prob, "selection_gap": gap,
               "tie_probability": tie, "signal_to_noise": snr,
               "signal_to_noise_definition": "phi / (2 Delta / epsilon): the penalty per variable in units of the "
                                             "selection noise's scale", "noise_scale": scale, "n_candidates": m,
               "covers": "the selection noise: for rivals trailing the exact argmin by at least phi (a bound from "
                         "public facts), and for the runner-up (the noisy gap, released for free by "
                         "report-noisy-min or read from released scores)",
               "not_covered": "sampling variability; with the exponential mechanism, rivals closer than phi"}
    return prob, tie, snr, diag.as_list(), summary


def selection_stability(release, score, best, gap, n_draws, rng, owner="PrivateModelSelection"):
    """How often the choice read from a release survives its noise: a parametric bootstrap.

    ``score(release)`` gives every candidate's penalised score; ``best`` is the candidate chosen
    from the release itself and ``gap`` its lead over the runner-up. Each of ``n_draws`` draws
    adds fresh noise of the release's own law to it (:func:`redraw`) and scores the candidates
    again: ``selection_probability`` is the share of draws that choose ``best`` again, and the
    signal-to-noise is ``gap`` over the standard deviation of ``best``'s lead across the draws.
    Below one half the choice is noise (``selection-within-noise``). Post-processing only.
    """
    diag, gen = Diagnostics(owner), bootstrap_generator(rng)
    if noise_law(release).mechanism is NONE or not math.isfinite(gap):
        prob, snr, n_draws = 1.0, math.inf, 0
    else:
        leads = []
        for _ in range(n_draws):
            s = score(redraw(release, gen))
            leads.append(float(np.min(np.delete(s, best)) - s[best]))
        leads = np.array(leads)
        prob = float(np.mean(leads > 0))
        sd = float(np.std(leads, ddof=1)) if n_draws > 1 else math.inf
        snr = math.inf if sd == 0 else gap / sd
    if prob < 0.5:
        diag.flag("selection-within-noise", f"redrawing the release's noise chose the same model in only "
                                            f"{100 * prob:.0f}% of {n_draws} draws: the choice is not "
                                            "distinguishable from its rivals at this noise.")
    summary = {"method": "parametric bootstrap", "n_draws": n_draws, "selection_probability": prob,
               "selection_gap": gap, "tie_probability": None, "signal_to_noise": snr,
               "signal_to_noise_definition": "the chosen model's lead over the runner-up / its standard deviation "
                                             "across redrawn releases",
               "covers": "the noise of the release the choice was read from (redrawn around the released moments)",
               "not_covered": "sampling variability"}
    return prob, snr, diag.as_list(), summary
