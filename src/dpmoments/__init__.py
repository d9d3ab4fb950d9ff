"""dpmoments: differentially private multivariate statistics."""

from ._version import __version__
