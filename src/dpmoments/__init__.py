"""dpmoments: differentially private multivariate statistics from released moments.

The data are touched once: rows are clipped to a public bound, exact moments
are accumulated in one streaming pass, and noise calibrated to their
sensitivity is added once. The result is a :class:`Release` carrying its
guarantee; everything after it is free post-processing.

>>> import numpy as np
>>> import dpmoments as dpm
>>> X = np.random.default_rng(0).normal(size=(2000, 4)) / 4
>>> release = dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0)
>>> acct = dpm.Accountant(dpm.ApproxDP(2.0, 1e-5))
>>> _ = acct.spend(release.guarantee, label="second moment")
>>> str(acct.spent)
'(1, 1e-06)-DP'

The scikit-learn estimators are here too (loaded on first use, so that ``import dpmoments``
stays light): ``dpm.PrivateCovariance``, ``dpm.PrivateGraphicalLasso``, ``dpm.PrivateRidgePrecision``,
``dpm.PrivatePCA``, ``dpm.PrivateTensorDecomposition``, ``dpm.PrivateIRLS``, ``dpm.PrivateModelSelection``.

>>> dpm.PrivateGraphicalLasso is dpm.estimators.PrivateGraphicalLasso
True
"""

from ._version import __version__

try:  # a second of numpy and more: Ctrl-C here, in the command line, is one line (see _startup)
    from .exceptions import (
        BoundWarning,
        BudgetExceededError,
        InsecureRandomnessWarning,
        NoiseDominatesWarning,
        NotPrivateWarning,
        PrivacyLeakWarning,
        UncertifiedPrivacyWarning,
        UncertifiedSpendError,
    )
    from .moments import Release, release_cross_moment, release_second_moment, release_third_moment
    from .privacy import ZCDP, Accountant, ApproxDP, PureDP, Uncertified
except KeyboardInterrupt:
    from ._startup import stop_if_command_line

    stop_if_command_line()
    raise

# The estimators import scikit-learn, which would triple the cost of ``import dpmoments`` (paid by
# every command and every Flower process): they are loaded on first use, e.g. ``dpm.PrivatePCA``.
_LAZY = {name: "estimators" for name in (
    "PrivateCovariance", "PrivateCorrelation", "PrivateGraphicalLasso", "PrivateRidgePrecision", "PrivatePCA",
    "PrivateTensorDecomposition", "PrivateIRLS", "PrivateModelSelection")}


def __getattr__(name):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value  # the next look-up is an ordinary attribute
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Accountant",
    "PureDP",
    "ApproxDP",
    "ZCDP",
    "Uncertified",
    "Release",
    "release_second_moment",
    "release_cross_moment",
    "release_third_moment",
    *_LAZY,
    "BudgetExceededError",
    "UncertifiedSpendError",
    "UncertifiedPrivacyWarning",
    "NotPrivateWarning",
    "PrivacyLeakWarning",
    "InsecureRandomnessWarning",
    "BoundWarning",
    "NoiseDominatesWarning",
    "__version__",
]
