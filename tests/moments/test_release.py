"""release_second_moment / release_cross_moment / release_third_moment."""

import json
import math
import warnings

import numpy as np
import pytest
from scipy import stats

import dpmoments as dpm
from dpmoments import ApproxDP, NotPrivateWarning, PureDP, Uncertified, UncertifiedPrivacyWarning, ZCDP
from dpmoments.mechanisms import orbit_vector, upper_triangle
from dpmoments.moments import clip_rows, moment_sensitivity
from dpmoments.privacy import analytic_gaussian_sigma, classic_gaussian_sigma

RNG = np.random.default_rng(42)
X = RNG.normal(size=(300, 4)) / 2.5
Y = X @ np.array([1.0, -0.5, 0.0, 2.0]) + 0.1 * RNG.normal(size=300)
R, r = 1.0, 2.0
EXACT2 = clip_rows(X, R).T @ clip_rows(X, R) / 300


def exact(release_fn, *args, **kwargs):
    with pytest.warns(NotPrivateWarning, match="epsilon=inf"):
        return release_fn(*args, epsilon=math.inf, **kwargs)


def test_infinite_epsilon_returns_the_exact_clipped_moments():
    rel = exact(dpm.release_second_moment, X, row_norm=R, center=None)
    np.testing.assert_allclose(rel.second_moment, EXACT2, rtol=1e-12)
    assert rel.mechanism == "none" and rel.noise_scale == 0 and not rel.is_private
    assert rel.guarantee == PureDP(math.inf) and rel.randomness == "none"
    Xc, yc = clip_rows(X, R), np.clip(Y, -r, r)
    cross = exact(dpm.release_cross_moment, X, Y, row_norm=R, response_bound=r)
    np.testing.assert_allclose(cross.cross_moment, Xc.T @ yc / 300, rtol=1e-12)
    third = exact(dpm.release_third_moment, X, row_norm=R)
    np.testing.assert_allclose(third.third_moment, np.einsum("ni,nj,nk->ijk", Xc, Xc, Xc) / 300, rtol=1e-10)


def test_gaussian_release_records_its_guarantee_and_sensitivity():
    rel = dpm.release_second_moment(X, epsilon=0.8, delta=1e-6, row_norm=R, rng=0, center=None)
    sens = math.sqrt(2) * R**2 / 300
    assert rel.sensitivity == pytest.approx(sens) and rel.sensitivity_norm == "l2"
    assert rel.noise_scale == pytest.approx(analytic_gaussian_sigma(0.8, 1e-6, sens))
    assert isinstance(rel.guarantee, ApproxDP) and (rel.guarantee.epsilon, rel.guarantee.delta) == (0.8, 1e-6)
    assert rel.guarantee.rho == pytest.approx(sens**2 / (2 * rel.noise_scale**2))
    assert rel.neighbours == "replace-one" and rel.calibration == "analytic" and rel.randomness == "seeded"
    np.testing.assert_array_equal(rel.second_moment, rel.second_moment.T)


def test_zero_out_uses_the_smaller_sensitivity():
    rel = dpm.release_second_moment(X, epsilon=1, delta=1e-6, row_norm=R, neighbours="zero-out", rng=0, center=None)
    assert rel.sensitivity == pytest.approx(R**2 / 300) and rel.n == 300 and rel.n_public


def test_laplace_release():
    rel = dpm.release_second_moment(X, epsilon=1.0, row_norm=2.0, mechanism="laplace", rng=0, center=None)
    assert rel.guarantee == PureDP(1.0) and rel.sensitivity_norm == "l1"
    assert rel.sensitivity == pytest.approx(5 * 4.0 / 300)  # (d + 1) R^2 / n
    assert rel.noise_scale == pytest.approx(rel.sensitivity / 1.0) and rel.calibration is None


def test_classic_calibration_reproduces_papers_and_is_flagged_above_one():
    rel = dpm.release_second_moment(X, epsilon=0.5, delta=1e-5, row_norm=R, calibration="classic", rng=0, center=None)
    assert rel.noise_scale == pytest.approx(classic_gaussian_sigma(0.5, 1e-5, math.sqrt(2) / 300))
    rescued = dpm.release_second_moment(X, epsilon=2.0, delta=1e-5, row_norm=R, calibration="classic", rng=0, center=None)
    assert rescued.guarantee == ApproxDP(2.0, 1e-5, rho=rescued.guarantee.rho)  # the exact analysis proves it
    assert "exact Gaussian analysis" in rescued.guarantee.basis
    big = dpm.release_second_moment(X, epsilon=20.0, delta=1e-5, row_norm=R, calibration="classic", rng=0, center=None)
    assert isinstance(big.guarantee, Uncertified) and big.guarantee.holds.epsilon > 20.0


