"""Per-column public ranges across sites: a part of the plan every site checks and applies to its own rows.

As on one machine (``--ranges``), each ranged column is clipped to its range and standardised by its
midpoint and half-width for free; the release is mapped back to the user's units and says which columns
had a range. The ranges are public: a change to the data but not the ranges changes no noise.
"""

import json
import warnings

import numpy as np
import pytest

from dpmoments.exceptions import NotPrivateWarning
from dpmoments.multisite import InProcessTransport, Plan, Site, deal, run_plan
from dpmoments.multisite.analyses import finish_analysis, plan_analysis
from dpmoments.multisite.api import analyse

from ..cli.helpers import assert_one_line_error, in_process

RANGES = {0: (0.0, 120.0), 2: (0.0, 1.0)}


def _table(rng, n):
    age = rng.uniform(20, 80, n)
    return np.c_[age, age / 10 + rng.normal(size=n), (rng.uniform(size=n) < 0.3).astype(float)]


def _plan(**kw):
    kw = {"n_features": 3, "row_norm": 3.0, "epsilon": 1.0, "delta": 1e-5, **kw}
    return Plan.build("cape", ["north", "south"], [40, 60], **kw)


def test_the_ranges_travel_in_the_plan_and_a_plan_without_them_keeps_its_form():
    plan = _plan(ranges=RANGES)
    again = Plan.from_json(plan.to_json())
    assert again.ranges == ((0.0, 120.0), None, (0.0, 1.0)) and again.digest == plan.digest
    assert "ranges" not in _plan().to_dict()  # plans dealt before keep their digest
    named = _plan(columns=["age", "score", "smoker"], ranges={"age": (0, 120)})
    assert named.ranges == ((0.0, 120.0), None, None)


