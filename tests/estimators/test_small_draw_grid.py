"""A small table's regression and model selection draw their bounds on a coarser public grid where the default one
refuses them (moments/draw_grid.py, the covariance family's small-table rule): the guarantee asked for, the bound a
grid edge, the release saying so; a refusal there names the grid and the epsilon it runs from."""

import numpy as np
import pytest

from dpmoments.estimators import PrivateIRLS, PrivateModelSelection
from dpmoments.moments.quantile_grid import SearchRange

_rng = np.random.default_rng(0)
X = _rng.lognormal(6.5, 0.5, size=(235, 1))  # engel's shape: 235 rows, one income-like column
y = 0.5 * X[:, 0] + _rng.normal(0.0, 50.0, size=235)


def test_regress_on_235_rows_at_epsilon_4_runs_on_a_coarser_grid():
    """Refused before (each draw 0.35 against 0.41 needed on 1000 steps): it runs on 100 steps."""
    est = PrivateIRLS(epsilon=4.0, delta=1e-6, n_iter=1, rng=0).fit(X, y)
    drawn = [p for p in est.privacy_parts_ if p.label in ("row_norm", "response_bound")]
    assert len(drawn) == 2 and all("grid of 100 steps instead of 1000" in p.released["target"] for p in drawn)
    assert all(np.isclose(SearchRange(steps=100).edges(), p.released[p.label]).any() for p in drawn)
    assert est.privacy_.epsilon == pytest.approx(4.0) and est.privacy_.delta == 1e-6


def test_select_refused_even_there_names_the_grid_and_its_epsilon():
    """Its bounds take up to 0.7 of epsilon (estimators/_selection_share.py): refused below 0.82 on 235 rows."""
    with pytest.raises(ValueError, match="taking 0.7 of epsilon on a grid of 30 steps instead of 1000 it runs from "
                                         "epsilon 0.83"):
        PrivateModelSelection(epsilon=0.5, rng=0).fit(X, y)
