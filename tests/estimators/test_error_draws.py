"""Draws carrying every part of the error (issue 25): PCA's stability, the graphical lasso's partial correlations
and edges, ridge precision. They read releases and public values only, and their claims hold on seeded data."""

import dataclasses
import inspect

import numpy as np
import pytest

import dpmoments.data.readers as readers
import dpmoments.moments.clipping_bias as clipping_bias
from dpmoments.estimators import PrivateGraphicalLasso, PrivatePCA, PrivateRidgePrecision
from dpmoments.estimators.error_draws import draw_every_part, error_parts, every_part_draws
from dpmoments.estimators.structure_bounds import ridge_range
from dpmoments.solvers import graphical_lasso, ridge_precision

pytestmark = pytest.mark.filterwarnings("ignore::dpmoments.exceptions.NoiseDominatesWarning",
                                        "ignore::dpmoments.exceptions.BoundWarning")
KW = dict(epsilon=1.0, delta=1e-6, center="private", level=0.9)
SIGMA = 0.4 ** np.abs(np.subtract.outer(np.arange(4), np.arange(4))) * np.outer([1, 3, 0.5, 2], [1, 3, 0.5, 2])


def _draw(kind, n, rng):
    Z = rng.standard_normal((n, 4)) @ np.linalg.cholesky(SIGMA).T
    if kind == "t3":  # covariance SIGMA: a t_3 has variance 3
        Z = Z / np.sqrt(rng.chisquare(3, size=(n, 1)) / 3) / np.sqrt(3)
    if kind == "binary":
        return (Z > 0.3).astype(float)
    return Z + [5.0, -2.0, 0.0, 40.0]


def _population(kind):
    if kind != "binary":
        return SIGMA
    Z = _draw("gaussian", 400_000, np.random.default_rng(99)) - [5.0, -2.0, 0.0, 40.0]  # its covariance, by simulation
    return np.cov((Z > 0.3).astype(float), rowvar=False)


def test_the_draws_read_a_release_and_public_values_only(monkeypatch):
    """Refitting from the release with every reader disabled gives the same intervals: no rows are touched."""
    X = _draw("gaussian", 2000, np.random.default_rng(0))
    fits = [PrivatePCA(n_components=2, n_draws=3, rng=0, **KW).fit(X),
            PrivateGraphicalLasso(alpha=0.05, scale="private", n_draws=3, rng=0, **KW).fit(X),
            PrivateRidgePrecision(alpha=0.1, scale="private", n_draws=3, rng=0, **KW).fit(X)]

    def no_rows(*args, **kwargs):
        raise AssertionError("the draws read rows")

    monkeypatch.setattr(readers, "iter_chunks", no_rows)
    monkeypatch.setattr(clipping_bias, "clipping_excess_sums", no_rows)
    monkeypatch.setattr(clipping_bias, "iter_chunks", no_rows)
    pca, glasso, ridge = fits
    again = PrivatePCA(n_components=2, n_draws=3, rng=0).fit_release(pca.release_)
    np.testing.assert_array_equal(again.component_angles_, pca.component_angles_)
    again = PrivateGraphicalLasso(alpha=0.05, n_draws=3, rng=0).fit_release(glasso.release_)
    np.testing.assert_allclose(again.partial_correlation_interval_, glasso.partial_correlation_interval_, atol=1e-12)
    again = PrivateRidgePrecision(alpha=0.1, n_draws=3, rng=0).fit_release(ridge.release_)
    np.testing.assert_array_equal(again.precision_interval_, ridge.precision_interval_)
    for fn in (error_parts, draw_every_part, every_part_draws):  # a release and public values, no data
        assert list(inspect.signature(fn).parameters)[0] == "release"
    assert "clipping excess" in [p.label for p in ridge.privacy_parts_]  # paid for, and in the composition
    assert sum(p.share for p in ridge.privacy_parts_) == pytest.approx(1.0)


