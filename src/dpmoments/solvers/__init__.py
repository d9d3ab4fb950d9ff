"""Pure numerics on (noisy) moment matrices: no privacy, no budgets.

Layer 2: imports only numpy, scipy and dpmoments' layer 0.
"""

from .eigen import EigenResult, flip_signs, top_eigenpairs
from ._glasso_common import GlassoInfeasibleError, GlassoResult, glasso_objective
from .glasso import glasso_blocks, graphical_lasso, graphical_lasso_path, iter_graphical_lasso_path
from .glasso_admm import graphical_lasso_admm
from .irls import IRLSResult, irls, irls_weights, solve_weighted, weighted_moments
from .l1_ball import L1BallResult, l1_ball_duality_gap, l1_ball_least_squares, project_l1_ball
from .rope import ridge_precision, ridge_precision_objective
from .tensor_power import (
    TensorPowerResult,
    Whitening,
    robust_tensor_power,
    tensor_apply,
    unwhiten,
    whiten,
    whiten_tensor,
)

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
