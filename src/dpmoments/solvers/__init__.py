"""Pure numerics on (noisy) moment matrices: no privacy, no budgets.

Layer 2: imports only numpy, scipy and dpmoments' layer 0.
"""

from .. import _lazy

# Imported on first use, so that a caller of one solver does not load every solver's SciPy modules.
__getattr__, __dir__ = _lazy.lazy_exports(__name__, {
    "eigen": ("EigenResult", "flip_signs", "top_eigenpairs"),
    "_glasso_common": ("GlassoInfeasibleError", "GlassoResult", "glasso_objective"),
    "glasso": ("graphical_lasso",),
    "glasso_screening": ("glasso_blocks",),
    "glasso_path": ("graphical_lasso_path", "iter_graphical_lasso_path"),
    "glasso_admm": ("graphical_lasso_admm",),
    "irls": ("IRLSResult", "irls", "irls_weights", "solve_weighted", "weighted_moments"),
    "l1_ball": ("L1BallResult", "l1_ball_duality_gap", "l1_ball_least_squares", "project_l1_ball"),
    "rope": ("ridge_precision", "ridge_precision_objective"),
    "tensor_power": ("TensorPowerResult", "Whitening", "robust_tensor_power", "tensor_apply", "unwhiten", "whiten",
                     "whiten_tensor"),
})

__all__ = [
    "GlassoInfeasibleError",
    "GlassoResult",
    "glasso_blocks",
    "glasso_objective",
    "graphical_lasso",
    "graphical_lasso_admm",
    "graphical_lasso_path",
    "iter_graphical_lasso_path",
    "IRLSResult",
    "irls",
    "irls_weights",
    "solve_weighted",
    "weighted_moments",
    "L1BallResult",
    "l1_ball_duality_gap",
    "l1_ball_least_squares",
    "project_l1_ball",
    "ridge_precision",
    "ridge_precision_objective",
    "EigenResult",
    "flip_signs",
    "top_eigenpairs",
    "TensorPowerResult",
    "Whitening",
    "robust_tensor_power",
    "tensor_apply",
    "unwhiten",
    "whiten",
    "whiten_tensor",
]
