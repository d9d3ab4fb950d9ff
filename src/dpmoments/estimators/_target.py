"""The response vector of a supervised estimator, checked the scikit-learn way."""

import warnings

import numpy as np
from sklearn.exceptions import DataConversionWarning

from .._validation import check_vector


def check_target(y, n_samples, owner):
    """A finite 1-D ``y`` with one entry per row; a column vector is raveled with a warning."""
    if y is None:
        raise ValueError(f"{owner} requires y to be passed, but the target y is None.")
    arr = np.asarray(y)
    if arr.ndim == 2 and arr.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; it is raveled.",
                      DataConversionWarning, stacklevel=3)
        y = arr.ravel()
    return check_vector(y, "y", length=n_samples)
