"""Matrix losses, support, TPR/FPR, ROC and AUC on hand-computed examples."""

import numpy as np
import pytest

from dpmoments.metrics import auc, relative_loss, roc_curve, support, tpr_fpr


def test_relative_loss_hand_computed():
    ref = np.array([[2.0, -1.0], [-1.0, 2.0]])
    est = np.array([[3.0, 1.0], [-1.0, 2.0]])
    # est - ref = [[1, 2], [0, 0]]
    # l1: max column abs sum: of the difference max(1, 2) = 2; of ref 3
    assert relative_loss(est, ref, norm="l1") == pytest.approx(2 / 3)
    # fro: sqrt(5) / sqrt(10)
    assert relative_loss(est, ref, norm="fro") == pytest.approx(np.sqrt(0.5))
    # spectral: diff has singular value sqrt(5); ref has eigenvalues 1, 3
    assert relative_loss(est, ref, norm="spectral") == pytest.approx(np.sqrt(5) / 3)
    assert relative_loss(est, ref) == relative_loss(est, ref, norm="fro")


def test_relative_loss_l1_is_column_sum_not_entrywise():
    ref = np.eye(3)
    est = np.eye(3) + np.array([[0, 0, 1], [0, 0, 1], [0, 0, 1.0]])
    assert relative_loss(est, ref, norm="l1") == pytest.approx(3.0)  # column sum, not 1 (row) or 3 entries
    assert relative_loss(est.T, ref, norm="l1") == pytest.approx(1.0)


def test_relative_loss_zero_for_equal():
    A = np.random.default_rng(0).normal(size=(4, 4))
    for norm in ("l1", "fro", "spectral"):
        assert relative_loss(A, A, norm=norm) == 0.0


@pytest.mark.parametrize(
    "est, ref, norm, exc, match",
    [
        (np.eye(2), np.eye(2), "l2", ValueError, "'norm' must be one of 'fro', 'l1', 'spectral'; got 'l2'"),
        (np.eye(2), np.eye(3), "fro", ValueError, "same shape"),
        (np.eye(2), np.zeros((2, 2)), "fro", ValueError, "'reference' must be nonzero"),
        (np.ones(3), np.ones(3), "fro", ValueError, "'estimate' must be a non-empty 2-D array"),
        (np.eye(2), np.array([[np.nan, 0], [0, 1]]), "fro", ValueError, "'reference' contains NaN"),
        ("x", np.eye(2), "fro", TypeError, "'estimate'"),
    ],
)
def test_relative_loss_bad_inputs(est, ref, norm, exc, match):
    with pytest.raises(exc, match=match):
        relative_loss(est, ref, norm=norm)


def test_support():
    Theta = np.array([[5.0, 1e-9, -0.2], [1e-9, 5.0, 0.0], [-0.2, 0.0, 5.0]])
    expected = np.array([[0, 0, 1], [0, 0, 0], [1, 0, 0]], dtype=bool)
    np.testing.assert_array_equal(support(Theta), expected)
    np.testing.assert_array_equal(support(Theta, tol=0.0), expected | np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], bool))
    np.testing.assert_array_equal(support(np.ones((2, 2), dtype=bool)), [[False, True], [True, False]])
    with pytest.raises(ValueError, match="'Theta' must be a non-empty square"):
        support(np.ones((2, 3)))
    with pytest.raises(ValueError, match=r"'tol' must be in \[0, inf\)"):
        support(np.eye(2), tol=-1.0)


def _chain_truth(p):
    return np.eye(p) + np.eye(p, k=1) + np.eye(p, k=-1)


def test_tpr_fpr_hand_computed():
    truth = _chain_truth(4)  # edges (0,1) (1,2) (2,3); non-edges (0,2) (0,3) (1,3)
    est = np.eye(4)
    est[0, 1] = est[1, 0] = 0.3  # TP
    est[0, 3] = 0.1  # FP (one triangle suffices)
    est[2, 3] = 1e-10  # below tol: not an edge
    assert tpr_fpr(est, truth) == (pytest.approx(1 / 3), pytest.approx(1 / 3))
    assert tpr_fpr(est, truth, tol=1e-12) == (pytest.approx(2 / 3), pytest.approx(1 / 3))
    assert tpr_fpr(truth, truth) == (1.0, 0.0)
    assert tpr_fpr(np.eye(4), truth) == (0.0, 0.0)
    assert tpr_fpr(np.ones((4, 4)), truth) == (1.0, 1.0)


