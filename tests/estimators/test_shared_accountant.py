"""A shared accountant stays shared through scikit-learn's model selection: every fit is charged.

``clone`` deep-copies an estimator's parameters; it used to copy the
accountant too, so ``GridSearchCV(PrivateIRLS(..., accountant=acct))`` ran 7
full-budget fits and ``acct`` recorded none.
"""

import math

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score

from dpmoments import Accountant, ApproxDP, BudgetExceededError, PureDP
from dpmoments.estimators import PrivateCovariance, PrivateIRLS

KW = dict(epsilon=1.0, delta=1e-6, row_norm=1.0, response_bound=1.0, n_iter=2, w_max=5.0)


def _data(n=600, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / (2 * math.sqrt(d))
    return X, X @ np.linspace(1, -1, d) + 0.05 * rng.standard_t(2, size=n)


def test_clone_keeps_the_accountant():
    acct = Accountant(ApproxDP(10.0, 1e-5))
    assert clone(PrivateIRLS(**KW, accountant=acct)).accountant is acct


def test_grid_search_charges_every_fit():
    X, y = _data()
    acct = Accountant(ApproxDP(10.0, 1e-5))
    search = GridSearchCV(PrivateIRLS(**KW, accountant=acct, rng=0), {"w_max": [2.0, 5.0]}, cv=3,
                          error_score="raise").fit(X, y)
    assert len(acct.ledger) == 2 * 3 + 1  # every cross-validation fit and the refit
    assert acct.spent.epsilon == pytest.approx(7.0) and search.best_estimator_.accountant is acct
    assert {e.label for e in acct.ledger} == {"PrivateIRLS"}


def test_grid_search_past_the_budget_is_refused_not_granted():
    X, y = _data()
    acct = Accountant(ApproxDP(4.5, 1e-5))
    with pytest.raises(BudgetExceededError):
        GridSearchCV(PrivateIRLS(**KW, accountant=acct, rng=0), {"w_max": [2.0, 5.0]}, cv=3,
                     error_score="raise").fit(X, y)
    assert len(acct.ledger) == 4 and acct.spent.epsilon <= 4.5


def test_cross_val_score_charges_every_fit_and_stops_at_the_budget():
    X, y = _data()
    acct = Accountant(ApproxDP(3.0, 1e-5))
    est = PrivateIRLS(**KW, accountant=acct, rng=0)
    scores = cross_val_score(est, X, y, cv=3)
    assert len(acct.ledger) == 3 and np.all(np.isfinite(scores))
    with pytest.raises(ValueError, match="All the 2 fits failed"):  # scikit-learn's word for "every fit refused"
        cross_val_score(est, X, y, cv=2)
    assert len(acct.ledger) == 3
    with pytest.raises(BudgetExceededError):
        cross_val_score(est, X, y, cv=2, error_score="raise")


def test_moment_estimators_share_too():
    X, _ = _data()
    acct = Accountant(PureDP(2.0))
    est = PrivateCovariance(epsilon=1.0, row_norm=1.0, mechanism="laplace", center=None, accountant=acct, rng=0)
    for copy in (clone(est), clone(clone(est))):
        copy.fit(X)
    assert acct.spent == PureDP(2.0)
    with pytest.raises(BudgetExceededError):
        clone(est).fit(X)