def test_zcdp_calibration_gives_a_zcdp_guarantee():
    rel = dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=R, calibration="zcdp", rng=0, center=None)
    assert isinstance(rel.guarantee, ZCDP)
    assert rel.guarantee.to_approx_dp(1e-6).epsilon <= 1.0


def test_wishart_is_uncertified_and_warns():
    with pytest.warns(UncertifiedPrivacyWarning, match="not epsilon-DP"):
        rel = dpm.release_second_moment(X, epsilon=1.0, row_norm=R, mechanism="wishart", rng=0, center=None)
    g = rel.guarantee
    assert isinstance(g, Uncertified) and g.claimed == PureDP(1.0) and not g.certified
    assert g.holds is not None and g.holds.delta > 0.5  # what holds is vacuous
    assert rel.noise_df == 5 and rel.noise_scale == pytest.approx(3 * R**2 / (2 * 300 * 1.0))
    assert np.linalg.eigvalsh(rel.second_moment - EXACT2).min() > -1e-12  # PSD noise
    with pytest.raises(dpm.UncertifiedSpendError):
        dpm.Accountant(PureDP(5.0)).spend(g)


def test_wishart_approx_is_certified_by_the_exact_analysis():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rel = dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=R, mechanism="wishart-approx", rng=0, center=None)
    assert rel.guarantee == ApproxDP(1.0, 1e-6) and rel.noise_scale == pytest.approx(R**2 / 300)
    assert rel.noise_df > 4


def test_cross_and_third_sensitivities():
    c = dpm.release_cross_moment(X, Y, epsilon=1, delta=1e-6, row_norm=R, response_bound=r, rng=0)
    assert c.sensitivity == pytest.approx(2 * R * r / 300) and c.cross_moment.shape == (4,)
    cl = dpm.release_cross_moment(X, Y, epsilon=1, row_norm=R, response_bound=r, mechanism="laplace", rng=0)
    assert cl.sensitivity == pytest.approx(2 * math.sqrt(4) * R * r / 300)
    t = dpm.release_third_moment(X, epsilon=1, delta=1e-6, row_norm=R, rng=0)
    assert t.sensitivity == pytest.approx(2 * R**3 / 300)
    T = t.third_moment
    for perm in ((1, 0, 2), (0, 2, 1), (2, 1, 0), (1, 2, 0), (2, 0, 1)):
        np.testing.assert_array_equal(T, T.transpose(perm))


def test_sensitivity_is_an_upper_bound_on_random_neighbours():
    rng = np.random.default_rng(3)
    d, n = 5, 10
    for _ in range(300):
        D = clip_rows(rng.normal(size=(n, d)), 1.0)
        x = clip_rows(rng.normal(size=(1, d)) * 3, 1.0)[0]
        D2 = D.copy()
        D2[0] = x
        diff = (D.T @ D - D2.T @ D2) / n
        assert np.linalg.norm(upper_triangle(diff)) <= moment_sensitivity(
            "second", norm="l2", n_samples=n, n_features=d, neighbours="replace-one", row_norm=1.0) + 1e-12
        assert np.abs(upper_triangle(diff)).sum() <= moment_sensitivity(
            "second", norm="l1", n_samples=n, n_features=d, neighbours="replace-one", row_norm=1.0) + 1e-12
        T = lambda A: np.einsum("ni,nj,nk->ijk", A, A, A) / n  # noqa: E731
        assert np.linalg.norm(orbit_vector(T(D) - T(D2))) <= moment_sensitivity(
            "third", norm="l2", n_samples=n, n_features=d, neighbours="replace-one", row_norm=1.0) + 1e-12
        assert np.abs(orbit_vector(T(D) - T(D2))).sum() <= moment_sensitivity(
            "third", norm="l1", n_samples=n, n_features=d, neighbours="replace-one", row_norm=1.0) + 1e-12


