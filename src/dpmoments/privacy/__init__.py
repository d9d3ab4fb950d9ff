"""Guarantees, their conversions, noise calibration and the accountant.

This layer knows numbers and guarantees, never data.
"""

from .. import _lazy

# Imported on first use: the calibrations load scipy.special, which a command that draws no noise never needs.
__getattr__, __dir__ = _lazy.lazy_exports(__name__, {
    "accountant": ("Accountant", "Spend", "check_accountant"),
    "budget_rule": ("COMPOSITIONS",),
    "calibration": ("CALIBRATIONS", "analytic_gaussian_sigma", "calibrate_gaussian", "calibrate_laplace",
                    "classic_gaussian_sigma", "gaussian_delta", "gaussian_epsilon", "gaussian_rho", "laplace_scale",
                    "zcdp_gaussian_sigma"),
    "composition": ("compose", "parallel"),
    "conversions": ("advanced_composition", "pure_to_zcdp", "zcdp_delta", "zcdp_to_approx_dp"),
    "guarantees": ("ApproxDP", "PureDP", "Uncertified", "ZCDP"),
    "relations": ("NEIGHBOURS",),
})

__all__ = [
    "Accountant",
    "Spend",
    "check_accountant",
    "COMPOSITIONS",
    "CALIBRATIONS",
    "PureDP",
    "ApproxDP",
    "ZCDP",
    "Uncertified",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "zcdp_gaussian_sigma",
    "gaussian_rho",
    "gaussian_delta",
    "gaussian_epsilon",
    "laplace_scale",
    "calibrate_gaussian",
    "calibrate_laplace",
    "pure_to_zcdp",
    "zcdp_to_approx_dp",
    "zcdp_delta",
    "advanced_composition",
    "compose",
    "parallel",
    "NEIGHBOURS",
]
