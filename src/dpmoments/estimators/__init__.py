"""scikit-learn-style estimators that make (or reuse) a release and post-process it.

The estimators subclass scikit-learn's ``BaseEstimator``, whose import costs ~1.2 s (it loads
scipy.stats and pandas): they are loaded on first use (``dpmoments.estimators.PrivatePCA``), so that
what needs none of them (the command line fits their scikit-learn-free cores, e.g.
:class:`~dpmoments.estimators.covariance.CovarianceFit`) does not pay for it.
"""

from .. import _lazy

# Imported on first use: the Private* classes import scikit-learn (or build on it on first use), and a command
# that imports one core (``estimators.graph``, ``CovarianceFit``) loads none of the others.
_LAZY = {
    "_budget": ("IRLSBudget", "irls_budget"),
    "_moment_base": ("CenterBudget",),
    "selection": ("alpha_grid", "ebic", "noise_floor"),
    "scikit_learn": ("PrivateCovariance", "PrivateCorrelation"),
    "precision": ("PrivateGraphicalLasso", "PrivateRidgePrecision"),
    "irls": ("PrivateIRLS",),
    "model_selection": ("PrivateModelSelection",),
    "pca": ("PrivatePCA",),
    "tensor": ("PrivateTensorDecomposition", "TensorBudget", "TensorMoments", "noisy_tensor_power_method",
               "release_mog_moments", "release_topic_moments"),
}
__getattr__, __dir__ = _lazy.lazy_exports(__name__, _LAZY)


__all__ = [
    "CenterBudget",
    "PrivateCovariance",
    "PrivateCorrelation",
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
