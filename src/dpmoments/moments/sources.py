"""What an estimator may learn of its input before any release: its width, and whether it is streamed.

Both are public facts of the source (its shape or its kind), never of its values.
"""

import os

import numpy as np

from .._validation import check_data
from ..data import iter_chunks
from .dask_moments import is_dask_collection

__all__ = ["n_features_of", "out_of_core"]


def out_of_core(X):
    """A dask collection or a file path: released by streaming, never loaded whole here."""
    return is_dask_collection(X) or isinstance(X, (str, os.PathLike))


def n_features_of(X):
    """Columns of ``X`` without materialising it (dask collections and paths included).

    In-memory input is validated as before (``check_data``).
    """
    if is_dask_collection(X):
        if getattr(X, "ndim", 2) != 2:
            raise ValueError(f"'X' must be 2-D with shape (n_samples, n_features); got {X.ndim}-D.")
        return len(X.columns) if hasattr(X, "columns") else int(X.shape[1])
    if isinstance(X, (str, os.PathLike)) or _rereadable_stream(X):
        first = next(iter(iter_chunks(X, chunk_size=1)))
        return (first[0] if isinstance(first, tuple) else first).shape[1]
    return (X if isinstance(X, np.ndarray) and X.ndim == 2 else check_data(X)).shape[1]


def _rereadable_stream(X):
    """An object whose every iteration reads the chunks afresh (the command line's files), not an array."""
    return (not hasattr(X, "__array__") and not isinstance(X, (list, tuple)) and hasattr(X, "__iter__")
            and iter(X) is not X)
