"""scikit-learn-style estimators that make (or reuse) a release and post-process it."""

from ._budget import IRLSBudget, irls_budget
from ._moment_base import CenterBudget
from ._private_choices import private_second_moment
from .covariance import PrivateCovariance
from .irls import PrivateIRLS
from .model_selection import PrivateModelSelection
from .pca import PrivatePCA
from .precision import PrivateGraphicalLasso, PrivateRidgePrecision
from .selection import alpha_grid, ebic, noise_floor
from .tensor import (
    PrivateTensorDecomposition,
    TensorBudget,
    TensorMoments,
    noisy_tensor_power_method,
    release_mog_moments,
    release_topic_moments,
)

__all__ = [
    "CenterBudget",
    "private_second_moment",
    "PrivateCovariance",
    "PrivateGraphicalLasso",
    "PrivateRidgePrecision",
    "PrivateIRLS",
    "PrivateModelSelection",
    "IRLSBudget",
    "irls_budget",
    "PrivatePCA",
    "PrivateTensorDecomposition",
    "TensorBudget",
    "TensorMoments",
    "noisy_tensor_power_method",
    "release_mog_moments",
    "release_topic_moments",
    "alpha_grid",
    "noise_floor",
    "ebic",
]