def test_an_unseen_clipping_loss_withholds_the_intervals_and_every_stable_claim():
    """Rows beyond the outer bound with a detected loss: what they lost beyond it is unknown, so nothing stands out."""
    X = _draw("gaussian", 2000, np.random.default_rng(2))
    release = PrivateRidgePrecision(alpha=0.1, rng=0, **KW).fit(X).release_
    parts = []
    for p in release.parts:
        if p.label == "clipping excess":
            sd = p.released["noise_sd"]
            p = dataclasses.replace(p, released={**p.released, "variance_lost": [100 * sd, 0.0, 0.0, 0.0],
                                                 "rows_beyond_outer": 1e4})
        parts.append(p)
    release = dataclasses.replace(release, parts=tuple(parts))
    ridge = PrivateRidgePrecision(alpha=0.1, n_draws=2, rng=0).fit_release(release)
    glasso = PrivateGraphicalLasso(alpha=0.01, n_draws=2, rng=0).fit_release(release)
    pca = PrivatePCA(n_components=2, n_draws=2, rng=0).fit_release(release)
    assert np.isnan(ridge.partial_correlation_interval_).all() and np.isnan(glasso.partial_correlation_interval_).all()
    assert not glasso.stable_edges_.any() and not pca.components_identified_.any()
    assert "withheld" in ridge.uncertainty_["covers"]
    # ridge's precision: the range the covariance's intervals allow (structure_bounds.ridge_jensen_range); the
    # column bearing the unseen loss is withheld by the covariance, so its entries take ridge's whole range
    lower, upper = ridge_range(0.1, 4)
    assert np.isfinite(ridge.precision_interval_).all()
    assert np.allclose(ridge.precision_interval_[0, 0], lower[0]) and np.allclose(ridge.precision_interval_[1, 0], upper[0])


def _ridge_truth(sigma, est):
    s = np.ones(4) if est.release_.column_scale is None else np.asarray(est.release_.column_scale)
    return ridge_precision(sigma / np.outer(s, s), 0.1) / np.outer(s, s)


def _glasso_truth(sigma, est):
    s = np.ones(4) if est.release_.column_scale is None else np.asarray(est.release_.column_scale)
    P = graphical_lasso(sigma / np.outer(s, s), est.alpha_).precision
    d = np.sqrt(np.diag(P))
    return -P / np.outer(d, d)


@pytest.mark.statistical
def test_population_coverage_of_ridge_glasso_and_pca_stability_on_seeded_simulations():
    """Two seeded fits per law (Gaussian, t3, 0/1): the 80% intervals hold the population value of the same
    analysis (loose: few fits and draws), and no component called stable is more than 45 degrees from the
    population's. The benchmark (python -m benchmarks coverage) measures it on many more."""
    iu = np.triu_indices(4, 1)
    held, wrong = [], 0
    for kind in ("gaussian", "t3", "binary"):
        sigma = _population(kind)
        top = np.linalg.eigh(sigma)[1][:, ::-1]
        for seed in range(2):
            X = _draw(kind, 2000, np.random.default_rng(100 + seed))
            kw = {**KW, "level": 0.8}  # 10 draws reach an 80% interval's tails (a 90% one needs 19: fewest_draws)
            ridge = PrivateRidgePrecision(alpha=0.1, scale="private", n_draws=10, rng=seed, **kw).fit(X)
            glasso = PrivateGraphicalLasso(alpha=0.05, scale="private", n_draws=10, rng=seed, **kw).fit(X)
            for truth, interval in ((_ridge_truth(sigma, ridge), ridge.precision_interval_),
                                    (_glasso_truth(sigma, glasso), glasso.partial_correlation_interval_)):
                lo, hi = interval[0][iu], interval[1][iu]
                held.extend(((lo <= truth[iu] + 1e-9) & (truth[iu] - 1e-9 <= hi))[~np.isnan(lo)].tolist())
            pca = PrivatePCA(n_components=2, n_draws=10, rng=seed, **KW).fit(X)
            cos = np.abs(np.sum(pca.components_.T * top[:, :2], axis=0))
            wrong += int(np.sum(pca.components_identified_ & pca.components_above_noise_ & (cos < np.cos(np.pi / 4))))
    assert len(held) >= 48 and np.mean(held) >= 0.8
    assert wrong == 0


