"""The error budget across sites (issue 25): the clipped rows and the clipping bias, from the sites' releases alone."""

import numpy as np
import pytest

import dpmoments.moments.clipping_bias as clipping_bias
import dpmoments.multisite.site_moments as site_moments
from dpmoments.estimators import PrivateCovariance
from dpmoments.multisite import Site
from dpmoments.multisite.api import analyse
from dpmoments.multisite.bounds import AutoBounds

pytestmark = pytest.mark.filterwarnings("ignore::dpmoments.exceptions.NoiseDominatesWarning",
                                        "ignore::dpmoments.exceptions.BoundWarning")
EPS, DELTA = 4.0, 1e-6


def _parts(n=4000, seed=0):
    """Three sites; column 0 heavy-tailed (a t with 2 degrees of freedom, scale 3): clipping at the bound the sites
    choose removes a visible share of its variance."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(3):
        X = rng.normal(size=(n, 3))
        X[:, 0] = 3.0 * rng.standard_t(2, size=n)
        out.append(X + [5.0, -2.0, 1.0])
    return out


def _run(parts, **kwargs):
    sites = [Site(f"s{i}", X, row_norm="auto", center="private") for i, X in enumerate(parts)]
    return analyse(sites, "covariance", epsilon=EPS, delta=DELTA, rng=0, **kwargs)


@pytest.fixture(scope="module")
def heavy():
    parts = _parts()
    return parts, _run(parts)


def test_the_release_carries_the_clipped_rows_and_the_clipping_excess_with_their_shares(heavy):
    parts, (rel, rep) = heavy
    by = {p.label: p for p in rel.parts}
    assert by["clipping excess"].share == pytest.approx(AutoBounds(("row_norm",)).bias)
    assert sum(p.share for p in rel.parts) == pytest.approx(1.0)
    assert rep.guarantee.epsilon == pytest.approx(EPS, rel=1e-6)  # the excess round is in the joint-view cost
    assert "excess" in rep.parts and all(s.status == "ok" for s in rep.parts["excess"].sites)
    fraction, sd = rel.clipped_fraction  # from the bound step's histograms: no share of its own
    assert 0.0 < fraction < 0.15 and sd > 0
    lost = np.asarray(by["clipping excess"].released["variance_lost"])
    assert lost[0] > 2 * by["clipping excess"].released["noise_sd"]  # the heavy column's loss is seen
    est = PrivateCovariance().fit_release(rel)
    clip = est.uncertainty_["error_budget"]["clipping"]
    assert isinstance(clip, dict) and 0 in clip["clipped_columns"] + clip["withheld_columns"]
    full = np.cov(np.vstack(parts), rowvar=False, bias=True)[0, 0]
    lo, hi = est.covariance_interval_[:, 0, 0]
    assert np.isnan(lo) or lo <= full <= hi  # held, or withheld: never printed as if complete
    assert est.covariance_[0, 0] < full  # the estimate is clipped: the interval, not the estimate, counts it


def test_the_centres_own_clipping_bias_is_bounded_from_the_sites_releases_and_counted(heavy):
    """The mean round clipped the rows at R about the location m, where the bound step counted them: its part carries
    R, its step a and that count, and the bound (estimators/centre_bias.py) holds the rows' bias beta (read from the
    rows here, in the test only); the intervals name it and hold the full-data values (or are withheld)."""
    from dpmoments.estimators.centre_bias import centre_bias_bound

    parts, (rel, _) = heavy
    X = np.vstack(parts)
    mean = next(p.released for p in rel.parts if p.label == "mean")
    assert mean["second_moment_about"] == "location" and mean["clipped_fraction_noise_sd"] > 0
    a = np.asarray(mean["offset"])
    Z = X - (rel.center - a)
    beta = (Z * np.maximum(1.0 - mean["row_norm"] / np.linalg.norm(Z, axis=1), 0.0)[:, None]).mean(axis=0)
    assert np.all(np.abs(beta) <= centre_bias_bound(rel, np.mean(Z**2, axis=0) - a**2, 0.9))
    est = PrivateCovariance(level=0.9).fit_release(rel)
    assert "beta" in est.uncertainty_["error_budget"]["centre_bias"]
    assert "own clipping bias (a bound" in est.uncertainty_["covers"]
    lo, hi = est.covariance_interval_
    full = np.cov(X, rowvar=False)
    assert np.all(((lo <= full) & (full <= hi)) | np.isnan(lo))
    from dpmoments.estimators.error_draws import error_parts  # the draws carry -(a e^T + e a^T) - e e^T

    np.testing.assert_array_equal(error_parts(rel, 0.9, "sample").offset, a)


def test_the_intervals_read_the_release_only(monkeypatch, heavy):
    rel = heavy[1][0]
    est = PrivateCovariance().fit_release(rel)

    def no_rows(*args, **kwargs):
        raise AssertionError("the error budget read rows")

    monkeypatch.setattr(clipping_bias, "clipping_excess_sums", no_rows)
    monkeypatch.setattr(site_moments, "excess_mean", no_rows)  # where a site computes its excess
    again = PrivateCovariance().fit_release(rel)
    np.testing.assert_array_equal(again.covariance_interval_, est.covariance_interval_)


def test_bias_zero_releases_no_excess_and_the_intervals_say_so():
    rel, _ = _run(_parts(n=3000, seed=2), bound_budget=AutoBounds(("row_norm",), bias=0.0))
    assert "clipping excess" not in [p.label for p in rel.parts]
    assert rel.clipped_fraction is not None  # the clipped rows still come free with the bound step
    est = PrivateCovariance().fit_release(rel)
    assert "clipping bias" in est.uncertainty_["not_covered"]
    with pytest.raises(ValueError, match="'bias'"):
        AutoBounds(("row_norm",), bias=1.0)


def test_a_zcdp_plan_is_charged_per_site_at_its_delta():
    """A plan composed in zCDP (IRLS across sites; any plan with composition="zcdp") is charged to an (epsilon,
    delta) accountant at the budget's delta, as its report states its guarantee (it was refused: a bare rho)."""
    from dpmoments.multisite import spend_per_site
    from dpmoments.privacy import Accountant, ApproxDP

    parts = _parts(n=3000, seed=3)
    sites = [Site(f"s{i}", X, row_norm="auto", center="private") for i, X in enumerate(parts)]
    _, rep = analyse(sites, "covariance", epsilon=EPS, delta=DELTA, rng=0, composition="zcdp")
    assert rep.composition == "zcdp" and rep.guarantee.epsilon == pytest.approx(EPS, rel=1e-6)
    acct = spend_per_site(Accountant(ApproxDP(EPS, DELTA)), rep)
    assert acct.spent.epsilon == pytest.approx(rep.guarantee.epsilon, rel=1e-6)
