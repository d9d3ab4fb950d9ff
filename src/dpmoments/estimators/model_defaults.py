"""The defaults of the model fits, shared by the estimators and their commands (``regress``, ``select``, ``precision``).

Kept apart (no imports) so that the command line's ``--help`` states them without loading the
estimator. docs/regression.md says how they were measured.
"""

__all__ = ["N_ITER", "W_MAX_AUTO", "INTERCEPT_SCALE", "R_SHARE", "RIDGE_THRESHOLD"]

#: Iterations, each two releases: from the start at 0, IRLS's contraction leaves about 1% of the
#: distance to the fixed point after 10 on the simulation (0.6^10), while each more iteration thins
#: every release's budget.
N_ITER = 10

#: ``w_max="auto"``: ``W_MAX_AUTO / response_bound``, so residuals under a fifth of the response bound
#: get the largest weight. The noise grows linearly in ``w_max`` while the signal (the mean weight)
#: grows only like its logarithm: a larger W is closer to LAD but noisier.
W_MAX_AUTO = 5.0

#: The intercept column's constant, as a share of the row bound: the sensitivities grow with
#: ``R^2 + kappa^2``, so a smaller constant is less noise; the intercept's own noise grows as it shrinks.
#: Half of ``R`` cut the withheld coefficients of the Laplace simulation at epsilon = 4 from 27% to 11%.
INTERCEPT_SCALE = 0.5

#: ``PrivateModelSelection(R="private")`` (the default) without its own ``R_epsilon``: the share of
#: ``epsilon`` spent on the private radius (the L1 norm of the full model's noisy least-squares fit).
R_SHARE = 0.1

#: The edge rule of a dense (ridge) precision estimate: an absolute partial correlation above this.
RIDGE_THRESHOLD = 0.05
