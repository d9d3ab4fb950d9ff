"""Results in the user's terms: a fitted matrix or vector as a pandas object labelled by the input's columns.

Post-processing of released values only; pandas is needed here alone (the
readers' own dependency), imported when called.
"""

import numpy as np

__all__ = ["labelled"]


def labelled(values, names, what="value", rows=None):
    """``values`` (d,), (d, d) or (k, d) as a Series/DataFrame over ``names`` (the d feature columns).

    ``rows``: the prefix of the rows of a (k, d) array over the features, or
    of the entries of a (k,) vector (one per component), numbered from 1
    (``"pc"``: ``pc1, pc2, ...``); then a (d, d) array is read as k = d rows
    too. Without it a (k, d) array with k != d is read as principal
    components, indexed ``pc1, pc2, ...``.
    """
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("labelled results need pandas: pip install pandas") from None
    values, names = np.asarray(values), [str(n) for n in names]
    d = len(names)
    if rows is not None and values.ndim in (1, 2):
        index = [f"{rows}{k + 1}" for k in range(values.shape[0])]
        if values.ndim == 1:
            return pd.Series(values, index=index, name=what)
        if values.shape[1] == d:
            return pd.DataFrame(values, index=index, columns=names)
    if values.ndim == 1 and values.shape[0] == d:
        return pd.Series(values, index=names, name=what)
    if values.ndim == 2 and values.shape == (d, d):
        return pd.DataFrame(values, index=names, columns=names)
    if values.ndim == 2 and values.shape[1] == d:
        return pd.DataFrame(values, index=[f"pc{k + 1}" for k in range(values.shape[0])], columns=names)
    raise ValueError(f"'{what}' has shape {values.shape}, which is not labelled by {d} feature columns.")