def test_tpr_fpr_bad_inputs():
    with pytest.raises(ValueError, match="'truth' must have at least one edge and one non-edge"):
        tpr_fpr(np.eye(3), np.eye(3))
    with pytest.raises(ValueError, match="'truth' must have at least one edge and one non-edge"):
        tpr_fpr(np.eye(3), np.ones((3, 3)))
    with pytest.raises(ValueError, match="same shape"):
        tpr_fpr(np.eye(3), _chain_truth(4))
    with pytest.raises(ValueError, match="'estimate' must be a non-empty square"):
        tpr_fpr(np.ones((3, 4)), _chain_truth(4))


def _path_from_scores(scores, thresholds):
    return [np.where(np.abs(scores) > t, scores, 0.0) for t in thresholds]


def test_roc_curve_endpoints_and_order():
    truth = _chain_truth(4)
    path = [np.ones((4, 4)), truth, np.eye(4)]  # deliberately unsorted
    fpr, tpr = roc_curve(path, truth)
    assert fpr[0] == tpr[0] == 0.0 and fpr[-1] == tpr[-1] == 1.0
    assert np.all(np.diff(fpr) >= 0)
    np.testing.assert_array_equal(fpr, [0, 0, 0, 1, 1])
    np.testing.assert_array_equal(tpr, [0, 0, 1, 1, 1])
    assert auc(fpr, tpr) == 1.0
    # a 3-D array works too
    fpr3, tpr3 = roc_curve(np.stack(path), truth)
    np.testing.assert_array_equal(fpr3, fpr)
    np.testing.assert_array_equal(tpr3, tpr)


def test_roc_empty_path():
    fpr, tpr = roc_curve([], _chain_truth(3))
    np.testing.assert_array_equal(fpr, [0, 1])
    assert auc(fpr, tpr) == 0.5


def test_perfect_ranking_auc_one():
    rng = np.random.default_rng(0)
    p = 15
    truth = _chain_truth(p)
    scores = rng.uniform(0.0, 0.5, size=(p, p))
    scores = (scores + scores.T) / 2
    scores[truth.astype(bool)] += 1.0  # every true edge outranks every non-edge
    np.fill_diagonal(scores, 1.0)
    thresholds = np.linspace(0, 2, 60)
    fpr, tpr = roc_curve(_path_from_scores(scores, thresholds), truth)
    assert auc(fpr, tpr) == pytest.approx(1.0)


@pytest.mark.statistical
def test_random_ranking_auc_half():
    rng = np.random.default_rng(1)
    p = 40
    truth = _chain_truth(p)
    areas = []
    for _ in range(20):
        scores = rng.uniform(size=(p, p))
        scores = np.triu(scores, 1) + np.triu(scores, 1).T + np.eye(p)
        fpr, tpr = roc_curve(_path_from_scores(scores, np.linspace(0, 1, 101)), truth)
        areas.append(auc(fpr, tpr))
    assert abs(np.mean(areas) - 0.5) < 0.05


def test_auc_hand_computed_and_validation():
    assert auc([0, 0.5, 1], [0, 1, 1]) == pytest.approx(0.75)
    assert auc(np.array([0.0, 0.25, 0.25, 1.0]), np.array([0.0, 0.5, 0.8, 1.0])) == pytest.approx(
        0.25 * 0.25 + 0.75 * 0.9
    )
    with pytest.raises(ValueError, match="'fpr' must be non-decreasing"):
        auc([0, 1, 0.5], [0, 1, 1])
    with pytest.raises(ValueError, match="same length >= 2"):
        auc([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="same length >= 2"):
        auc([0], [0])
    with pytest.raises(ValueError, match="finite"):
        auc([0, np.nan], [0, 1])


def test_roc_curve_bad_inputs():
    truth = _chain_truth(3)
    with pytest.raises(TypeError, match="'estimates_over_lambda'"):
        roc_curve("abc", truth)
    with pytest.raises(ValueError, match=r"'estimates_over_lambda\[1\]' must have the shape of 'truth'"):
        roc_curve([np.eye(3), np.eye(4)], truth)
    with pytest.raises(ValueError, match=r"'estimates_over_lambda\[0\]' must be a non-empty square"):
        roc_curve([np.ones((3, 2))], truth)
