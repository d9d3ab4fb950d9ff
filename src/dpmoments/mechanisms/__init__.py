"""Noise only: the random draws behind every release.

Layer 1. Functions here take a noise scale (or epsilon and a sensitivity for
selection) and an ``rng``; they know nothing of budgets, accounting or the
guarantee a draw carries. Calibration lives in :mod:`dpmoments.privacy`, and
the release functions in :mod:`dpmoments.moments` join the two.
"""

from .noise import gaussian_noise, laplace_noise
from .selection import (
    exponential_mechanism,
    exponential_mechanism_probabilities,
    report_noisy_max,
    report_noisy_min,
)
from .symmetric import (
    orbit_vector,
    symmetric_matrix_noise,
    symmetric_tensor_noise,
    upper_triangle,
)
from .wishart import sheffet_degrees_of_freedom, wishart_noise

__all__ = [
    "gaussian_noise",
    "laplace_noise",
    "symmetric_matrix_noise",
    "symmetric_tensor_noise",
    "upper_triangle",
    "orbit_vector",
    "wishart_noise",
    "sheffet_degrees_of_freedom",
    "report_noisy_min",
    "report_noisy_max",
    "exponential_mechanism",
    "exponential_mechanism_probabilities",
]
