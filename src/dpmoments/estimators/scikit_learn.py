"""The scikit-learn estimators: each analysis's fit on scikit-learn's ``BaseEstimator``, one class statement each.

An analysis's logic, parameters and documentation are written once, in its own module, in a class
that imports no scikit-learn (:class:`~dpmoments.estimators.covariance.CovarianceFit`, ...), because
the command line fits that class and never pays scikit-learn's import (about 1.5 s: it loads
scipy.stats and pandas). Here each one gains ``BaseEstimator`` (``get_params``, ``set_params``,
``clone``, ``repr``, tags, pickling) and, where it is a transformer, scikit-learn's mixins. Its
parameters are its fit class's (``_params.py``: each declared once, with its default and check), and
so is its documentation (``help(PrivateCovariance)`` shows it). This module is imported on the first
look-up of one of its names (``dpmoments.PrivateCovariance``, ``dpmoments.estimators.PrivatePCA``),
so ``import dpmoments`` and the command line load no scikit-learn.

A new estimator's class goes here (its logic in its own module) and its name in
``estimators/__init__.py``.
"""

from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin

from ._conventions import clone_sharing_tally
from .correlation import CorrelationFit
from .covariance import CovarianceFit
from .pca import PCAFit
from .precision import GraphicalLassoFit
from .ridge import RidgePrecisionFit
from .tensor import TensorDecompositionFit

__all__ = ["PrivateCorrelation", "PrivateCovariance", "PrivateGraphicalLasso", "PrivatePCA", "PrivateRidgePrecision",
           "PrivateTensorDecomposition"]


# Every class: its fit class first (whose methods win over the mixins'), then scikit-learn's mixins, BaseEstimator
# last; clones count their fits with the original's (clone_sharing_tally). No docstring: the fit class's is
# inherited (help(), Sphinx), and doctest runs its examples once.

class PrivateCovariance(CovarianceFit, BaseEstimator):
    __sklearn_clone__ = clone_sharing_tally


class PrivateCorrelation(CorrelationFit, BaseEstimator):
    __sklearn_clone__ = clone_sharing_tally


class PrivateGraphicalLasso(GraphicalLassoFit, BaseEstimator):
    __sklearn_clone__ = clone_sharing_tally


class PrivateRidgePrecision(RidgePrecisionFit, BaseEstimator):
    __sklearn_clone__ = clone_sharing_tally


class PrivatePCA(PCAFit, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    __sklearn_clone__ = clone_sharing_tally
    transform = PCAFit.transform  # in this class's own namespace, where set_output's wrapper (pandas output) finds it


class PrivateTensorDecomposition(TensorDecompositionFit, BaseEstimator):
    __sklearn_clone__ = clone_sharing_tally
