"""Model selection's private bounds on small tables: the share widened only where its draws are refused."""

import math

import numpy as np
import pytest

from dpmoments.estimators._selection_share import SELECTION_BOUNDS_CAP, selection_bound_share
from dpmoments.estimators.model_selection import PrivateModelSelection
from dpmoments.moments.private_bounds import TIE_PRIOR
from dpmoments.moments.quantile_grid import SearchRange


def _least_share(n, epsilon, steps, draws=2):
    return draws * 8.0 * (math.log(steps + 1) + TIE_PRIOR) / (n * epsilon)


def test_share_kept_where_it_runs_and_widened_to_the_finest_grid_within_the_cap():
    grid = SearchRange()
    assert selection_bound_share(20_000, 1.0, 0.1, 2, grid) == 0.1  # runs on the default grid
    assert selection_bound_share(235, 6.0, 0.1, 2, grid) == 0.1  # runs on 30 steps as given (draw_grid's rule)
    assert selection_bound_share(235, 4.0, 0.1, 2, grid) == pytest.approx(_least_share(235, 4.0, 1000))
    assert selection_bound_share(235, 1.0, 0.1, 2, grid) == pytest.approx(_least_share(235, 1.0, 100))
    assert selection_bound_share(60, 1.0, 0.1, 2, grid) == SELECTION_BOUNDS_CAP  # none runs: refused at the cap
    assert selection_bound_share(None, 1.0, 0.1, 2, grid) == 0.1  # n not public: nothing decided from it
    assert selection_bound_share(235, 1.0, 0.1, 2, SearchRange(steps=50)) == 0.1  # the user's grid is kept


def _table(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)) * [3.0, 40.0]
    return X, X @ [1.0, 0.05] + rng.normal(size=n)


def test_a_small_table_runs_at_epsilon_1_and_its_parts_add_up():
    X, y = _table(220)
    sel = PrivateModelSelection(epsilon=1.0, rng=1).fit(X, y)
    parts = sel.privacy_report_["budget_parts"]
    assert parts["bounds"] == pytest.approx(_least_share(220, 1.0, 100))  # widened from 0.1, on 100 steps
    assert sum(parts.values()) == pytest.approx(1.0)
    assert sum(p.guarantee.epsilon for p in sel.privacy_parts_) == pytest.approx(1.0)


@pytest.mark.filterwarnings("ignore")
def test_too_small_a_table_is_refused_naming_the_epsilon_it_runs_from():
    X, y = _table(60)
    with pytest.raises(ValueError, match="too few rows") as err:
        PrivateModelSelection(epsilon=1.0, rng=1).fit(X, y)
    needed = float(str(err.value).split("runs from epsilon ")[1].split(",")[0].split(";")[0])
    assert needed == pytest.approx(_least_share(60, 1.0, 30) / SELECTION_BOUNDS_CAP, rel=0.05)
    PrivateModelSelection(epsilon=needed * 1.01, rng=1).fit(X, y)  # and it does run from there


def test_a_share_the_user_chose_is_kept_and_refused_where_too_small():
    # only the default share widens on a small table: a chosen one is the user's, and the refusal says what runs
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((235, 3)), rng.standard_normal(235)
    fitted = PrivateModelSelection(epsilon=1.0, rng=0).fit(X, y)
    assert sum(p.share for p in fitted.privacy_parts_ if p.share) > 0.1  # the default, widened
    with pytest.raises(ValueError, match="too few rows"):
        PrivateModelSelection(epsilon=1.0, rng=0, bound_budget=0.2).fit(X, y)
