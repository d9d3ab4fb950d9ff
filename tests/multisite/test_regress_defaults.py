"""Across sites, ``regress`` takes the single-site defaults it can (one set of defaults): ``n_iter`` 10 and
``w_max = 5 / response_bound`` from a public response bound; with an "auto" one, ``--w-max`` is refused by name."""

import argparse

import pytest

from dpmoments.cli._args import CliError
from dpmoments.cli._multisite import check_analysis, plan_options
from dpmoments.estimators import PrivateIRLS
from dpmoments.estimators.model_defaults import W_MAX_AUTO


def _args(**kw):
    return argparse.Namespace(**{"analysis": "regress", "n_iter": None, "w_max": None, "response_bound": None, "p": 1.0,
                                 **kw})


def test_regress_across_sites_defaults_as_the_estimator():
    args = _args(response_bound=4.0)
    check_analysis(args, fit=False)
    est = PrivateIRLS(epsilon=1.0, delta=1e-6, response_bound=4.0)
    plan = plan_options(args)  # the defaults enter the plan; the parsed options are not written into
    assert plan["n_iter"] == est.n_iter and plan["w_max"] == W_MAX_AUTO / 4.0 == est._w_max()


def test_given_values_are_kept():
    args = _args(response_bound=4.0, n_iter=3, w_max=7.0)
    check_analysis(args, fit=False)
    assert (plan_options(args)["n_iter"], plan_options(args)["w_max"]) == (3, 7.0)


def test_an_auto_response_bound_needs_a_public_w_max():
    with pytest.raises(CliError, match="--w-max is required .* with --response-bound auto: --w-max defaults to 5 / B only for a public"):
        check_analysis(_args(response_bound="auto"), fit=False)
