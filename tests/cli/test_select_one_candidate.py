"""A selection among one candidate model says there was nothing to choose, not a gap of inf."""

import math

import numpy as np

from dpmoments.cli.present.select import margin_lines
from dpmoments.estimators.model_selection import PrivateModelSelection


def test_one_candidate_prints_no_gap_and_no_signal_to_noise():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 1))
    est = PrivateModelSelection(epsilon=1.0, bounds=3.0, response_bound=4.0, R=2.0, rng=0).fit(X, X[:, 0])
    assert est.selected_ == (0,) and math.isnan(est.snr_)
    lines = margin_lines(est)
    assert lines == ["one candidate model: nothing to choose between (no runner-up, no selection noise to weigh)"]
