"""dpmoments: differentially private multivariate statistics from released moments.

The data are touched once: rows are clipped to a public bound, exact moments
are accumulated in one streaming pass, and noise calibrated to their
sensitivity is added once. The result is a :class:`Release` carrying its
guarantee; everything after it is free post-processing.

>>> import numpy as np
>>> import dpmoments as dpm
>>> X = np.random.default_rng(0).normal(size=(2000, 4)) / 4
>>> release = dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=1.0, center=None, rng=0)
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

from . import _lazy
from ._version import __version__

try:  # Ctrl-C here, in the command line, is one line (see _startup)
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
except KeyboardInterrupt:
    from ._startup import stop_if_command_line

    stop_if_command_line()
    raise

# Everything else is loaded on first use (``dpm.release_second_moment``, ``dpm.PrivatePCA``), so that
# ``import dpmoments`` -- paid by every command, ``dpmoments --version`` included, and every Flower process --
# loads neither NumPy's users nor SciPy nor scikit-learn (about 1.5 s) until they are needed.
_LAZY = {
    "moments": ("Release", "release_cross_moment", "release_second_moment", "release_third_moment"),
    "privacy": ("ZCDP", "Accountant", "ApproxDP", "PureDP", "Uncertified"),
    "estimators": ("PrivateCovariance", "PrivateCorrelation", "PrivateGraphicalLasso", "PrivateRidgePrecision",
                   "PrivatePCA", "PrivateTensorDecomposition", "PrivateIRLS", "PrivateModelSelection"),
}
__getattr__, __dir__ = _lazy.lazy_exports(__name__, _LAZY)

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
    *_LAZY["estimators"],
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
