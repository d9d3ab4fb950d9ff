"""Deprecated alias of :mod:`dpmoments.moments.tensor_moments` (kept for one release)."""

import warnings

from ..moments.tensor_moments import *  # noqa: F401,F403
from ..moments.tensor_moments import __all__  # noqa: F401

warnings.warn("dpmoments.estimators.tensor_moments moved to dpmoments.moments.tensor_moments; the old path is "
              "removed in the next release.", DeprecationWarning, stacklevel=2)
