"""Across sites, ``regress`` takes the single-site defaults (one set of defaults): ``n_iter`` 10, a private response
bound (``"auto"``, drawn across sites) and ``w_max = 5 / response_bound``, fixed from a public bound or divided by
the chosen one when the plan is resolved."""

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


def test_the_response_bound_is_private_by_default_and_w_max_follows_it():
    from dpmoments.cli import build_parser
    from dpmoments.cli._multisite import response_bound_of

    args = build_parser().parse_args(["simulate", "a.csv", "b.csv", "--analysis", "regress", "--target", "y",
                                      "--epsilon", "1", "--delta", "1e-6", "--out", "o"])
    check_analysis(args)
    assert response_bound_of(args) == "auto" == PrivateIRLS(epsilon=1.0, delta=1e-6).response_bound
    options = plan_options(args)
    assert options["w_max"] is None and options["w_max_per_bound"] == W_MAX_AUTO
    assert response_bound_of(_args(analysis="covariance")) is None  # the other analyses take none


def test_a_resolved_plan_weighs_at_five_over_the_chosen_bound_with_its_noise():
    """The auto plan resolved at B has the weights, and the sensitivities, of a plan built with the public B."""
    from dpmoments.multisite.analyses import plan_analysis

    facts = dict(n_features=3, epsilon=1.0, delta=1e-6, row_norm=2.0)
    auto = plan_analysis("regress", "cape", ["a", "b"], [40_000, 40_000], response_bound="auto",
                         options={"n_iter": 2, "w_max_per_bound": W_MAX_AUTO}, **facts)
    edge = auto.auto.edges()[40]
    resolved = auto.resolved(bounds={"response_bound": edge})
    public = plan_analysis("regress", "cape", ["a", "b"], [40_000, 40_000], response_bound=edge,
                           options={"n_iter": 2, "w_max": W_MAX_AUTO / edge}, **facts)
    moments = [i for i, r in enumerate(public.rounds) if r.w_max is not None]
    assert [r.w_max for r in resolved.rounds if r.w_max is not None] == [W_MAX_AUTO / edge] * len(moments)
    for i, j in zip([i for i, r in enumerate(resolved.rounds) if r.w_max is not None], moments):
        assert resolved.noise[i].sensitivity[0] == pytest.approx(public.noise[j].sensitivity[0], rel=1e-12)
    assert resolved.digest == auto.digest and auto.option("w_max_per_bound") == W_MAX_AUTO


def test_regress_runs_across_sites_with_the_defaults_alone(tmp_path, capsys):
    """Only epsilon and delta: the bounds and the weights are chosen, and each share is listed."""
    import json

    import numpy as np

    from ..cli.helpers import in_process

    rng = np.random.default_rng(0)
    paths = []
    for name in ("a", "b"):
        X = rng.normal(size=(8_000, 2))
        np.savetxt(tmp_path / f"{name}.csv", np.c_[X, X @ [1.0, -1.0] + 0.3 * rng.normal(size=8_000)],
                   delimiter=",", header="p,q,y", comments="", fmt="%.4f")
        paths.append(tmp_path / f"{name}.csv")
    res = in_process(capsys)("simulate", *paths, "--analysis", "regress", "--target", "y", "--epsilon", 2,
                             "--delta", "1e-6", "--seed", 0, "--out", tmp_path / "o", "-q", "--no-figures")
    assert res.returncode == 0, res.stderr
    report = json.loads((tmp_path / "o" / "privacy_report.json").read_text())
    labels = [p["label"] for p in report["private_choices"]["parts"]]
    assert labels[:2] == ["row_norm", "response_bound"]
    assert report["analysis"]["coefficients"]["p"] == pytest.approx(1.0, abs=0.2)
