"""How a private model choice is presented: the chosen columns, how likely it is the exact choice, its noise.

Shared by ``dpmoments select`` and the multi-site commands (``--analysis select``). A choice within
the selection noise is withheld.
"""

import math

from .._noise import Noise, json_safe, num


def select_noise(est):
    """A choice within the selection noise is withheld (see :mod:`._noise`)."""
    noise = Noise(est)
    if noise.failed("selection-within-noise"):
        noise.withhold("the selected model (not distinguishable from its runner-up or from a model with variables "
                       "that explain nothing)", "selected.csv", "selection-within-noise",
                       fields=("selected", "selected_index"))
    return noise


def margin_lines(est):
    """How likely the noisy choice is the exact one: the bound from public facts, and the released gap's tie odds."""
    if len(est.candidates_) <= 1:  # no rival: a gap of inf and a tie probability of 0 would say nothing
        return ["one candidate model: nothing to choose between (no runner-up, no selection noise to weigh)"]
    low = math.floor(est.selection_probability_ * 1000) / 1000  # a lower bound stays one when rounded
    out = [f"selection_probability >= {low:.3f}: the chance that the noisy choice is the "
           f"exact best when every rival trails it by at least phi = {num(est.phi_)} (y^2 units)"]
    if est.tie_probability_ is not None:
        out.append(f"selection_gap {num(est.selection_gap_)} to the runner-up (noisy, released free): "
                   f"tie_probability {est.tie_probability_:.2g} (how often two equally good models are this far "
                   "apart in the noise; above 0.05 the choice is noise)")
    return out


def privacy_parts(est, rep):
    """The private bounds' draws and the rest of the budget, as parts (each share of epsilon, pure DP)."""
    from ...moments.release import Part
    from ...privacy import PureDP

    rest = [Part(name, PureDP(eps), eps / est.epsilon) for name, eps in rep["budget_parts"].items() if name != "bounds"]
    return list(est.bound_parts_) + rest


def across_sites(args, a, release, names, est_mod):
    phi = args.phi if args.phi == "bic" else float(args.phi)
    est = est_mod.PrivateModelSelection(epsilon=1.0, bounds=1.0, response_bound=1.0, R=args.R, phi=phi,
                                        sigma2=args.sigma2 or 1.0, max_size=args.max_size,
                                        rng=args.seed).fit_release(release)
    chosen = [names[j] for j in est.selected_]

    def save(res):
        res.save_table("selected.csv", ["feature", "coefficient"],
                       [[names[j], repr(float(est.coef_[j]))] for j in est.selected_])

    noise = select_noise(est)
    draws = est.uncertainty_["n_draws"]
    stability = (f"selection_probability {est.selection_probability_:.2f}: the share of {draws} releases redrawn "
                 f"around this one (the same noise law) that choose the same model; selection_gap "
                 f"{num(est.selection_gap_)} to the runner-up" if draws else
                 "selection_probability 1: one candidate, or a release without noise (nothing redrawn)")
    info = noise.analysis({"estimator": "PrivateModelSelection", "selected": chosen, "phi": est.phi_, "R": est.R_,
                           "R_source": est.privacy_report_["R_source"],
                           "estimate": "selected.csv", **json_safe({"selection_probability": est.selection_probability_,
                                                                    "selection_gap": est.selection_gap_})})
    summary = "the choice withheld (noise)" if noise.withholds else f"selected {chosen}"
    return info, save, summary, [stability] + noise.lines()
