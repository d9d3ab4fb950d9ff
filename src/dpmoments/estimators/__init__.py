"""scikit-learn-style estimators that make (or reuse) a release and post-process it.

The estimators subclass scikit-learn's ``BaseEstimator``, whose import costs ~1.2 s (it loads
scipy.stats and pandas): they are loaded on first use (``dpmoments.estimators.PrivatePCA``), so that
what needs none of them (the command line fits their scikit-learn-free cores, e.g.
:class:`~dpmoments.estimators.covariance.CovarianceFit`) does not pay for it.
"""

from ._budget import IRLSBudget, irls_budget
from ._moment_base import CenterBudget
from .selection import alpha_grid, ebic, noise_floor

# name -> the module that defines it (each of them imports scikit-learn, or builds on it on first use)
_LAZY = {
    "PrivateCovariance": "covariance", "PrivateCorrelation": "correlation", "PrivateGraphicalLasso": "precision", "PrivateRidgePrecision": "precision",
    "PrivateIRLS": "irls", "PrivateModelSelection": "model_selection", "PrivatePCA": "pca",
    **{name: "tensor" for name in ("PrivateTensorDecomposition", "TensorBudget", "TensorMoments",
                                   "noisy_tensor_power_method", "release_mog_moments", "release_topic_moments")},
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import correlation, covariance, irls, model_selection, pca, precision, tensor

    modules = {"correlation": correlation, "covariance": covariance, "irls": irls, "model_selection": model_selection, "pca": pca,
               "precision": precision, "tensor": tensor}
    value = getattr(modules[_LAZY[name]], name)
    globals()[name] = value  # the next look-up is an ordinary attribute
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


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
