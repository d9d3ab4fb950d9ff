"""How much of every number is noise: one place for the console lines and the report fields.

Every analysis command fits an estimator that records, from the release
alone, its ``snr_``, ``uncertainty_`` and ``diagnostics_``
(docs/uncertainty.md). :class:`Noise` carries them to the console and to the
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
import math

import numpy as np


__all__ = ["Noise", "json_safe", "add_uncertainty_arguments", "draws", "table", "num", "interval_text",
           "AUTO_DRAWS", "AUTO_MAX_FEATURES", "AUTO_MAX_TENSOR", "WITHHOLDING", "SENTENCES"]

#: ``--draws auto`` where no closed form gives the spread: this many parametric-bootstrap draws ...
AUTO_DRAWS = 50
#: ... up to this many features. Measured (one BLAS thread, load average 7-9 on 2 cores): 50 draws of the
#: graphical lasso or ridge cost 1-1.7 s at d = 200 and about 4 s at d = 300, PCA 0.4-0.7 s and 1.1 s;
#: beyond, ``--draws B`` asks for them.
AUTO_MAX_FEATURES = 200
#: Tensor decompositions redraw a D^3 tensor: 50 draws cost about 2 s at D = 100 (K = 5).
AUTO_MAX_TENSOR = 100

#: The checks whose failure means the output is not an estimate of what it is named: it is withheld.
WITHHOLDING = frozenset({"no-eigenvalue-above-noise", "components-below-noise", "components-unstable",
                         "components-unidentified",
                         "no-edge-above-noise",
                         "selection-within-noise", "whitening-failure", "sigma2-above-spectrum",
                         "weights-outside-unit-interval"})

#: The plain sentence the console prints for each failed check (the numbers are in the warning and the report).
SENTENCES = {
    "clipping-bias": "clipping at the row bound removed a share of some columns' variance that the clipping-excess "
                     "release can see: their intervals count it, and entries marked 'biased' (rows beyond twice the "
                     "bound, whose loss is unseen) have no interval; a public bound that holds the data removes it.",
    "noise-dominates": "the noise is larger than the signal: at this budget and sample size the estimate is "
                       "mostly noise; read every entry with its interval.",
    "variance-below-noise": "some released variances are below their noise level: those columns are noise at this "
                            "budget.",
    "centre-noise": "the private centre's error is larger than a tenth of some released variances: they measure "
                    "that error more than the data (covariance intervals count it, and are wide for it); give a public centre near "
                    "the data (--center), or more epsilon.",
    "no-eigenvalue-above-noise": "no component stands above the noise: the components are noise, so their "
                                 "loadings are not shown.",
    "components-below-noise": "some components are below the noise floor: they are noise, so their loadings are "
                              "not shown.",
    "components-unstable": "some components turn by more than 45 degrees across redrawn releases: more of each "
                           "is noise than signal, so their loadings are not shown.",
    "components-unidentified": "some components have an eigenvalue within the noise (or the private centre's, "
                               "clipping's and sampling's pull) of a neighbour's: their directions are not known, "
                               "so their loadings are not shown.",
    "no-edge-above-noise": "no entry of the released matrix stands out of the noise: the graph is noise, so its "
                           "edges are not shown.",
    "coefficients-within-noise": "the coefficients are smaller than their noise: they are mostly noise; read "
                                 "each with its standard error and interval.",
    "selection-within-noise": "the choice is not distinguishable from noise, so no model is reported as selected.",
    "whitening-failure": "the whitening divides by noise: the decomposition did not find the mixture, so its "
                         "components and weights are not shown.",
    "sigma2-above-spectrum": "sigma2 is larger than the data's smallest variance: the model does not fit these "
                             "data, so its components and weights are not shown.",
    "weights-outside-unit-interval": "the weights are not proportions: the decomposition did not find the "
                                     "mixture, so its components and weights are not shown.",
}


def _finite_or_none(x):
    return float(x) if x is not None and math.isfinite(float(x)) else None


def json_safe(obj):
    """Non-finite floats become ``None``: ``Infinity`` and ``NaN`` are not JSON."""
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, (float, np.floating)):
        return _finite_or_none(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


class Noise:
    """How much of one analysis is noise, for the console and the report.

    Parameters
    ----------
    est : fitted estimator
        Anything with ``snr_``, ``uncertainty_`` and ``diagnostics_``.
    diagnostics : list of dict, optional
        Failed checks made outside the estimator (e.g. by
        ``standardize_release``), added to its own.
    """

    def __init__(self, est, diagnostics=()):
        self.snr = float(est.snr_)
        self.uncertainty = dict(est.uncertainty_)
        self.diagnostics = list(diagnostics) + [dict(d) for d in est.diagnostics_]
        self.withheld = []

    @property
    def codes(self):
        return {d["code"] for d in self.diagnostics}

    def failed(self, *codes):
        """Whether any of the checks ``codes`` failed."""
        return bool(self.codes & set(codes))

    @property
    def withholds(self):
        """Whether some failed check says the output is not an estimate (see the module's rule)."""
        return bool(self.codes & WITHHOLDING)

    def withhold(self, what, file, *codes, fields=()):
        """Record that ``what`` (kept in ``file``) is not presented as a result, because of ``codes``.

        ``fields``: the report's ``analysis`` keys that hold it; :meth:`analysis` writes them as null.
        """
        self.withheld.append({"what": what, "file": file, "checks": sorted(set(codes) & self.codes) or list(codes),
                              "fields": list(fields)})

    def analysis(self, fields):
        """The report's ``analysis``: ``fields`` with what is withheld set to null, and the noise fields.

        A script reading ``analysis["weights"]`` must not get noise as if it were a result: the values
        stay in the files the ``withheld`` entries name, for inspection.
        """
        hidden = {key for item in self.withheld for key in item["fields"]}
        return {**{k: None if k in hidden else v for k, v in fields.items()}, **self.fields()}

    def fields(self):
        """The report's fields (in ``analysis``): the console's names."""
        return json_safe({
            "signal_to_noise": self.snr,
            "signal_to_noise_definition": self.uncertainty.get("signal_to_noise_definition"),
            "noise_dominates": bool(self.diagnostics),
            "diagnostics": self.diagnostics,
            "withheld": self.withheld,
            "uncertainty": self.uncertainty,
        })

    def lines(self):
        """The console's lines: the signal-to-noise, the method, and a plain sentence per failed check."""
        u = self.uncertainty
        definition = u.get("signal_to_noise_definition")
        out = [f"signal_to_noise {num(self.snr)}" + (f" ({definition}; below 1 the noise is larger)"
                                                     if definition else "")]
        how = u.get("method")
        if how:
            level = u.get("level")
            n = u.get("n_draws") or 0
            out.append(f"uncertainty: {how}" + (f" over {n} redrawn releases" if n else "")
                       + (f", {_percent(level)} intervals" if level else "")
                       + f" ({u.get('scope', 'the noise only: not sampling variability')})")
        for code in dict.fromkeys(d["code"] for d in self.diagnostics):
            out.append(f"NOISE [{code}]: {SENTENCES.get(code, 'see the warning above.')}")
        for item in self.withheld:
            out.append(f"withheld: {item['what']} (in {item['file']} for inspection only: noise, not a result)")
        return out

    def print(self):
        for line in self.lines():
            print(line)


def _percent(level):
    return f"{100 * level:g}%"


def num(x, digits=3):
    """A number for the console: ``digits`` significant digits; ``inf``/``nan`` spelt out."""
    if x is None:
        return "n/a"
    x = float(x)
    if not math.isfinite(x):
        return "inf" if x > 0 else "-inf" if x < 0 else "n/a"
    return f"{x:.{digits}g}"


def interval_text(lo, hi, digits=3):
    return f"[{num(lo, digits)}, {num(hi, digits)}]"


def table(header, rows, indent="  "):
    """Rows of strings aligned in columns (the first left-aligned, the rest right-aligned)."""
    widths = [max(len(str(r[k])) for r in [header] + rows) for k in range(len(header))]

    def line(row):
        cells = [str(row[0]).ljust(widths[0])] + [str(c).rjust(w) for c, w in zip(row[1:], widths[1:])]
        return indent + "  ".join(cells).rstrip()

    return [line(header)] + [line(r) for r in rows]


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
    if value != "auto":
        return int(value)
    return AUTO_DRAWS if auto and n_features <= (AUTO_MAX_FEATURES if limit is None else limit) else 0