def test_the_console_says_what_the_edge_and_angle_draws_carry():
    """The edges header and PCA's stability line said 'clipping and sampling' also where the intervals were for
    these rows (target='sample'), whose draws carry no sampling: they now read what the draws counted."""
    from dpmoments.estimators.component_summaries import _angles_count
    from dpmoments.estimators.summaries import edge_lines
    from dpmoments.estimators.graph import edge_matrix

    X = _draw("gaussian", 2000, np.random.default_rng(1))
    for target in ("population", "sample"):
        lasso = PrivateGraphicalLasso(alpha=0.05, n_draws=3, rng=0, target=target, **KW).fit(X)
        header = edge_lines(lasso, edge_matrix(lasso.precision_, 0.0), list("abcd"))[0]
        # 3 draws reach a 50% level's tails (fewer than a level needs: no angles are drawn, fewest_draws)
        pca = PrivatePCA(n_components=1, n_draws=3, rng=0, target=target, **{**KW, "level": 0.5}).fit(X)
        assert ("sampling" in header) is ("sampling" in _angles_count(pca)) is (target == "population"), header


def test_the_draws_count_every_part_the_centres_own_clipping_bias_at_its_bounds_corners_and_say_so():
    """Every part, and what the draws count is what covers says. The centre's own clipping bias (centre_bias.py) was
    counted by the covariance and PCA's eigenvalues only: the draws now add (b - e)(b - e)^T with b_j = +-B_j in
    one more set."""
    from dpmoments.estimators.uncertainty import bootstrap_generator

    X = _draw("gaussian", 2000, np.random.default_rng(1))
    ridge = PrivateRidgePrecision(alpha=0.1, scale="private", n_draws=3, rng=0, **KW).fit(X)
    draws = ridge.uncertainty_["error_draws"]
    assert draws["target"] == "population" and draws["centre_noise_scale"] > 0 and isinstance(draws["clipping"], dict)
    sample = PrivateRidgePrecision(alpha=0.1, n_draws=3, rng=0, target="sample").fit_release(ridge.release_)
    assert "sampling" in ridge.uncertainty_["covers"] and "sampling" not in sample.uncertainty_["covers"]
    with pytest.raises(ValueError, match="'target'"):
        PrivateRidgePrecision(alpha=0.1, target="rows", **KW).fit(X)
    parts = error_parts(ridge.release_, 0.9, "population")
    assert parts.centre_bias is not None and parts.centre_bias_drawn
    assert "own clipping bias (at 0 and at its bound's corners)" in ridge.uncertainty_["covers"]
    assert "own clipping bias" not in ridge.uncertainty_["not_covered"]
    assert ridge.uncertainty_["error_draws"]["centre_bias"]["bound"] == pytest.approx(parts.centre_bias.tolist())
    # alone (no noise of the centre, clipping or sampling), a bias draw moves the matrix by b b^T, |b| = B scaled into
    # the ball ||b|| <= N over the columns the norm bound holds for
    bare = dataclasses.replace(parts, centre_scale=1e-300, lost=None, sigma_root=None)
    moved = [draw_every_part(ridge.release_, bare, bootstrap_generator(5), centre_bias=flag).second_moment
             for flag in (True, False)]
    corner = parts.centre_bias.copy()
    if parts.centre_bias_norm is not None:
        norm, columns = parts.centre_bias_norm
        corner[columns] *= min(1.0, norm / np.linalg.norm(corner[columns]))
    assert parts.centre_bias_norm is not None and np.linalg.norm(corner) < np.linalg.norm(parts.centre_bias)
    np.testing.assert_allclose(np.abs(moved[0] - moved[1]), np.outer(corner, corner), rtol=1e-9, atol=1e-12)
    count = len(every_part_draws(ridge.release_, parts, lambda r: r.second_moment, 2, bootstrap_generator(1)))
    less = len(every_part_draws(ridge.release_, dataclasses.replace(parts, centre_bias=None),
                                lambda r: r.second_moment, 2, bootstrap_generator(1)))
    assert count == less + 1


