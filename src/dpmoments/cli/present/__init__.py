"""How each analysis is presented: its files, console tables and figures, one module per analysis.

A presenter module holds what the single-site command and the multi-site commands share:
``save_*`` (the files), the console lines, the noise rule (``*_noise``: what is shown with a
warning and what is withheld), the figures, and ``across_sites(args, analysis, output, names,
estimators)``, the analysis fitted to a multi-site output. :data:`PRESENTERS` is keyed like
:data:`dpmoments.multisite.analyses.ANALYSES`.
"""

from . import correlation, covariance, pca, precision, regress, select, tensor

__all__ = ["PRESENTERS"]

#: analysis (a key of :data:`dpmoments.multisite.analyses.ANALYSES`) -> its presenter module
PRESENTERS = {
    "covariance": covariance, "correlation": correlation, "pca": pca, "precision": precision, "ridge": precision,
    "select": select, "tensor-mog": tensor, "tensor-stm": tensor, "regress": regress,
}
