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
    search = GridSearchCV(PrivateIRLS(**KW, accountant=acct, rng=None), {"w_max": [2.0, 5.0]}, cv=3,
                          error_score="raise").fit(X, y)
    assert len(acct.ledger) == 2 * 3 + 1  # every cross-validation fit and the refit
    assert acct.spent.epsilon == pytest.approx(7.0) and search.best_estimator_.accountant is acct
    assert {e.label for e in acct.ledger} == {"PrivateIRLS"}


def test_grid_search_past_the_budget_is_refused_not_granted():
    X, y = _data()
    acct = Accountant(ApproxDP(4.5, 1e-5))
    with pytest.raises(BudgetExceededError):
        GridSearchCV(PrivateIRLS(**KW, accountant=acct, rng=None), {"w_max": [2.0, 5.0]}, cv=3,
                     error_score="raise").fit(X, y)
    assert len(acct.ledger) == 4 and acct.spent.epsilon <= 4.5


def test_cross_val_score_charges_every_fit_and_stops_at_the_budget():
    X, y = _data()
    acct = Accountant(ApproxDP(3.0, 1e-5))
    est = PrivateIRLS(**KW, accountant=acct, rng=None)
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
    est = PrivateCovariance(epsilon=1.0, row_norm=1.0, mechanism="laplace", center=None, accountant=acct)
    for copy in (clone(est), clone(clone(est))):
        copy.fit(X)
    assert acct.spent == PureDP(2.0)
    with pytest.raises(BudgetExceededError):
        clone(est).fit(X)


# -- noise from one seed is spent once (hunt3) --------------------------------------
# Two releases drawn from the same seed share their noise: their difference is the exact difference of the
# statistics, whatever the budget says. The accountant refuses the second spend from the same seed or generator
# state (a generator deep-copied by clone starts where the original did).

def test_an_int_seed_is_spent_once_because_refits_would_share_their_noise():
    X, _ = _data()
    acct = Accountant(PureDP(5.0))
    est = PrivateCovariance(epsilon=1.0, row_norm=1.0, mechanism="laplace", center=None, accountant=acct, rng=7)
    first = est.fit(X).covariance_.copy()
    with pytest.raises(ValueError, match="same seed"):
        est.fit(X[1:])  # a neighbour: with the same noise, the difference would be exact
    assert len(acct.ledger) == 1 and np.array_equal(est.covariance_, first)  # refused before touching the data
    PrivateCovariance(epsilon=1.0, row_norm=1.0, mechanism="laplace", center=None, accountant=acct, rng=8).fit(X)
    assert len(acct.ledger) == 2


@pytest.mark.parametrize("make", [lambda: np.random.default_rng(3), lambda: 3])
def test_cross_validation_refuses_clones_that_restart_the_same_noise(make):
    X, y = _data()
    acct = Accountant(ApproxDP(10.0, 1e-5))
    with pytest.raises(ValueError, match="same seed"):
        cross_val_score(PrivateIRLS(**KW, accountant=acct, rng=make()), X, y, cv=3, error_score="raise")
    assert len(acct.ledger) == 1


def test_one_generator_shared_by_every_fit_draws_fresh_noise_and_is_charged_each_time():
    X, y = _data()
    acct = Accountant(ApproxDP(10.0, 1e-5))
    gen = np.random.default_rng(3)
    est = PrivateIRLS(**KW, accountant=acct, rng=gen)
    est.fit(X, y)
    est.fit(X, y)  # the generator moved on: independent noise
    assert len(acct.ledger) == 2 and "_noise_source" not in vars(est)


def test_the_noise_source_never_appears_in_the_ledger_or_report():
    X, _ = _data()
    acct = Accountant(PureDP(5.0))
    PrivateCovariance(epsilon=1.0, row_norm=1.0, mechanism="laplace", center=None, accountant=acct, rng=7).fit(X)
    assert "source" not in repr(acct.report()) and "source" not in repr(acct.ledger)


