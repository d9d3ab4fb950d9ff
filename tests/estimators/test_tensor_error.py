"""The tensor decomposition's error beyond the noise (estimators/tensor_error.py): sampling and clipping under
the fitted model, read from the releases alone; withheld where the model misfits. Coverage is measured in
``python -m benchmarks tensor_coverage`` (too many fits for a test)."""

import numpy as np
import pytest

from dpmoments.datasets.mixtures import make_mog, make_single_topic
from dpmoments.estimators import PrivateTensorDecomposition

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _mog(**kw):
    m = make_mog(3000, 3, 2, sigma2=0.05, weights=[0.6, 0.4], rng=5)
    base = dict(n_components=2, model="mog", epsilon=8.0, delta=1e-6, sigma2=0.05, row_norm=1.2, n_draws=6,
                n_restarts=2, n_iter=10, rng=1, level=0.7)  # 6 draws reach a 70% interval's tails (fewest_draws)
    return m, PrivateTensorDecomposition(**{**base, **kw})


@pytest.fixture(scope="module")
def population():
    m, est = _mog()
    return m, est.fit(m.X)


def test_the_parts_beyond_the_noise_read_the_releases_only(population):
    """The same releases give the same intervals whether the rows are there or not (fit vs fit_release)."""
    m, est = population
    again = PrivateTensorDecomposition(**est.get_params()).fit_release(est.moments_)
    np.testing.assert_array_equal(again.components_interval_, est.components_interval_)
    np.testing.assert_array_equal(again.weights_interval_, est.weights_interval_)
    assert est.uncertainty_["parts"] == "noise + sampling + clipping"


def test_population_counts_sampling_and_the_noise_share_is_kept(population):
    m, pop = population
    sample = _mog(target="sample")[1].fit(m.X)
    np.testing.assert_array_equal(pop.weights_noise_se_, sample.weights_noise_se_)  # the same noise draws
    assert np.all(pop.weights_se_ > pop.weights_noise_se_)  # 3000 rows: sampling dominates the noise at eps 8
    assert sample.uncertainty_["parts"] == "noise + clipping" and "these rows" in sample.uncertainty_["scope"]
    lo, hi = pop.components_interval_
    assert np.all(lo <= pop.components_) and np.all(pop.components_ <= hi)


def test_a_misspecified_sigma2_withholds_the_intervals_and_says_why():
    """Rows of spread 0.3 fitted with a public sigma2 of 0.01: the model's sampling would be the wrong one."""
    m = make_mog(3000, 3, 2, sigma2=0.3, weights=[0.6, 0.4], rng=5)
    est = _mog(sigma2=0.01, row_norm=3.0)[1].fit(m.X)
    assert np.isnan(est.weights_interval_).all() and np.isnan(est.components_interval_).all()
    assert est.uncertainty_["parts"] == "withheld" and "misfit" in est.uncertainty_["not_covered"]
    assert np.isfinite(est.weights_se_).all()  # the noise's spread is still told


def test_a_topic_model_draws_documents_from_its_topics():
    docs = make_single_topic(3000, 6, 2, rng=3)
    est = PrivateTensorDecomposition(n_components=2, model="stm", epsilon=8.0, delta=1e-6, vocabulary_size=6,
                                     n_draws=6, n_restarts=2, n_iter=10, rng=1).fit(docs.X)
    assert est.uncertainty_["parts"] == "noise + sampling"  # one-hot words: nothing clipped
    assert np.all(est.weights_se_ >= est.weights_noise_se_ * 0.999)


def test_a_weights_interval_is_cut_to_the_unit_interval_and_holds_an_estimate_the_noise_put_outside(population):
    import copy

    from dpmoments.estimators._uncertainty_models import within_proportions
    from dpmoments.estimators.component_summaries import tensor_lines

    iv = np.array([[-1.15, 0.2, 0.9, np.nan], [0.857, 1.3, 1.4, np.nan]])
    cut = within_proportions(np.array([0.457, 0.5, 1.2, 0.3]), iv)  # fair at epsilon 1 gave [-1.15, 0.857]
    np.testing.assert_array_equal(cut, [[0.0, 0.2, 0.9, np.nan], [0.857, 1.0, 1.2, np.nan]])
    _, est = population
    assert np.all(est.weights_interval_ >= 0) and np.all(est.weights_interval_ <= 1)
    above = copy.copy(est)
    above.weights_ = np.array([1.2, est.weights_[1]])
    lines = tensor_lines(above, ["a", "b", "c"], "means")
    assert "estimate above 1 (noise)" in lines[1] and "estimate" not in lines[2]