def test_a_public_centre_and_bound_are_not_described_as_private():
    """With a public centre and row bound the draws' description named the private centre's noise it did not draw."""
    X = _draw("gaussian", 500, np.random.default_rng(4))
    lasso = PrivateGraphicalLasso(alpha=0.05, epsilon=1.0, delta=1e-6, center=[5.0, -2.0, 0.0, 40.0], row_norm=20.0,
                                  n_draws=2, rng=0).fit(X)
    u = lasso.uncertainty_
    assert "centre" not in u["covers"] and "centre" not in u["draws_count"]
    assert "clipping bias (not estimated: no clipping-excess release)" in u["not_covered"]
    assert u["error_draws"]["centre_bias"].startswith("none: a public centre")


def test_one_column_precision_has_no_signal_to_noise_and_says_so():
    """A one-column graph has no off-diagonal entry: its signal-to-noise was printed 'inf'."""
    from dpmoments.estimators.summary import Noise

    X = np.random.default_rng(5).normal(3.0, 2.0, size=(500, 1))
    lasso = PrivateGraphicalLasso(alpha=0.05, epsilon=1.0, delta=1e-6, center=[3.0], row_norm=10.0).fit(X)
    assert np.isnan(lasso.snr_)
    line = Noise(lasso).lines()[0]
    assert line.startswith("signal_to_noise n/a (no value here: ") and "inf" not in line


def test_pca_counts_the_centres_own_bias_in_its_closed_form_without_draws_and_names_only_what_it_counts():
    from dpmoments.estimators.perturbation import bias_perturbation

    X = _draw("gaussian", 2000, np.random.default_rng(6))
    pca = PrivatePCA(n_components=2, rng=0, **KW).fit(X)
    parts, top = pca.uncertainty_["error_budget"], pca.explained_variance_[:1]
    assert pca.uncertainty_["error_budget"]["perturbation_bound"] == bias_perturbation(pca.release_, parts, top,
                                                                                     "population", 0.9)
    assert bias_perturbation(pca.release_, parts, top, "population", 0.9) > bias_perturbation(
        pca.release_, parts, top, "population", None)  # with draws, the draws carry it instead
    assert "own clipping bias" in pca.uncertainty_["covers"]
    public = PrivatePCA(n_components=2, rng=0, epsilon=1.0, delta=1e-6, center=[5.0, -2.0, 0.0, 40.0],
                        row_norm=20.0).fit(X)
    assert "centre" not in public.uncertainty_["covers"] + public.uncertainty_["scope"]


def test_the_loss_shape_draws_both_signs_at_full_size_where_the_released_sign_is_unclear():
    from dpmoments.estimators.error_draws import ErrorParts, _loss_shape
    from dpmoments.estimators.uncertainty import bootstrap_generator

    corr = np.array([[1.0, 0.1, 0.8], [0.1, 1.0, -0.2], [0.8, -0.2, 1.0]])
    unclear = np.array([[False, True, False], [True, False, False], [False, False, False]])
    parts = ErrorParts(target="sample", centre_scale=0.0, sigma_root=None, lost=np.zeros(3), lost_sd=1.0,
                       loss_upper=np.ones(3), correlation=corr, unseen=False, n=10, unclear_sign=unclear)
    gen = bootstrap_generator(0)
    drawn = np.array([_loss_shape(parts, gen) for _ in range(40)])
    assert np.all(drawn == drawn.transpose(0, 2, 1)) and np.all(drawn[:, ~unclear] == corr[~unclear])
    assert set(np.unique(drawn[:, 0, 1])) == {-1.0, 1.0}


def test_the_ridge_whole_range_note_says_its_units():
    """summaries._whole_range_line: c = 1/sqrt(2 alpha) is in standardised units where column scales are set (the
    printed intervals are in original units, range c/(s_i s_j))."""
    from types import SimpleNamespace

    from dpmoments.estimators.summaries import _whole_range_line

    def note(scale):
        est = SimpleNamespace(uncertainty_={"range": {"entries_at_whole_range": 2}}, precision_=np.eye(3),
                              release_=SimpleNamespace(column_scale=scale))
        return _whole_range_line(est)[0]

    assert "standardised units" in note(np.ones(3)) and "standardised" not in note(None)
    assert "--scale private" in note(None) and "--scale private" not in note(np.ones(3))  # not advised once set
