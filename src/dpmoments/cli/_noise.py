"""How much of every number is noise: one place for the console lines and the report fields.

Every analysis command fits an estimator that records, from the release
alone, its ``snr_``, ``uncertainty_`` and ``diagnostics_``
(docs/uncertainty.md). :class:`~dpmoments.estimators.summary.Noise` carries them to the console and to the
report under the same names (``signal_to_noise``, ``uncertainty``,
``diagnostics``, ``withheld``), and decides what is withheld.

**The rule, the same in every command.** A failed check (a diagnostic) is
always warned about (``dpmoments: warning:`` on stderr, from the estimator)
and explained in a plain sentence on stdout. What happens to the estimate
depends on what the check says:

* the estimate is well defined but its noise is large (``noise-dominates``,
  ``variance-below-noise``, ``centre-noise``, ``coefficients-within-noise``): it is *shown with
  a warning*, each number beside its standard error and interval, which say
  how much of it is noise;
* the method did not estimate what the output is named (loadings of
  components below the noise, a graph with no entry above the noise, a
  model choice not distinguishable from its runner-up, mixture weights that
  are not proportions or a whitening that divides by noise): the output is
  *withheld* from the console, the figures and the report's fields (null
  there), and the report's ``withheld`` names it, the check, the file that
  still holds it and the fields it nulled. Files
  are always written (they are post-processing of the release, and scripts
  read them); the report says which of them are noise.

:func:`add_uncertainty_arguments` gives every command the same ``--draws``
and ``--level`` options; :func:`draws` resolves ``--draws auto``.
"""

import argparse

# The rule and the console's words live with the estimators, whose summary() prints the same lines.
from ..estimators.summary import SENTENCES, WITHHOLDING, Noise, interval_text, json_safe, num, table  # noqa: F401


__all__ = ["Noise", "json_safe", "add_uncertainty_arguments", "draws", "spread", "table", "num", "interval_text",
           "AUTO_DRAWS", "AUTO_MAX_FEATURES", "AUTO_MAX_TENSOR", "WITHHOLDING", "SENTENCES"]

#: ``--draws auto`` where no closed form gives the spread: this many parametric-bootstrap draws ...
AUTO_DRAWS = 50
#: ... up to this many features. Measured (one BLAS thread, load average 7-9 on 2 cores): 50 draws of the
#: graphical lasso or ridge cost 1-1.7 s at d = 200 and about 4 s at d = 300, PCA 0.4-0.7 s and 1.1 s;
#: beyond, ``--draws B`` asks for them.
AUTO_MAX_FEATURES = 200
#: Tensor decompositions redraw a D^3 tensor: 50 draws cost about 2 s at D = 100 (K = 5).
AUTO_MAX_TENSOR = 100


# -- options ------------------------------------------------------------------------------------------------
def _draws(text):
    if text == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or an integer >= 0, got {text!r}") from None
    if not 0 <= value <= 100_000:
        raise argparse.ArgumentTypeError(f"must be 'auto' or an integer in [0, 100000], got {text}")
    return value


def _level(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0.5 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0.5, 1) (the coverage of an interval), got {text}")
    return value


def add_uncertainty_arguments(parser, closed_form, auto_draws=None, limit=None, cost="1-2 s", target=False):
    """``--level``, and ``--draws`` where the analysis can be rerun on redrawn releases.

    ``closed_form``: what the closed forms give without draws. ``auto_draws``: what draws add, if
    ``--draws auto`` takes :data:`AUTO_DRAWS` of them up to ``limit`` columns (default
    :data:`AUTO_MAX_FEATURES`), where they were measured to cost ``cost``; ``None``: auto is 0 draws;
    no ``--draws`` at all when ``closed_form`` is everything (``auto_draws=False``).
    """
    limit = AUTO_MAX_FEATURES if limit is None else limit
    group = parser.add_argument_group("uncertainty (from the release alone: no data access, no privacy cost)")
    if auto_draws is not False:
        if auto_draws:
            auto = (f"{AUTO_DRAWS} draws, for {auto_draws}, up to {limit} columns (measured: {cost} at {limit}), "
                    f"0 beyond; closed forms give {closed_form}")
        else:
            auto = f"0: closed forms give {closed_form}"
        group.add_argument("--draws", type=_draws, default="auto", metavar="B",
                           help="parametric-bootstrap draws: the release plus fresh noise of its own law, the "
                                f"analysis rerun on each (default auto = {auto})")
    group.add_argument("--level", type=_level, default=0.9, metavar="L",
                       help="coverage of every interval printed and written (default 0.9)")
    if target:  # the analyses whose intervals count the error budget (estimators/error_budget.py)
        group.add_argument("--intervals-for", choices=("population", "sample"), default="population",
                           help="what the intervals hold: the population quantity (default; sampling counted, "
                                "normal theory) or the value the analysis gives on these rows without privacy")


def draws(args, n_features, auto, limit=None):
    """The bootstrap draws ``--draws`` asks for; ``auto``: whether ``--draws auto`` takes :data:`AUTO_DRAWS`."""
    value = getattr(args, "draws", 0)
    if value == "auto":
        from ..estimators.uncertainty import fewest_draws  # NumPy with it: not at import

        enough = max(AUTO_DRAWS, fewest_draws(getattr(args, "level", 0.9)))  # a 0.99 level's tails need 199
        value = enough if auto and n_features <= (AUTO_MAX_FEATURES if limit is None else limit) else 0
    return int(value)  # too few for the tails: the estimator warns and withholds (uncertainty.basic_interval)


def spread(args, n_features, auto, limit=None):
    """The estimator's uncertainty options from ``--draws``, ``--level``, ``--intervals-for`` and ``--seed``.

    One place for the single-site commands and the multi-site ones (whose fit options travel to the
    aggregator, where an option a request lacks takes the command line's default).
    """
    return dict(n_draws=draws(args, n_features, auto, limit), level=getattr(args, "level", 0.9),
                rng=getattr(args, "seed", None), target=getattr(args, "intervals_for", "population"))
