"""Noise only: the random draws behind every release.

Layer 1. Functions here take a noise scale (or epsilon and a sensitivity for
selection) and an ``rng``; they know nothing of budgets, accounting or the
guarantee a draw carries. Each noise law is also a frozen value
(:mod:`~dpmoments.mechanisms.laws`): what the library asks of a mechanism
instead of comparing its name. Calibration lives in :mod:`dpmoments.privacy`, and
the release functions in :mod:`dpmoments.moments` join the two.
"""

from .. import _lazy

# Imported on first use, like the other packages' names (dpmoments._lazy).
__getattr__, __dir__ = _lazy.lazy_exports(__name__, {
    "laws": ("Mechanism", "as_mechanism", "MECHANISMS", "NONE", "GAUSSIAN", "LAPLACE", "WISHART", "WISHART_APPROX",
             "DISCRETE_GAUSSIAN", "DISCRETE_LAPLACE"),
    "noise": ("gaussian_noise", "laplace_noise"),
    "selection": ("exponential_mechanism", "exponential_mechanism_probabilities", "report_noisy_max",
                  "report_noisy_min"),
    "symmetric": ("orbit_vector", "symmetric_matrix_noise", "symmetric_tensor_noise", "upper_triangle"),
    "wishart": ("sheffet_degrees_of_freedom", "wishart_noise"),
})

__all__ = [
    "Mechanism",
    "as_mechanism",
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