def test_second_moment_l2_sensitivity_is_tight():
    d, n = 3, 4
    D = np.zeros((n, d)); D[0] = [1, 0, 0]
    D2 = D.copy(); D2[0] = [0, 1, 0]
    diff = (D.T @ D - D2.T @ D2) / n
    assert np.linalg.norm(upper_triangle(diff)) == pytest.approx(math.sqrt(2) / n)


@pytest.mark.statistical
@pytest.mark.parametrize("mechanism,dist", [("gaussian", stats.norm), ("laplace", stats.laplace)])
def test_noise_matches_its_reported_scale(mechanism, dist):
    rng = np.random.default_rng(7)
    z = []
    for _ in range(400):
        rel = dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=R, mechanism=mechanism, rng=rng, center=None)
        z.append(upper_triangle(rel.second_moment - EXACT2) / rel.noise_scale)
    assert stats.kstest(np.concatenate(z), dist.cdf).pvalue > 1e-6


def test_seeds_reproduce_and_os_entropy_differs():
    a = dpm.release_second_moment(X, epsilon=1, delta=1e-6, row_norm=R, rng=5, center=None)
    b = dpm.release_second_moment(X, epsilon=1, delta=1e-6, row_norm=R, rng=5, center=None)
    np.testing.assert_array_equal(a.second_moment, b.second_moment)
    c = dpm.release_second_moment(X, epsilon=1, delta=1e-6, row_norm=R, center=None)
    d = dpm.release_second_moment(X, epsilon=1, delta=1e-6, row_norm=R, center=None)
    assert not np.array_equal(c.second_moment, d.second_moment)
    assert c.randomness == "os-entropy" and a.randomness == "seeded" and not a.secure and not c.secure
    g = dpm.release_second_moment(X, epsilon=1, delta=1e-6, row_norm=R, rng=np.random.default_rng(1), center=None)
    assert g.randomness == "caller-generator"


def test_sources_give_the_same_statistic(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, X)
    from_file = exact(dpm.release_second_moment, path, row_norm=R, chunk_size=7, center=None)
    chunks = exact(dpm.release_second_moment, [X[:100], X[100:]], row_norm=R, center=None)
    np.testing.assert_allclose(from_file.second_moment, EXACT2, rtol=1e-12)
    np.testing.assert_allclose(chunks.second_moment, EXACT2, rtol=1e-12)


def test_public_center_is_subtracted_before_clipping():
    c = np.array([0.1, -0.2, 0.0, 0.3])
    rel = exact(dpm.release_second_moment, X, row_norm=R, center=c)
    Xc = clip_rows(X - c, R)
    np.testing.assert_allclose(rel.second_moment, Xc.T @ Xc / 300, rtol=1e-12)
    assert rel.to_dict()["centered"] is True


def test_release_is_frozen_and_reports_json():
    rel = dpm.release_second_moment(X, epsilon=1, delta=1e-6, row_norm=R, rng=0, center=None)
    with pytest.raises(ValueError):
        rel.second_moment[0, 0] = 1.0
    with pytest.raises(AttributeError):
        rel.n = 3
    report = json.loads(json.dumps(rel.to_dict(), allow_nan=False))
    assert report["guarantee"]["type"] == "approx-dp" and report["statistics"] == ["second_moment"]
    assert "Release(second_moment=<array (4, 4)>" in repr(rel)


def test_project_psd_is_recorded_post_processing():
    rel = dpm.release_second_moment(X[:20], epsilon=0.1, delta=1e-6, row_norm=R, rng=0, center=None)
    assert np.linalg.eigvalsh(rel.second_moment).min() < 0
    proj = rel.project_psd(floor=1e-3)
    assert np.linalg.eigvalsh(proj.second_moment).min() >= 1e-3 - 1e-12
    assert proj.guarantee == rel.guarantee and proj.postprocessing[0].startswith("psd-projection(floor=0.001")
    with pytest.raises(ValueError, match="no second moment"):
        exact(dpm.release_cross_moment, X, Y, row_norm=R, response_bound=r).project_psd()


