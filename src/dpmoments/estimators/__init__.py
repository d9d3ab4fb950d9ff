"""scikit-learn-style estimators that make (or reuse) a release and post-process it.

The estimators subclass scikit-learn's ``BaseEstimator``, whose import costs ~1.2 s (it loads
scipy.stats and pandas): they are loaded on first use (``dpmoments.estimators.PrivatePCA``), so that
what needs none of them does not pay for it. Each moment analysis's logic and parameters are one
class without scikit-learn, in its own module (:class:`~dpmoments.estimators.covariance.CovarianceFit`,
which the command line fits); ``scikit_learn.py`` puts each on ``BaseEstimator`` in a plain class
statement. The parameters are declared once, with their defaults and checks (``_params.py``).
"""

from .. import _lazy

# Imported on first use: the Private* classes import scikit-learn, and a command that imports one fit class
# (``estimators.graph``, ``CovarianceFit``) loads none of the others.
_LAZY = {
    "_budget": ("IRLSBudget", "irls_budget"),
    "_moment_base": ("CenterBudget",),
    "selection": ("alpha_grid", "ebic", "noise_floor"),
    "scikit_learn": ("PrivateCovariance", "PrivateCorrelation", "PrivateGraphicalLasso", "PrivateRidgePrecision",
                     "PrivatePCA", "PrivateTensorDecomposition"),
    "irls": ("PrivateIRLS",),
    "model_selection": ("PrivateModelSelection",),
    "tensor": ("TensorBudget", "TensorMoments", "noisy_tensor_power_method",
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
