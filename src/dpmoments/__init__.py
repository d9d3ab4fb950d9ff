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
"""

from ._version import __version__
from .exceptions import (
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
    "BudgetExceededError",
    "UncertifiedSpendError",
    "UncertifiedPrivacyWarning",
    "NotPrivateWarning",
    "PrivacyLeakWarning",
    "InsecureRandomnessWarning",
    "NoiseDominatesWarning",
    "__version__",
]
