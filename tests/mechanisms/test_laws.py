"""The mechanism as a value: parsed once from its name, written back as the same name, unknown names refused."""

import math

import numpy as np
import pytest

from dpmoments.mechanisms import laws
from dpmoments.mechanisms.laws import GAUSSIAN, LAPLACE, MECHANISMS, NONE, WISHART, as_mechanism


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_the_value_round_trips_through_its_name(name):
    mech = as_mechanism(name, allowed=tuple(MECHANISMS.values()))
    assert mech.name == name and str(mech) == name
    assert as_mechanism(mech, allowed=tuple(MECHANISMS.values())) is mech
    assert as_mechanism(str(mech), allowed=tuple(MECHANISMS.values())) == mech


@pytest.mark.parametrize("value", ["Gaussian", "cauchy", "", None, 1, "discrete-gaussian"])
def test_an_unknown_or_unoffered_name_is_refused_in_one_line_naming_the_parameter(value):
    with pytest.raises(ValueError) as err:
        as_mechanism(value, "first_moment", laws.ADDITIVE)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("'first_moment' must be one of 'gaussian', 'laplace'; got")


def test_a_value_outside_the_allowed_ones_is_refused_by_its_name():
    with pytest.raises(ValueError, match="got 'wishart'"):
        as_mechanism(WISHART, allowed=laws.ADDITIVE)


def test_what_the_call_sites_ask():
    assert (GAUSSIAN.norm, LAPLACE.norm, WISHART.norm) == ("l2", "l1", None)
    assert GAUSSIAN.needs_delta and not LAPLACE.needs_delta and laws.WISHART_APPROX.needs_delta
    assert GAUSSIAN.zcdp and not LAPLACE.zcdp and not WISHART.certified
    assert laws.DISCRETE_LAPLACE.family == "laplace" and laws.WISHART_APPROX.family == "wishart"
    assert LAPLACE.sd(2.0) == math.sqrt(2.0) * 2.0 and NONE.sd(3.0) == 0.0 and WISHART.sd(2.0, 4) == 4.0


def test_draws_are_centred_and_seeded_like_the_samplers():
    from dpmoments.mechanisms import symmetric_matrix_noise
    a = LAPLACE.matrix(3, 0.5, np.random.default_rng(1))
    assert np.array_equal(a, symmetric_matrix_noise(3, 0.5, np.random.default_rng(1), distribution="laplace"))
    with pytest.raises(ValueError, match="no vector form"):
        WISHART.vector(3, 1.0, np.random.default_rng(0))


def test_a_value_is_written_back_as_its_name_and_quoted_short():
    assert repr(WISHART) == "Wishart('wishart')" and f"{LAPLACE}" == "laplace"


def test_an_estimator_and_a_release_take_the_value_as_they_take_the_name():
    import warnings

    import dpmoments as dpm

    X = np.random.default_rng(0).normal(size=(200, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_value = dpm.PrivateCovariance(epsilon=1, row_norm=3, center=None, mechanism=LAPLACE, rng=0).fit(X)
        by_name = dpm.PrivateCovariance(epsilon=1, row_norm=3, center=None, mechanism="laplace", rng=0).fit(X)
    assert np.array_equal(by_value.covariance_, by_name.covariance_)
    assert by_value.release_.mechanism == "laplace" and by_value.release_.law is LAPLACE
    release = dpm.release_second_moment(X, epsilon=1, row_norm=3, center=None, mechanism=LAPLACE, rng=0)
    assert release.to_dict()["mechanism"] == "laplace"  # the on-disk format is the name


def test_every_law_offered_to_a_release_has_its_calibration_joined():
    from dpmoments.moments.calibrated import CALIBRATE

    assert set(laws.ADDITIVE) <= set(CALIBRATE)
    assert all(law.norm in ("l1", "l2") for law in CALIBRATE)  # the norms moments.sensitivity measures


def test_a_copied_or_unpickled_value_is_the_one_value_of_its_name():
    import copy
    import pickle

    assert copy.deepcopy(LAPLACE) is LAPLACE and pickle.loads(pickle.dumps(WISHART)) is WISHART


def test_a_law_made_outside_the_table_is_refused_even_under_a_known_name():
    forged = laws.Gaussian("gaussian", norm="l1")  # the right name, the wrong norm
    with pytest.raises(ValueError, match="^'mechanism' must be one of the library's noise laws .*unregistered "
                                         "Gaussian named 'gaussian'"):
        as_mechanism(forged)
