"""What every estimator shares with scikit-learn's conventions, and its privacy report.

Input names and widths go through scikit-learn's own
:func:`sklearn.utils.validation.validate_data` (``skip_check_array=True``:
only the column names and the width are read; the values are validated by
:func:`dpmoments._validation.check_data`, whose errors never quote data).
So ``feature_names_in_``, ``n_features_in_`` and the warning on mismatched
names behave exactly as in scikit-learn.

:func:`privacy_report` builds ``privacy_report_``, one schema for every
estimator (documented in ``docs/privacy.md``).
"""

import contextlib
import functools
import threading
import warnings

import numpy as np

from .._rng import noise_source
from .._validation import check_data
from ..exceptions import InsecureRandomnessWarning, NotPrivateWarning, PrivacyLeakWarning, UncertifiedPrivacyWarning
from ..data import as_source, same_file_version
from ..data.frames import labelled
from ..moments.dask_moments import names_only
from ..privacy.relations import describe_relation

__all__ = ["all_or_nothing", "check_input", "fit_input", "labelled_attribute", "noise_entry", "privacy_report",
           "release_input", "release_noise", "require_for_fit", "name_of"]


def all_or_nothing(method):
    """A ``fit`` that fails leaves the estimator as it was: the old result or the new one, never a mix.

    (A refit that failed after reading the new input's width kept the old ``covariance_`` beside the new
    ``n_features_in_``.) The attributes are restored from a shallow copy taken before the call.
    """

    @functools.wraps(method)
    def fit(self, *args, **kwargs):
        before = dict(vars(self))
        fitting = vars(_FITTING).setdefault("ids", set())
        outer = id(self) not in fitting  # a subclass's fit calling its base's is one fit
        counted = outer and method.__name__ == "fit"  # fit_release spends nothing
        source = _source(self) if counted else None  # read before the first draw moves a generator on
        if counted:  # before the fit: with warnings made errors, a repeated fit is refused before it reads data
            _warn_if_refit(self, source)
        fitting.add(id(self))
        try:
            with same_file_version(), _folded_warnings(self, counted and _tally(self).cloned):
                result = method(self, *args, **kwargs)
        except BaseException:
            vars(self).clear()
            vars(self).update(before)
            raise
        finally:
            if outer:
                fitting.discard(id(self))
        if counted:
            _count_fit(self, source)
        return result

    return fit


_FITTING = threading.local()  # the estimators whose fit is running in this thread


class _FitTally:
    """How many fits one estimator and its scikit-learn clones have made in this process.

    Every fit spends its guarantee again on the rows it is given, and scikit-learn's tools fit clones
    (``cross_val_score``: one per fold; ``GridSearchCV``: one per fold and candidate, and a refit), so
    each clone's ``privacy_report_`` alone would tell of one spend. The clones share their original's
    tally (``__sklearn_clone__``); an accountant, where one is given, charges and caps them as well.
    """

    def __init__(self):
        self.count = 0
        self.sources = set()  # where each seeded fit's noise started (_rng.noise_source)
        self.warned_same_noise = False
        self.cloned = False  # scikit-learn has cloned it: its fits are a loop's (cross_val_score, GridSearchCV)


# Never folded into a summary: what a user filters on to refuse or audit a fit stays its own warning.
_OWN_LINE = (PrivacyLeakWarning, UncertifiedPrivacyWarning, InsecureRandomnessWarning, NotPrivateWarning)


@contextlib.contextmanager
def _folded_warnings(estimator, fold):
    """Inside a scikit-learn loop, one summary warning per fit instead of one per check (a fold of
    ``GridSearchCV`` warned up to four times: the bound, the centre's bias, the noise floor, ...).

    The user's filters still apply first (``"error"`` still raises, ``"ignore"`` still drops); privacy
    warnings (``_OWN_LINE``) keep their own line and category. The summary takes the folded warnings'
    category when they share one, else ``UserWarning``, and lists each one's first sentence.
    """
    if not fold:
        yield
        return
    with warnings.catch_warnings(record=True) as caught:
        try:
            yield
        finally:
            own = [w for w in caught if issubclass(w.category, _OWN_LINE)]
            folded = [w for w in caught if not issubclass(w.category, _OWN_LINE)]
    for w in own:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if len(folded) == 1:
        w = folded[0]
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    elif folded:
        categories = {w.category for w in folded}
        category = categories.pop() if len(categories) == 1 else UserWarning
        listed = "; ".join(f"({i}) {w.category.__name__}: {_first_sentence(str(w.message), name_of(estimator))}"
                           for i, w in enumerate(folded, 1))
        warnings.warn(f"{name_of(estimator)} (fit {_tally(estimator).count + 1} of it and its clones): "
                      f"{len(folded)} warnings: {listed}", category, stacklevel=4)


