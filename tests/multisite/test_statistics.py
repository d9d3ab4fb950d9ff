"""Each statistic one value: the names the wire and plans carry are unchanged, and the values answer for them."""

import copy
import pickle

import numpy as np
import pytest

from dpmoments.multisite import EgressRefused, Reply, from_wire, to_wire
from dpmoments.multisite.rounds import Round
from dpmoments.multisite.statistics import (CROSS, EXCESS, FACTOR, HISTOGRAM, LOCATION, ROUND_STATISTICS, SECOND,
                                            SIGN_SCORE, STATISTICS, THIRD, as_statistic)

PLAN = "cd" * 32


def test_names_are_the_wire_names_and_one_value_each():
    assert list(STATISTICS) == ["second", "cross", "third", "excess", "residual-scale", "sandwich-k", "sandwich-v",
                                "sign-score", "histogram", "location", "factor"]
    assert ROUND_STATISTICS == ("second", "cross", "third", "excess", "residual-scale", "sandwich-k", "sandwich-v",
                                "sign-score", "histogram", "location")
    for name, stat in STATISTICS.items():
        assert as_statistic(name) is stat and str(stat) == name
        assert pickle.loads(pickle.dumps(stat)) is stat and copy.deepcopy(stat) is stat
    assert Round("third").stat is THIRD and Round(THIRD) == Round("third")
    with pytest.raises(ValueError, match="'statistic'"):
        Round("factor")  # a DPdisPCA site's reply, never a round's release


def test_an_unknown_name_is_refused_in_one_line():
    with pytest.raises(ValueError, match="'statistic' must be one of") as err:
        as_statistic("fourth")
    assert "\n" not in str(err.value)


def test_the_wire_still_names_the_statistic_as_before():
    """A site of an earlier version reads ``value:<round>:<name>``: the key is the name, byte for byte."""
    wire = to_wire(Reply("a", PLAN, 1, "r1-x", 40, 3, {0: ("second", np.eye(3)), 1: ("cross", np.ones(3))}))
    assert b'"value:0:second"' in wire and b'"value:1:cross"' in wire
    back = from_wire(wire)
    assert {r: s for r, (s, _) in back.values.items()} == {0: "second", 1: "cross"}


def test_shapes_noise_and_symmetry():
    rng = np.random.default_rng(0)
    assert SECOND.shape(4) == (4, 4) and CROSS.shape(4) == (4,) and THIRD.shape(3) == (3, 3, 3)
    assert HISTOGRAM.shape(4, bins=12) == (12,) and LOCATION.shape(4, bins=12) == (4, 12)
    assert FACTOR.shape(4, rank=2) == (4, 2)
    assert SECOND.distinct_entries(4) == 10 and THIRD.distinct_entries(3) == 10 and CROSS.distinct_entries(4) == 4
    M, T = SECOND.unit_noise(4, rng), THIRD.unit_noise(3, rng)
    assert np.array_equal(M, M.T) and np.array_equal(T, T.transpose(2, 0, 1))
    assert SECOND.unit_noise(4, rng, size=0).shape == (0, 4, 4) and EXCESS.unit_noise(4, rng).shape == (4,)


def test_each_guard_refuses_what_its_statistic_cannot_be():
    with pytest.raises(EgressRefused, match="second-moment payload must be exactly symmetric"):
        Reply("a", PLAN, 0, "r1-x", 50, 3, {0: ("second", np.arange(9.0).reshape(3, 3))})  # a reply's own guard
    tensor = np.zeros((3, 3, 3))
    tensor[0, 1, 2] = 1.0
    with pytest.raises(EgressRefused, match="third-moment payload must be fully symmetric"):
        THIRD.guard(tensor, 3)
    with pytest.raises(EgressRefused, match="histogram payload"):
        HISTOGRAM.guard(np.ones(1), 3)
    with pytest.raises(EgressRefused, match="location payload"):
        LOCATION.guard(np.ones((2, 8)), 3)
    with pytest.raises(EgressRefused, match="factor payload"):
        FACTOR.guard(np.ones((3, 4)), 3)


def test_sites_shares_combine_as_their_statistic_says():
    v, f = np.array([3.0, 5.0]), np.array([1.0, 1.0])
    assert np.array_equal(CROSS.summand(v, 0.5, f), [1.0, 2.0])
    assert np.array_equal(HISTOGRAM.summand(v, 0.5, f), v)  # counts add: no weights, no shares
    P = np.array([[1.0], [2.0]])
    assert np.array_equal(FACTOR.summand(P, 2.0, 0.0), 2.0 * P @ P.T)


def test_sensitivity_and_entry_bounds_are_the_moments_tables():
    from dpmoments.moments import moment_sensitivity

    kw = dict(n_features=3, row_norm=2.0, neighbours="replace-one")
    assert SECOND.sensitivity(100, response_bound=None, **kw) == moment_sensitivity(
        "second", norm="l2", n_samples=100, **kw)
    assert SECOND.entry_bound(2.0, None) == 4.0 and THIRD.entry_bound(2.0, None) == 8.0
    assert CROSS.entry_bound(2.0, 3.0) == 6.0
    with pytest.raises(ValueError, match="response_bound"):
        CROSS.entry_bound(2.0, None)
    with pytest.raises(ValueError, match="not calibrated"):
        FACTOR.sensitivity(100, response_bound=None, **kw)
    # LAD's sign score: each entry of a row's term sign(r) z is at most R, and its pair moves by 2R (or R + k < 2R
    # with a zeroed row that keeps the constant column); a forged reply beyond R is caught at the door's check
    assert SIGN_SCORE.entry_bound(2.0, 3.0) == 2.0 and SIGN_SCORE.shape(3) == (3,)
    assert SIGN_SCORE.distinct_entries(3) == 3
    assert SIGN_SCORE.sensitivity(100, response_bound=3.0, **kw) == pytest.approx(0.04)
    assert SIGN_SCORE.sensitivity(100, response_bound=3.0, **{**kw, "neighbours": "zero-out"}) == pytest.approx(0.04)
