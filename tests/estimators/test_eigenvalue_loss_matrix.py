"""PCA's eigenvalue intervals read the released loss matrix (moments/clipping_bias.py): along each component, the
centre's bias by its norm bound, and the components that bear rows beyond twice the bound withheld (issue 25)."""

import dataclasses

import numpy as np
import pytest

from dpmoments.estimators import PrivatePCA
from dpmoments.estimators.centre_bias import eigenvalue_centre_bias
from dpmoments.estimators.eigenvalue_budget import _along_unseen_loss

pytestmark = pytest.mark.filterwarnings("ignore::dpmoments.exceptions.NoiseDominatesWarning",
                                        "ignore::dpmoments.exceptions.BoundWarning")


def _without_matrix(release):
    parts = tuple(dataclasses.replace(p, released={k: v for k, v in p.released.items() if k != "loss_matrix"})
                  for p in release.parts)
    return dataclasses.replace(release, parts=parts)


def test_the_loss_matrix_is_released_and_along_the_components_it_narrows_the_intervals():
    rng = np.random.default_rng(4)
    X = rng.standard_t(5, size=(3000, 6)) * [1.0, 10.0, 0.1, 3.0, 1.0, 5.0]
    pca = PrivatePCA(n_components=3, epsilon=2.0, delta=1e-6, center="private", rng=0).fit(X)
    released = next(p for p in pca.release_.parts if p.label == "clipping excess").released
    L = released["loss_matrix"]
    assert L.shape == (6, 6) and not L.flags.writeable and np.array_equal(L, L.T)
    np.testing.assert_array_equal(np.diag(L), released["variance_lost"])  # the vector is its diagonal
    clip = pca.uncertainty_["error_budget"]["clipping"]
    assert len(clip["lost_along_components"]) == 3 and len(clip["lost_along_components_noise_sd"]) == 3
    old = PrivatePCA(n_components=3).fit_release(_without_matrix(pca.release_))
    assert "lost_along_components" not in old.uncertainty_["error_budget"]["clipping"]
    printed = ~np.isnan(pca.explained_variance_interval_[1])
    assert np.all(pca.explained_variance_interval_[1][printed] <= old.explained_variance_interval_[1][printed])
    assert np.any(pca.explained_variance_interval_[1][printed] < old.explained_variance_interval_[1][printed])
    shown = next(p for p in pca.release_.to_dict()["parts"] if p["label"] == "clipping excess")["released"]
    assert shown["loss_matrix"] == "<array (6, 6)>"  # the report names it, as the other arrays


def test_the_centre_bias_along_a_component_takes_the_norm_bound_where_it_is_smaller():
    W, B = np.full((1, 64), 1 / 8.0), np.full(64, 1.0)  # a component spread over 64 columns, each |beta_j| <= 1
    below, above = eigenvalue_centre_bias(B, 0.1, W, 0.9)
    normed_below, normed_above = eigenvalue_centre_bias(B, 0.1, W, 0.9, joint=(1.0, np.ones(64, dtype=bool)))
    # |w.beta| <= sum |w_j| B_j = 8 against ||w|| N = 1
    assert normed_below[0] < below[0] / 10 and normed_above[0] < above[0] / 5
    same = eigenvalue_centre_bias(B, 0.1, W, 0.9, joint=(np.inf, np.ones(64, dtype=bool)))
    np.testing.assert_array_equal(same[0], below)


def test_a_component_whose_band_loss_stands_out_while_rows_beyond_twice_the_bound_are_seen_is_withheld():
    part = {"variance_lost": [0.0, 0.0, 0.0], "noise_sd": 1.0, "rows_beyond_outer": 40.0, "rows_beyond_noise_sd": 5.0}
    W = np.eye(3)
    assert not _along_unseen_loss(part, W, 0.9).any()  # no column's loss stands out
    withheld = _along_unseen_loss(part, W, 0.9, np.array([6.0, 0.5, -1.0]), np.ones(3))
    assert withheld.tolist() == [True, False, False]
    ruled_out = dict(part, rows_beyond_outer=-3.0, rows_beyond_noise_sd=0.5)
    assert not _along_unseen_loss(ruled_out, W, 0.9, np.array([6.0, 0.5, -1.0]), np.ones(3)).any()