def _first_sentence(message, name):
    """A warning's first sentence, without the estimator's name that the summary already gives."""
    message = message.removeprefix(f"{name}: ").removeprefix(f"{name} ")
    end = message.find(". ")
    return (message if end < 0 else message[:end]).rstrip(".")


def _source(estimator):
    try:
        return noise_source(getattr(estimator, "rng", None))
    except (TypeError, ValueError):  # a bad rng: the fit itself says so
        return None


def _tally(estimator):
    if "_fit_tally" not in vars(estimator):
        estimator._fit_tally = _FitTally()
    return estimator._fit_tally


def clone_sharing_tally(estimator):
    """``__sklearn_clone__``: scikit-learn's clone, counting its fits with the original's (:class:`_FitTally`)."""
    import sklearn.base

    twin = sklearn.base.BaseEstimator.__sklearn_clone__(estimator)
    twin._fit_tally = _tally(estimator)
    twin._fit_tally.cloned = True
    return twin


def _count_fit(estimator, source):
    tally = _tally(estimator)
    tally.count += 1
    tally.sources.add(source)
    estimator.privacy_report_["fit_count"] = tally.count


def _warn_if_refit(estimator, source):
    """Warn, before it runs, of a fit that spends again (the second) or draws an earlier fit's noise.

    Before the fit, not after: under ``warnings.simplefilter("error", PrivacyLeakWarning)`` the fit is
    then refused before it reads the data or draws noise, and the estimator keeps its earlier result.
    """
    tally = _tally(estimator)
    if getattr(estimator, "accountant", None) is not None:  # it charges the fit, and refuses a repeated seed
        return
    if source is not None and source in tally.sources and not tally.warned_same_noise:
        warnings.warn(f"{name_of(estimator)}: this fit draws the same noise as an earlier fit of this estimator or "
                      "its clones (the same int rng, or a generator in the same state, which clone copies): the "
                      "difference of the two releases is the exact difference of their data, which no guarantee "
                      "covers. Use rng=None (OS entropy), or one Generator for the fits you make yourself.",
                      PrivacyLeakWarning, stacklevel=3)
        tally.warned_same_noise = True  # only once it did not raise: a refused fit is refused again
    if tally.count == 1:  # this is the second fit; warned once: sklearn's tools reset the warning registry
        warnings.warn(f"{name_of(estimator)} has fitted more than once, itself or through clones (a refit, "
                      "cross_val_score, GridSearchCV), with no accountant: every fit spends its epsilon again on "
                      "the rows it is given and nothing adds them up; privacy_report_['fit_count'] counts them. "
                      "Pass accountant=Accountant(budget) to charge and cap every fit.", PrivacyLeakWarning,
                      stacklevel=3)


def labelled_attribute(estimator, attribute, rows=None):
    """A fitted attribute as a pandas object labelled by the input's columns (``x0, x1, ...`` without names);
    ``rows``: the prefix of a per-component attribute's rows (:func:`dpmoments.data.frames.labelled`)."""
    if not hasattr(estimator, attribute):
        raise AttributeError(f"{name_of(estimator)} has no fitted attribute {attribute!r}; fit it first.")
    names = getattr(estimator, "feature_names_in_", None)
    if names is None:
        names = [f"x{j}" for j in range(estimator.n_features_in_)]
    return labelled(getattr(estimator, attribute), names, attribute, rows=rows)


def name_of(estimator):
    """The estimator's name in messages and reports: the scikit-learn class's, also when its core class fits."""
    return getattr(estimator, "_estimator", type(estimator).__name__)


def require_for_fit(estimator, *names):
    """Refuse ``fit`` when a privacy parameter it needs is unset (``fit_release`` needs none of them)."""
    for name in names:
        if getattr(estimator, name) is None:
            raise ValueError(f"'{name}' is required to fit {name_of(estimator)} from data; got None "
                             "(only fit_release, which reuses a release, does without it).")


def fit_input(estimator, X):
    """``fit``: set ``n_features_in_`` and, for string column names, ``feature_names_in_``; return the names.

    Reads the names and the width only. A file path has neither here (the
    release streams it): the names are forgotten and the width is the
    release's.
    """
    src = as_source(X)
    core = not hasattr(estimator, "__sklearn_tags__")  # a core class (the command line's): no scikit-learn checks
    if src.kind in ("file", "stream") or core and src.kind == "dask":
        vars(estimator).pop("feature_names_in_", None)  # what scikit-learn's check does for input without names
        if getattr(X, "target_name", None) is not None:  # an opened table whose chunks are (X, y) pairs
            raise ValueError(f"{name_of(estimator)}.fit takes a table opened without target= (its rows are "
                             "(X, y) pairs with one); open it again without target.")
        names = src.feature_names if src.kind == "stream" and not core else None  # an opened table's: public
        if names is not None:
            estimator.feature_names_in_ = np.asarray(names, dtype=object)
        return getattr(estimator, "feature_names_in_", None)
    _check_unique_columns(X)
    _validate_data(estimator, X, reset=True)
    if src.kind == "dask" and src.named:
        # scikit-learn reads names from eager frames only; a dask frame's columns are public metadata too.
        names = np.asarray(list(X.columns), dtype=object)
        if len(names) and all(isinstance(n, str) for n in names):
            estimator.feature_names_in_ = names
    return getattr(estimator, "feature_names_in_", None)


