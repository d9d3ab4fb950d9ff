"""scikit-learn-style estimators that make (or reuse) a release and post-process it."""

from ._budget import IRLSBudget, irls_budget
from ._moment_base import CenterBudget
from .covariance import PrivateCovariance
from .irls import PrivateIRLS
from .model_selection import PrivateModelSelection
from .precision import PrivateGraphicalLasso, PrivateRidgePrecision
from .selection import alpha_grid, ebic

__all__ = [
    "CenterBudget",
    "PrivateCovariance",
    "PrivateGraphicalLasso",
    "PrivateRidgePrecision",
    "PrivateIRLS",
    "PrivateModelSelection",
    "IRLSBudget",
    "irls_budget",
    "alpha_grid",
    "ebic",
]
