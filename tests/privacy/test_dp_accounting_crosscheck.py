"""Our composed (epsilon, delta) is never below Google's dp-accounting for the same events.

dp-accounting's PLD accountant is (numerically) tight and its RDP accountant
a valid bound; a correct accountant of ours can be looser, never tighter
than PLD by more than PLD's own discretisation slack.
"""

import math

import pytest

from dpmoments import Accountant, ApproxDP, PureDP
from dpmoments.privacy import analytic_gaussian_sigma, gaussian_rho

dpa = pytest.importorskip("dp_accounting")
from dp_accounting import pld  # noqa: E402

DELTA = 1e-6
SLACK = 1e-3  # relative: PLD discretisation is pessimistic by a hair


def _ours(spends, composition):
    acct = Accountant(ApproxDP(1e6, DELTA), composition=composition)
    for g in spends:
        acct.spend(g)
    return acct.spent.epsilon


def _pld(events):
    acct = pld.PLDAccountant()
    for event, count in events:
        acct.compose(event, count)
    return acct.get_epsilon(DELTA)


@pytest.mark.parametrize("noise_multiplier,count", [(0.8, 1), (2.0, 10), (5.0, 50), (1.0, 3)])
def test_gaussian_compositions(noise_multiplier, count):
    rho = gaussian_rho(noise_multiplier, 1.0)
    spends = [ApproxDP(1e3, 1e-12, rho=rho)] * count  # the (eps, delta) part is irrelevant in zCDP
    ours = _ours(spends, "zcdp")
    assert ours >= _pld([(dpa.GaussianDpEvent(noise_multiplier), count)]) * (1 - SLACK)


@pytest.mark.parametrize("epsilon,count", [(0.1, 20), (1.0, 5), (0.5, 1)])
def test_laplace_compositions(epsilon, count):
    ours_basic = _ours([PureDP(epsilon)] * count, "basic")
    ours_zcdp = _ours([PureDP(epsilon)] * count, "zcdp")
    reference = _pld([(dpa.LaplaceDpEvent(1.0 / epsilon), count)])
    assert min(ours_basic, ours_zcdp) >= reference * (1 - SLACK)


def test_mixed_gaussian_and_laplace():
    sigma = analytic_gaussian_sigma(1.0, 1e-7)
    spends = [ApproxDP(1.0, 1e-7, rho=gaussian_rho(sigma))] * 4 + [PureDP(0.3)] * 3
    ours = _ours(spends, "zcdp")
    reference = _pld([(dpa.GaussianDpEvent(sigma), 4), (dpa.LaplaceDpEvent(1 / 0.3), 3)])
    assert ours >= reference * (1 - SLACK)
    assert math.isfinite(ours)