@pytest.mark.parametrize(
    "kwargs,error,match",
    [
        (dict(epsilon=0.0, delta=1e-6, row_norm=1.0), ValueError, "'epsilon' must be in \\(0, inf\\]; got 0.0"),
        (dict(epsilon=-1, delta=1e-6, row_norm=1.0), ValueError, "'epsilon'.*got -1"),
        (dict(epsilon=1.0, delta=1.0, row_norm=1.0), ValueError, "'delta' must be in \\(0, 1\\); got 1.0"),
        (dict(epsilon=1.0, delta=-0.1, row_norm=1.0), ValueError, "'delta'.*got -0.1"),
        (dict(epsilon=1.0, row_norm=1.0), ValueError, "needs 'delta'"),
        (dict(epsilon=1.0, delta=1e-6, row_norm=None), ValueError, "'row_norm' is required"),
        (dict(epsilon=1.0, delta=1e-6, row_norm=-2.0), ValueError, "'row_norm' must be in \\(0, inf\\); got -2.0"),
        (dict(epsilon=1.0, delta=1e-6, row_norm=1.0, mechanism="wishart2"), ValueError, "'mechanism' must be one of"),
        (dict(epsilon=1.0, delta=1e-6, row_norm=1.0, neighbours="swap"), ValueError, "'neighbours' must be one of"),
        (dict(epsilon="1", delta=1e-6, row_norm=1.0), TypeError, "'epsilon' must be a real number"),
    ],
)
def test_bad_privacy_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        dpm.release_second_moment(X, **kwargs, center=None)


@pytest.mark.parametrize(
    "data,match",
    [
        (np.array([[1.0, np.nan], [0.0, 1.0]]), "NaN"),
        (np.array([[1.0, np.inf], [0.0, 1.0]]), "NaN or inf|infinite|inf"),
        (np.ones(5), "2-D"),
        (np.ones((2, 2, 2)), "2-D"),
        (np.empty((0, 3)), "no rows|at least 1|empty"),
    ],
)
def test_bad_data(data, match):
    with pytest.raises(ValueError, match=match):
        dpm.release_second_moment(data, epsilon=1, delta=1e-6, row_norm=1.0, center=None)


def test_cross_moment_needs_response_bound_and_matching_y():
    with pytest.raises(ValueError, match="'response_bound' is required"):
        dpm.release_cross_moment(X, Y, epsilon=1, delta=1e-6, row_norm=1.0, response_bound=None)
    with pytest.raises(ValueError, match="one entry per row"):
        dpm.release_cross_moment(X, Y[:-1], epsilon=1, delta=1e-6, row_norm=1.0, response_bound=1.0)
    with pytest.raises(ValueError, match="'mechanism'"):
        dpm.release_cross_moment(X, Y, epsilon=1, row_norm=1.0, response_bound=1.0, mechanism="wishart")


def test_secure_releases_use_exact_grid_noise():
    import random

    rel = dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=R, secure=True, center=None)
    assert rel.mechanism == "discrete-gaussian" and rel.secure and rel.randomness == "os-entropy"
    assert rel.noise_grid is not None and rel.noise_grid <= 2.0**-10
    np.testing.assert_array_equal(rel.second_moment, rel.second_moment.T)
    # every released entry lies on the grid: a post-processing of integers
    grid = rel.second_moment / rel.noise_grid
    np.testing.assert_array_equal(grid, np.round(grid))
    assert isinstance(rel.guarantee, ApproxDP) and rel.guarantee.rho is not None
    seeded = dpm.release_second_moment(X, epsilon=1.0, row_norm=R, mechanism="laplace", secure=True,
                                       rng=random.Random(0), center=None)
    assert seeded.guarantee == PureDP(1.0) and seeded.randomness == "seeded" and not seeded.secure
    cross = dpm.release_cross_moment(X, Y, epsilon=1.0, delta=1e-6, row_norm=R, response_bound=r, secure=True)
    assert cross.mechanism == "discrete-gaussian" and cross.cross_moment.shape == (4,)
    # float noise is never reported secure, even from OS entropy
    assert not dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=R, center=None).secure
    with pytest.raises(TypeError, match="secure=True"):
        dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=R, secure=True, rng=0, center=None)
    with pytest.raises(ValueError, match="secure=True supports"):
        dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=R, secure=True, mechanism="wishart-approx", center=None)


@pytest.mark.statistical
def test_secure_release_noise_matches_its_scale():
    import random

    rng = random.Random(3)
    z = []
    for _ in range(60):
        rel = dpm.release_second_moment(X, epsilon=1.0, delta=1e-6, row_norm=R, secure=True, rng=rng, center=None)
        z.append(upper_triangle(rel.second_moment - EXACT2) / rel.noise_scale)
    z = np.concatenate(z)
    assert abs(z.std() - 1) < 0.15 and abs(z.mean()) < 0.15
