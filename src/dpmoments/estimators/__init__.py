"""scikit-learn-style estimators that make (or reuse) a release and post-process it."""

from ._moment_base import CenterBudget
from .covariance import PrivateCovariance
from .precision import PrivateGraphicalLasso, PrivateRidgePrecision
from .selection import alpha_grid, ebic

__all__ = [
    "CenterBudget",
    "PrivateCovariance",
    "PrivateGraphicalLasso",
    "PrivateRidgePrecision",
    "alpha_grid",
    "ebic",
]