@pytest.mark.parametrize("kw, words", [
    ({"ranges": {"age": (0, 1)}}, "'age', which is not a feature column"),
    ({"ranges": {0: (1, 0)}}, "lower < upper"),
    ({"ranges": [(0, 1)]}, "one (lower, upper) or None per column (3)"),
    ({"ranges": {0: (0, 1), 1: (0, 1), 2: (0, 1)}, "center": [1.0, 2.0, 3.0]}, "public 'center' with 'ranges'"),
])
def test_the_plan_refuses_ranges_that_do_not_fit_it_in_one_line(kw, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        _plan(**kw)


def test_an_analysis_that_takes_no_ranges_refuses_them():
    with pytest.raises(ValueError, match="'ranges' across sites are for covariance"):
        plan_analysis("tensor-stm", "cape", ["a", "b"], [50, 50], n_features=3, row_norm=1.0, epsilon=1.0,
                      delta=1e-5, ranges={0: (0, 1)}, options={"vocabulary_size": 1})


def test_regress_select_and_the_mixture_across_sites_map_the_rows_as_one_machine():
    """No noise: IRLS's coefficients are one machine's with the same ranges (the response's too); model selection's
    release keeps the mapped moments, with the half-widths and midpoints to map its coefficients back; the mixture's
    ranges clip only (its sigma2 is in the data's units)."""
    from dpmoments.estimators import PrivateIRLS, PrivateModelSelection
    from dpmoments.multisite.api import release_tensor_moments

    rng = np.random.default_rng(7)
    X = _table(rng, 400)
    X[0, 0] = 150.0  # beyond its range: clipped, on both sides
    y = 0.05 * X[:, 0] - X[:, 1] + 2 * X[:, 2] + 10 + 0.1 * rng.normal(size=400)
    options = {"n_iter": 3, "w_max_per_bound": 5.0, "p": 2.0, "intercept": 0.5, "response_range": (0, 30)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sites = [Site(f"s{k}", X[k::2], y[k::2], row_norm=3.0, response_bound="auto", ranges=RANGES) for k in (0, 1)]
        fit, _ = analyse(sites, "regress", epsilon=float("inf"), delta=0.0, rng=0, options=options)
        est = PrivateIRLS(epsilon=None, delta=None, row_norm=None, response_bound=None, n_iter=3, w_max=None,
                          rng=0).fit_release(fit)
        one = PrivateIRLS(epsilon=float("inf"), delta=0, row_norm=3.0, response_bound="auto", n_iter=3, p=2.0,
                          ranges=RANGES, response_range=(0, 30), rng=0).fit(X, y)
        np.testing.assert_allclose(np.r_[est.coef_, est.intercept_], np.r_[one.coef_, one.intercept_], rtol=1e-9)
        assert fit.postprocessing[0].startswith("public ranges for x0, x2")
        sites = [Site(f"s{k}", X[k::2], y[k::2], row_norm=3.0, ranges=RANGES) for k in (0, 1)]
        release, _ = analyse(sites, "select", epsilon=float("inf"), delta=0.0, rng=0,
                             options={"response_range": (0, 30)})
        np.testing.assert_allclose(release.column_scale, [60.0, 1.0, 0.5, 15.0])
        selection = PrivateModelSelection(epsilon=1.0, bounds=1.0, response_bound=1.0, R=10.0, sigma2=1.0,
                                          rng=0).fit_release(release)
        assert selection.selected_ == (0, 1, 2) and selection.coef_[0] > 0 > selection.coef_[1]
        sites = [Site(f"s{k}", X[k::2], row_norm=200.0, ranges=RANGES) for k in (0, 1)]
        moments, _ = release_tensor_moments(sites, model="mog", epsilon=float("inf"), delta=0.0, sigma2=1.0, rng=0)
    clipped = np.clip(X, [0, -np.inf, 0], [120, np.inf, 1])
    np.testing.assert_allclose(moments.second.second_moment, clipped.T @ clipped / 400, rtol=1e-10)
    assert any(step.startswith("public ranges for x0, x2") for step in moments.second.postprocessing)
    from dpmoments.cli._ranges import ranges_lines  # the command line's ranges line, from every output

    assert all(ranges_lines(out)[0].startswith("ranges: public ranges for x0, x2") for out in (fit, release, moments))


def test_private_scales_across_sites_with_ranges_for_some_columns():
    """The mixed case: a 0/1 column keeps its range's scale, the others get private scales read off the location
    steps' histograms (no share of their own), and the release maps back to the user's units."""
    rng = np.random.default_rng(8)
    X = _table(rng, 3000) * [1.0, 1000.0, 1.0]  # the unranged column in units a thousand times larger
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sites = [Site(f"s{k}", X[k::3], row_norm="auto", center="private", ranges=RANGES) for k in range(3)]
        release, report = analyse(sites, "covariance", epsilon=8.0, delta=1e-6, rng=0)
    assert release.column_scale[2] == 0.5  # the 0/1 column: its half-width, known
    assert 0.2 < release.column_scale[1] / (np.median(np.abs(X[:, 1] - np.median(X[:, 1])))) < 5
    assert 0.05 * 60 <= release.column_scale[0] <= 2 * 60  # within the range's limits
    assert "private location and scale for x1" in release.postprocessing[-1]
    assert [p.share for p in report.choices] == [p.share for p in report.choices]  # no new part: free
    assert not any("scale" in p.label for p in report.choices)
    cov = release.column_scale[:, None] * release.second_moment * release.column_scale
    np.testing.assert_allclose(cov[1, 1] / np.var(X[:, 1]), 1.0, atol=0.5)


def test_the_sites_release_in_the_users_units_as_one_machine_maps_its_rows():
    """No noise: the mapped-back second moment is that of the clipped rows about the midpoints, exactly."""
    rng = np.random.default_rng(0)
    data = [_table(rng, 50), _table(rng, 70)]
    data[0][0, 0] = 150.0  # outside its range: clipped to 120, as on one machine
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        sites = [Site(f"s{k}", X, row_norm=100.0, ranges=RANGES) for k, X in enumerate(data)]
        release, _ = analyse(sites, "covariance", epsilon=float("inf"), delta=0.0, rng=0)
    X = np.vstack(data)
    X[:, 0] = np.clip(X[:, 0], 0, 120)
    Z = X - np.array([60.0, 0.0, 0.5])
    s = release.column_scale
    np.testing.assert_allclose(s, [60.0, 1.0, 0.5])
    np.testing.assert_allclose(s[:, None] * release.second_moment * s, Z.T @ Z / len(Z), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(release.center, [60.0, 0.0, 0.5])
    assert release.postprocessing[-1].startswith("public ranges for x0, x2 (each value clipped to its range); "
                                                 "own units under the row bound (no private scales across sites without a private centre) "
                                                 "for x1")


def test_a_change_to_the_data_but_not_the_ranges_changes_no_noise():
    """The ranges are public: two studies with other rows and the same ranges get the same plan noise and
    the same sensitivity (only the chosen bound, a private output, may differ between runs)."""
    out = []
    for seed in (1, 2):
        rng = np.random.default_rng(seed)
        sites = [Site(f"s{k}", _table(rng, 300) * (1 + seed), row_norm=2.0, ranges=RANGES, center=None)
                 for k in range(2)]
        out.append(analyse(sites, "covariance", epsilon=1.0, delta=1e-5, rng=0)[0])
    assert out[0].sensitivity == out[1].sensitivity and out[0].noise_scale == out[1].noise_scale
    assert not np.array_equal(out[0].second_moment, out[1].second_moment)


def test_a_site_refuses_a_plan_with_other_ranges():
    site = Site("north", np.zeros((40, 3)), row_norm=3.0, ranges={0: (0, 100)})
    bundle = deal(_plan(ranges=RANGES), rng=0)["north"]
    with pytest.raises(ValueError, match="the plan's ranges differ from this site's"):
        site.accept(bundle, rng=0)


def test_a_deployed_site_applies_the_plans_ranges():
    """The noise generator's plan carries the ranges; a deployed site (no ranges of its own) applies them."""
    rng = np.random.default_rng(4)
    data = {"north": _table(rng, 40), "south": _table(rng, 60)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        plan = plan_analysis("covariance", "cape", list(data), [40, 60], n_features=3, row_norm=100.0,
                             epsilon=float("inf"), delta=0.0, ranges=RANGES)
    sites = [Site(name, X) for name, X in data.items()]  # no ranges of their own: the plan's
    for site, bundle in zip(sites, deal(plan, rng=0).values()):
        site.accept(bundle, rng=0, throwaway=True)
    release, _ = finish_analysis(plan, run_plan(plan, InProcessTransport(sites), rng=0))
    X = np.vstack(list(data.values())) - np.array([60.0, 0.0, 0.5])
    s = release.column_scale
    np.testing.assert_allclose(s[:, None] * release.second_moment * s, X.T @ X / len(X), rtol=1e-10, atol=1e-12)


def test_simulate_and_the_noise_generator_take_ranges(tmp_path, capsys):
    run = in_process(capsys)
    rng = np.random.default_rng(5)
    paths = []
    for name in ("a", "b"):
        np.savetxt(tmp_path / f"{name}.csv", _table(rng, 200), delimiter=",", header="age,score,smoker",
                   comments="")
        paths.append(tmp_path / f"{name}.csv")
    res = run("simulate", *paths, "--epsilon", 1, "--delta", "1e-5", "--row-norm", 2, "--uncentred",
              "--ranges", "age=0:120,smoker=0:1", "--seed", 0, "--out", tmp_path / "o", "--no-figures")
    assert res.returncode == 0, res.stderr
    report = json.loads((tmp_path / "o" / "privacy_report.json").read_text())
    assert report["ranges"]["given"] == {"age": [0.0, 120.0], "smoker": [0.0, 1.0]}
    assert report["ranges"]["columns"].startswith("public ranges for age, smoker")
    assert "ranges: public ranges for age, smoker" in res.stdout
    res = run("noise-generator", "--sites", "a=200,b=300", "--columns", "age,score,smoker", "--ranges", "age=0:120",
              "--epsilon", 1, "--delta", "1e-5", "--row-norm", 2, "--uncentred", "--out", tmp_path / "shares")
    assert res.returncode == 0, res.stderr
    plan = Plan.from_json((tmp_path / "shares" / "plan.json").read_text())
    assert plan.ranges == ((0.0, 120.0), None, None)
    assert_one_line_error(run("simulate", *paths, "--epsilon", 1, "--delta", "1e-5", "--analysis", "tensor-stm",
                              "--vocabulary-size", 3, "--n-components", 2, "--ranges", "age=0:120", "--out", tmp_path / "x"),
                          "--ranges across sites are for --analysis covariance")
    assert_one_line_error(run("simulate", *paths, "--epsilon", 1, "--delta", "1e-5", "--ranges", "agex=0:1",
                              "--out", tmp_path / "x"), "--ranges names column 'agex', which is not a feature column")


def test_a_plan_read_back_with_bad_ranges_is_refused():
    data = _plan(ranges=RANGES).to_dict()
    for bad in ([[1.0, 0.0], None, None], [[0.0, float("inf")], None, None], [[0.0, 1.0]]):
        with pytest.raises(ValueError, match="ranges"):
            Plan.from_dict({**data, "ranges": bad})


def test_ranges_take_the_default_auto_bound_and_its_clipping_excess():
    """``simulate --ranges`` with the default ``--row-norm auto``: the bound's clipping-excess round is a round of
    the mapped rows like the second moment, so the plan takes it (it was refused as not a second moment)."""
    plan = plan_analysis("covariance", "cape", ["north", "south", "east"], [4000, 4000, 4000], n_features=3,
                         row_norm="auto", epsilon=4.0, delta=1e-6, ranges=RANGES)
    assert "excess" in [r.statistic for r in plan.rounds]
    assert plan.ranges == ((0.0, 120.0), None, (0.0, 1.0))


def test_scale_private_without_a_centre_says_which_option_to_change():
    """--analysis regress --scale private told the user to drop --uncentred or --center, neither of which they
    gave: regress is not taken about a centre, and the line now says so."""
    import argparse

    from dpmoments.cli._args import CliError
    from dpmoments.cli._multisite import check_scale

    for analysis, says in (("regress", "--analysis regress is not taken about a centre"), ("pca", "drop --uncentred")):
        args = argparse.Namespace(scale="private", analysis=analysis, uncentred=analysis == "pca", center=None)
        with pytest.raises(CliError, match=says):
            check_scale(args)
    check_scale(argparse.Namespace(scale="private", analysis="pca", uncentred=False, center=None))


def test_the_sites_scales_take_one_machine_s_rule_for_a_spread_that_is_only_a_median_s_distance_from_0():
    """loc25's rule, from the sites' releases: a spread within the resolution of the last step's median of
    ``|median|`` and below the other scales' median is replaced by that median (the third column's range fixes its
    scale: not drawn, left alone)."""
    from dpmoments.exceptions import BoundWarning
    from dpmoments.multisite.column_ranges import column_scales, scales_about
    from dpmoments.multisite.location import AutoLocation

    edges = AutoLocation().edges()
    center, move = np.array([1.0, 3.1e-6, 0.0]), np.array([0.5, 3.1e-6, 0.0])
    about = scales_about(center, move, edges, (None, None, (0.0, 1.0)))
    assert about[2].tolist() == [True, True, False]
    with pytest.warns(BoundWarning, match="measured only the distance from their private median to 0"):
        s = column_scales(np.array([0.7, 3.0e-6, 0.5]), (None, None, (0.0, 1.0)), AutoLocation.low, about=about)
    assert s.tolist() == [0.7, 0.7, 1.0]
