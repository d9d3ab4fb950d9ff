"""Every exponential-mechanism draw's epsilon is in the report (issue 29): the composition is recomputed from the
report alone, part by part, and meets the guarantee it states."""

import math
import warnings

import numpy as np
import pytest

from dpmoments.estimators import PrivateCovariance
from dpmoments.moments import release_second_moment
from dpmoments.privacy import zcdp_to_approx_dp

X = np.random.default_rng(0).normal(size=(20000, 3)) * [1, 5, 20] + [3, 0, -1]


def _part_rho(part):
    draws = part.get("draws")
    if draws is None:
        return part["guarantee"]["rho"]  # a Gaussian release, stated in zCDP
    assert draws["mechanism"] == "exponential" and draws["sensitivity"] == 1
    return draws["count"] * draws["epsilon_each"] ** 2 / 8


def test_the_composed_guarantee_is_recomputed_from_the_report_alone():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = PrivateCovariance(epsilon=1, delta=1e-6, row_norm="auto", scale="private", rng=0).fit(X).privacy_report_
    parts = report["parts"]
    drawn = [p for p in parts if "draws" in p]
    assert {p["label"] for p in drawn} >= {"location", "column scales", "row_norm"}
    for p in drawn:  # each draw part's guarantee is its draws' sum
        assert p["guarantee"]["rho"] == pytest.approx(_part_rho(p), rel=1e-9)
    rho = sum(_part_rho(p) for p in parts)
    assert zcdp_to_approx_dp(rho, 1e-6) == pytest.approx(report["guarantee"]["epsilon"], rel=1e-6)
    assert report["guarantee"]["epsilon"] == pytest.approx(1.0, rel=1e-6)


def test_pure_draws_add_up_in_epsilon():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release_second_moment(X, epsilon=2.0, row_norm="auto", mechanism="laplace", rng=0, center=None)
    parts = rel.to_dict()["parts"]
    (bound,) = [p for p in parts if "draws" in p]
    assert bound["draws"]["composed_as"].startswith("pure")
    assert bound["guarantee"]["epsilon"] == pytest.approx(bound["draws"]["count"] * bound["draws"]["epsilon_each"])
    assert sum(p["guarantee"]["epsilon"] for p in parts) == pytest.approx(rel.guarantee.epsilon)
    assert math.isclose(rel.guarantee.epsilon, 2.0, rel_tol=1e-9)
