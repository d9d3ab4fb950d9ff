"""Synthetic precision-matrix models and bundled real data (layer 4).

* :func:`su_model`, :func:`ar_precision`, :func:`cai_precision`: the
  precision matrices of Su, Guo & Zhang's Models 1--4;
* :func:`sample_gaussian`, :func:`make_precision_data`: Gaussian rows, clipped
  to a public bound;
* :func:`max_norm_scale`: the papers' data-dependent scaling, for
  reproductions only (warns :class:`~dpmoments.exceptions.PrivacyLeakWarning`);
* :func:`load_sachs`: the Sachs et al. (2005) cell-signalling data, loaded
  offline from files shipped inside the package.
"""

from .. import _lazy

# Imported on first use: a generator of one model does not load every model's SciPy modules.
__getattr__, __dir__ = _lazy.lazy_exports(__name__, {
    "mixtures": ("Mixture", "make_mog", "make_single_topic"),
    "precision_models": ("ar_precision", "cai_precision", "make_precision_data", "max_norm_scale", "sample_gaussian",
                         "su_model"),
    "sachs": ("SachsData", "load_sachs"),
})

__all__ = [
    "su_model",
    "ar_precision",
    "cai_precision",
    "sample_gaussian",
    "make_precision_data",
    "max_norm_scale",
    "load_sachs",
    "make_mog",
    "make_single_topic",
    "Mixture",
    "SachsData",
]
