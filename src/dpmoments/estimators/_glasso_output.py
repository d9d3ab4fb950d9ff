"""Wang et al.'s output perturbation of the graphical lasso: its Wishart noise scale, and why it is uncertified."""

import math

__all__ = []

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
