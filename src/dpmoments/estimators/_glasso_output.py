"""Wang et al.'s output perturbation of the graphical lasso: its Wishart noise scale, and why it is uncertified."""

import math
import warnings

import numpy as np

from .._rng import as_generator, describe_randomness
from .._validation import check_data, check_positive, check_option
from ..exceptions import UncertifiedPrivacyWarning
from ..mechanisms import wishart_noise
from ..moments import release_second_moment
from ..privacy import PureDP, Uncertified
from ..privacy.relations import NEIGHBOURS
from ._conventions import fit_input, name_of, noise_entry, privacy_report, release_input, require_for_fit
from ._uncertainty_matrix import output_perturbation_spread

__all__ = ["fit_output"]

_OUTPUT_REASON = (
    "output perturbation (Wang et al. 2018, Algorithm 1) adds Wishart noise with d+1 degrees of freedom: "
    "its support depends on the data, so no epsilon-DP proof holds (docs/algorithms.md §1.5.1), and its "
    "sensitivity lemma is our reconstruction (§1.2)"
)


def _output_noise_scale(d, n, R, epsilon, alpha):
    """Wang et al.'s Wishart scale ``d^2.5 R^2 / (n epsilon alpha^2)``, refused when it leaves the floats."""
    try:
        scale = d**2.5 * R**2 / (n * epsilon * alpha**2)
    except (ZeroDivisionError, OverflowError):
        scale = math.nan
    if not 0 < scale < math.inf:
        raise ValueError(f"mechanism='output': 'alpha' = {alpha:g}, 'row_norm' = {R:g} and 'epsilon' = {epsilon:g} "
                         "give a Wishart noise scale d^2.5 R^2 / (n epsilon alpha^2) outside the float range; "
                         "restate the data in other units or choose another alpha.")
    return scale


def fit_output(est, X):
    """Wang et al. Algorithm 1: exact graphical lasso, then W_d(d+1, c I) noise."""
    require_for_fit(est, "epsilon")
    names = fit_input(est, X)
    est._private_choices()  # a private centre, scale or bound is refused here: it needs additive noise
    X = check_data(X)
    if isinstance(est.alpha, str):
        raise ValueError(f"mechanism='output' needs a numeric 'alpha' (its noise scale depends on the penalty); "
                         f"got {est.alpha!r}")
    alpha = check_positive(est.alpha, "alpha")
    check_option(est.neighbours, "neighbours", NEIGHBOURS)
    if not est.penalize_diagonal:
        raise ValueError("mechanism='output' follows Wang et al., whose analysis penalises the diagonal.")
    if est.neighbours == "add-remove":
        raise ValueError("mechanism='output' scales its noise by the exact n: use neighbours 'replace-one' or "
                         "'zero-out', or another mechanism for add-remove.")
    (n, d), R = X.shape, check_positive(est.row_norm, "row_norm")
    scale = _output_noise_scale(d, n, R, check_positive(est.epsilon, "epsilon"), alpha)
    est._check_affordable()
    with warnings.catch_warnings():
        # Internal and exact: only the noisy output leaves, not even a solver warning (its duality gap).
        warnings.simplefilter("ignore")
        exact = release_second_moment(X, epsilon=math.inf, row_norm=est.row_norm, center=est.center)
        result = est._solve(exact.second_moment, alpha)
    warnings.warn(_OUTPUT_REASON, UncertifiedPrivacyWarning, stacklevel=3)
    noisy = result.precision + wishart_noise(d, d + 1, scale, as_generator(est.rng))
    guarantee = Uncertified(PureDP(est.epsilon), _OUTPUT_REASON)
    est._spend(guarantee)
    est.alpha_, est.alphas_, est.ebic_, est.alpha_floor_, est.path_ = alpha, None, None, None, None
    # The solve ran on exact data: its iteration count and convergence would disclose it.
    est.n_iter_, est.converged_ = None, None
    est.precision_ = 0.5 * (noisy + noisy.T)
    est.covariance_ = np.linalg.inv(est.precision_)
    est.covariance_ = 0.5 * (est.covariance_ + est.covariance_.T)
    est.location_ = np.zeros(d) if est.center is None else np.asarray(est.center, dtype=float)
    est.release_, est.privacy_, est.privacy_parts_, est.neighbours_ = None, guarantee, (), est.neighbours
    release_input(est, d, names)
    est.privacy_report_ = privacy_report(
        est, guarantee=guarantee, neighbours=est.neighbours, randomness=describe_randomness(est.rng),
        noise=[noise_entry("precision (output perturbation)", "wishart", scale, degrees_of_freedom=d + 1)])
    vars(est).update(output_perturbation_spread(est.precision_, scale, est.level, name_of(est)))
    return est
