"""An estimator's parameters, each declared once: its name, its default and its check.

scikit-learn reads an estimator's parameters from the signature of its ``__init__`` (``get_params``,
``set_params``, ``clone``, ``repr``), which must name each one as an explicit keyword and only store
it ("rolling your own estimator" in scikit-learn's developer guide). A dataclass writes exactly that
``__init__`` from the class body, so each parameter is one line, in the class that owns it::

    @parameters
    class PCAFit(MomentEstimator):
        n_components: int = param(check=integer(minimum=1))
        eigensolver: str = param("auto", check=one_of("auto", "dense", "sparse"))

``inspect.signature``, ``help()``, editors and type checkers read the generated
``__init__(self, *, n_components, eigensolver="auto", ...)``; a subclass inherits its base's parameters
and may declare one again with another default. :func:`check_parameters` runs the declared checks in
the order declared; an estimator calls it once at the start of ``fit`` and ``fit_release``, before
any data are read or budget spent. A parameter declared without a check is one the release function it
is passed to checks (``epsilon``, ``row_norm``, ``neighbours``, ...), in the one place every way in
(estimator, release function, command line) shares.

Nothing here imports scikit-learn: the command line fits these classes as they are; the scikit-learn
estimators add ``BaseEstimator`` in plain class statements (``scikit_learn.py``).
"""

import dataclasses
import functools

from .._validation import check_int, check_nonnegative, check_option, check_positive

__all__ = ["REQUIRED", "check_parameters", "integer", "nonnegative", "one_of", "optional", "or_else", "param",
           "parameters", "positive", "positive_or_inf", "value_only"]

#: The default of a parameter the user must give (``n_components``).
REQUIRED = dataclasses.MISSING

#: What a parameter another library (or the issue tracker) spells differently is called here.
_SPELLED_HERE = {"bounds": "per-column ranges are ranges={'column': (low, high), ...} (docs/bounds.md)"}


def param(default=REQUIRED, *, check=None):
    """One parameter: its default (:data:`REQUIRED`: none) and ``check(value, name)``, which raises a one-line
    error naming the parameter where the value is wrong (``None``: checked where it is used)."""
    return dataclasses.field(default=default, metadata={} if check is None else {"check": check})


def parameters(cls):
    """The class decorator: the dataclass ``__init__`` of the declared parameters, keyword-only, storing them
    and nothing else (no ``__eq__`` nor ``__repr__``: an estimator's identity and scikit-learn's ``repr``
    stay), refusing a positional or unknown argument in the estimator's own name."""
    cls = dataclasses.dataclass(kw_only=True, eq=False, repr=False)(cls)
    cls.__init__ = _keywords_only(cls.__init__, {f.name for f in dataclasses.fields(cls)})
    return cls


def _keywords_only(init, known):
    """``init`` with the errors a user meets named by the estimator (``PrivateCovariance()``, not the generated
    ``__init__``) and a hint where the keyword is a known other spelling (``bounds=`` for ``ranges=``); its
    signature stays ``init``'s (``functools.wraps``), which is what scikit-learn reads."""

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        name = type(self).__name__
        if args:
            raise TypeError(f"{name}() takes keyword arguments only (e.g. epsilon=1.0); got {len(args)} positional")
        for key in kwargs:
            if key not in known:
                hint = f"; {_SPELLED_HERE[key]}" if key in _SPELLED_HERE and "ranges" in known else ""
                raise TypeError(f"{name}() got an unexpected keyword argument {key!r}{hint}")
        try:
            init(self, **kwargs)
        except TypeError as error:  # a required parameter left out: say whose
            raise TypeError(f"{name}() {str(error).partition('() ')[2]}") from None

    return __init__


def check_parameters(estimator, *names):
    """Run the declared checks on ``estimator``'s parameters (``names``: only theirs), in the order declared; then
    warn where ``n_draws`` is too few for the tails of a ``level`` interval (one place for every estimator)."""
    for field in dataclasses.fields(estimator):
        check = field.metadata.get("check")
        if check is not None and (not names or field.name in names):
            check(getattr(estimator, field.name), field.name)
    if all(hasattr(estimator, k) and (not names or k in names) for k in ("n_draws", "level")):
        from .uncertainty import warn_if_too_few_draws  # NumPy with it: not at import (the parsers read this module)

        warn_if_too_few_draws(estimator.n_draws, estimator.level)


def value_only(check):
    """A check of the value alone (``check_level(level)``), called as the others are."""
    return lambda value, name: check(value)


def optional(check):
    """``None``, or a value ``check`` accepts."""
    return lambda value, name: None if value is None else check(value, name)


def one_of(*options):
    """One of the strings ``options``."""
    return lambda value, name: check_option(value, name, options)


def integer(minimum):
    """An integer at least ``minimum``."""
    return lambda value, name: check_int(value, name, minimum=minimum)


def positive(value, name):
    """A finite real number above 0."""
    check_positive(value, name)


def positive_or_inf(value, name):
    """A real number above 0, or infinity (``epsilon``: no noise)."""
    check_positive(value, name, allow_inf=True)


def or_else(options, check):
    """One of ``options`` (strings such as ``"auto"``, or ``None``), or a value ``check`` accepts."""
    def either(value, name):
        if not any(value is None if o is None else isinstance(value, str) and value == o for o in options):
            check(value, name)

    return either


def nonnegative(value, name):
    """A finite real number at least 0."""
    check_nonnegative(value, name)