def _check_unique_columns(X):
    """One line for a table whose columns repeat a name (narwhals' own error spans several lines)."""
    columns = list(getattr(X, "columns", ()))
    try:
        repeated = len(columns) - len(set(columns))
    except TypeError:  # not names (a pyarrow Table's columns are its arrays)
        return
    if repeated:
        raise ValueError(f"'X' has {repeated} repeated column name(s); give every column its own name (or pass "
                         "X.to_numpy()).")


def release_input(estimator, n_features, names=None):
    """What a fit from a release saw: ``n_features`` columns, named ``names`` (``None``: unnamed)."""
    estimator.n_features_in_ = int(n_features)
    if names is None:
        vars(estimator).pop("feature_names_in_", None)
    else:
        estimator.feature_names_in_ = names


def check_input(estimator, X):
    """``predict``/``transform``/``score``: ``X`` as an array, of fit's width, names checked as scikit-learn does."""
    # A table is checked for its names first, as scikit-learn does (wrong columns are refused for their names, not
    # for what pandas fills them with); an array for its shape first (a 1-D array is told to reshape).
    src = as_source(X)
    named = src.named
    if named:
        _check_unique_columns(X)
        _validate_data(estimator, names_only(X) if src.kind == "dask" else X, reset=False)
    array = check_data(X)
    if not named:
        _validate_data(estimator, X, reset=False)
    return array


def _validate_data(estimator, X, reset):
    """scikit-learn's check of the names and width of ``X`` (``skip_check_array``: the values are ours to check)."""
    # Imported here, not at the top: the fitting logic (fit_release) runs without scikit-learn, and the command
    # line, which never calls fit or transform, does not pay the ~1.2 s import of scikit-learn.
    from sklearn.utils.validation import validate_data

    validate_data(estimator, X, reset=reset, skip_check_array=True)


def noise_entry(statistic, mechanism, scale, *, sensitivity=None, sensitivity_norm=None, releases=1, **more):
    """One line of a report's ``noise``: what was released, with which noise, calibrated to what."""
    return {"statistic": statistic, "mechanism": mechanism, "scale": scale, "sensitivity": sensitivity,
            "sensitivity_norm": sensitivity_norm, "releases": int(releases), **more}


def release_noise(statistic, release):
    """The ``noise`` lines of one :class:`~dpmoments.Release`: its statistic, and its noisy count if any."""
    lines = [noise_entry(statistic, release.mechanism, release.noise_scale, sensitivity=release.sensitivity,
                         sensitivity_norm=release.sensitivity_norm,
                         of="the normalised statistic" if release.n_public else "the sum, divided by the noisy n")]
    if release.count_noise_scale is not None:
        lines.append(noise_entry("row count", release.mechanism, release.count_noise_scale, sensitivity=1.0,
                                 sensitivity_norm=release.law.norm))
    return lines


def privacy_report(estimator, *, guarantee, neighbours, randomness, fitted_by="fit", parts=(), noise=(), **details):
    """``privacy_report_``: the same fields for every estimator, then its own ``details``.

    Parameters
    ----------
    estimator : the fitted estimator
    guarantee : PureDP, ApproxDP, ZCDP or Uncertified
        What the output satisfies (``privacy_``).
    neighbours : str
        The relation ``guarantee`` holds under.
    randomness : str
        Where the noise came from (:func:`dpmoments._rng.describe_randomness`).
    fitted_by : {"fit", "fit_release"}
        ``"fit_release"`` reused a release already paid for: ``spent`` is then ``None``.
    parts : sequence of Part
        Each share of the budget, its guarantee and what it released.
    noise : sequence of dict
        :func:`noise_entry` lines, one per kind of noisy statistic.
    **details
        Estimator-specific, JSON-able fields.
    """
    return {
        "estimator": name_of(estimator),
        "fitted_by": fitted_by,
        "spent": guarantee.to_dict() if fitted_by == "fit" else None,
        "guarantee": guarantee.to_dict(),
        "certified": guarantee.certified,
        "neighbours": neighbours,
        "neighbours_meaning": describe_relation(neighbours),
        "parts": [p.to_dict() for p in parts],
        "noise": list(noise),
        "randomness": randomness,
        **details,
    }