# -- the tensor decomposition too (hunt3 row 20) -------------------------------------
def _mog(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    means = np.array([[2.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    return means[rng.integers(0, 2, size=n)] + 0.3 * rng.normal(size=(n, 3))


def _tensor(acct, rng):
    from dpmoments.estimators import PrivateTensorDecomposition

    return PrivateTensorDecomposition(n_components=2, model="mog", sigma2=0.09, epsilon=1.0, delta=1e-6,
                                      row_norm=4.0, accountant=acct, rng=rng)


def test_a_tensor_decomposition_from_one_seed_is_charged_once():
    acct = Accountant(ApproxDP(10.0, 1e-5))
    _tensor(acct, 0).fit(_mog())
    with pytest.raises(ValueError, match="same seed"):
        _tensor(acct, 0).fit(_mog(seed=1))
    assert len(acct.ledger) == 1
    _tensor(acct, 1).fit(_mog())
    assert len(acct.ledger) == 2


def test_a_failed_tensor_refit_leaves_the_old_result():
    est = _tensor(None, np.random.default_rng(0)).fit(_mog())
    before = {k: v for k, v in vars(est).items() if k.endswith("_")}
    est.n_components = 3
    with pytest.raises(ValueError):
        est.fit(np.ones((50, 2)))  # two features: fails after reading the new input's width
    assert set(before) == {k for k in vars(est) if k.endswith("_")}
    for k, v in before.items():
        assert getattr(est, k) is v, k


def test_fits_without_an_accountant_are_counted_and_warned_about_once():
    """Each clone's privacy_report_ told of one spend: 5 cross-validation fits, or 50 refits, looked like one
    epsilon. The clones share their original's count (``fit_count``), and the second fit warns, once."""
    import warnings

    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    from dpmoments import PrivacyLeakWarning

    X, y = _data()
    # rng=None, as users fit: a seed would (rightly) warn that the clones redraw the same noise. The verdict does not
    # depend on the noise: only PrivacyLeakWarnings are counted (a NoiseDominatesWarning came 1 run in 3).
    est = PrivateIRLS(**KW)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
        assert est.privacy_report_["fit_count"] == 1
        assert not [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]  # what this test is about
        cross_val_score(make_pipeline(FunctionTransformer(), est), X, y, cv=3, error_score="raise")
        search = GridSearchCV(est, {"w_max": [2.0, 5.0]}, cv=3, error_score="raise").fit(X, y)
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 1 and "fitted more than once" in str(leaks[0].message) and "accountant" in str(leaks[0].message)
    assert search.best_estimator_.privacy_report_["fit_count"] == 1 + 3 + 7
    assert "fit_count" not in PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=1.0, center=np.zeros(3)).fit_release(
        PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=1.0, center=np.zeros(3)).fit(X).release_).privacy_report_


def test_fits_charged_to_an_accountant_are_counted_without_a_warning():
    import warnings

    from dpmoments import PrivacyLeakWarning

    X, y = _data()
    acct = Accountant(ApproxDP(10.0, 1e-5))
    est = PrivateIRLS(**KW, accountant=acct, rng=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        cross_val_score(est, X, y, cv=3, error_score="raise")
        est.fit(X, y)
    assert est.privacy_report_["fit_count"] == 4 and len(acct.ledger) == 4


@pytest.mark.parametrize("name", ["PrivateGraphicalLasso", "PrivateRidgePrecision", "PrivateCovariance", "PrivatePCA"])
def test_one_fit_counts_once(name):
    """The graphical lasso's fit calls its base's (both keep the old result on failure): that is one fit."""
    import warnings

    import dpmoments.estimators as estimators
    from dpmoments import PrivacyLeakWarning

    extra = {"PrivateGraphicalLasso": {"alpha": 0.1}, "PrivateRidgePrecision": {"alpha": 0.5},
             "PrivatePCA": {"n_components": 1}}.get(name, {})
    X, _ = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        est = getattr(estimators, name)(epsilon=1.0, delta=1e-6, row_norm=1.0, center=np.zeros(3), **extra).fit(X)
    assert est.privacy_report_["fit_count"] == 1


def test_fits_from_one_seed_without_an_accountant_are_warned_about():
    """An int rng (scikit-learn's random_state=0 habit) gives every fold of cross_validate the same noise: the
    difference of two folds' releases is the exact difference of their data. With an accountant the second
    spend is refused; without one nothing said so."""
    import warnings

    from sklearn.model_selection import cross_validate

    from dpmoments import PrivacyLeakWarning

    X, _ = _data()
    est = PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=1.0, center=np.zeros(3), rng=0)
    score = lambda e, X, y=None: 0.0  # noqa: E731
    with pytest.warns(PrivacyLeakWarning, match="same noise as an earlier fit"):
        cross_validate(est, X, cv=2, scoring=score)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cross_validate(clone(est).set_params(rng=None), X, cv=2, scoring=score)
        generator = np.random.default_rng(0)
        for _ in range(2):  # one generator for the fits one makes oneself: its state moves on
            PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=1.0, center=np.zeros(3), rng=generator).fit(X)
    assert not [w for w in caught if "same noise" in str(w.message)]


def test_a_refit_made_an_error_is_refused_before_it_runs():
    """(review7) The warnings came after the fit: with PrivacyLeakWarning made an error, the second fit raised
    but had already drawn its noise and replaced the first fit's result. Now it is refused before it runs, the
    first result stays, and every further attempt is refused too."""
    import warnings

    from dpmoments import PrivacyLeakWarning

    X, _ = _data()
    est = PrivateCovariance(epsilon=1.0, delta=1e-6, row_norm=1.0, center=np.zeros(3), rng=0).fit(X)
    first = est.covariance_
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        for _ in range(2):
            with pytest.raises(PrivacyLeakWarning):
                est.fit(X[:50])
    assert est.covariance_ is first and est.privacy_report_["fit_count"] == 1
