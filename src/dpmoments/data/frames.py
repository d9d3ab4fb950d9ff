"""Results in the user's terms: a fitted matrix or vector as a pandas object labelled by the input's columns.

Post-processing of released values only; pandas is needed here alone (the
readers' own dependency), imported when called.
"""

import numpy as np

__all__ = ["labelled"]


def labelled(values, names, what="value"):
    """``values`` (d,), (d, d) or (k, d) as a Series/DataFrame over ``names`` (the d feature columns).

    A (k, d) array with k != d is read as k rows over the features (principal
    components), indexed ``pc1, pc2, ...``.
    """
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("labelled results need pandas: pip install pandas") from None
    values, names = np.asarray(values), [str(n) for n in names]
    d = len(names)
    if values.ndim == 1 and values.shape[0] == d:
        return pd.Series(values, index=names, name=what)
    if values.ndim == 2 and values.shape == (d, d):
        return pd.DataFrame(values, index=names, columns=names)
    if values.ndim == 2 and values.shape[1] == d:
        return pd.DataFrame(values, index=[f"pc{k + 1}" for k in range(values.shape[0])], columns=names)
    raise ValueError(f"'{what}' has shape {values.shape}, which is not labelled by {d} feature columns.")
