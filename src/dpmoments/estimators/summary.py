"""A fitted estimator's summary: the tables the command line prints, as one object (statsmodels' ``summary()``).

:class:`Summary` is what ``est.summary()`` returns: ``str(summary)`` is the text the
``dpmoments`` command prints for the same fit (the estimate with its noise, how much of it is
noise, the privacy guarantee and any private choices), and ``_repr_html_`` shows it in a
notebook. The building blocks are shared with the command line, which prints them:

* :class:`Noise`, the one rule for how much of every number is noise (docs/uncertainty.md):
  the signal-to-noise, the uncertainty's method, a plain sentence per failed check, and what is
  withheld because it is not an estimate of what it is named;
* :func:`num`, :func:`interval_text` and :func:`table`, how numbers and tables are written;
* :func:`privacy_summary` and :func:`choices_lines`, the guarantee of a release and its private
  choices in the names of the privacy report.

Everything here is post-processing of what the estimator recorded: it reads no data.
"""

import html
import math
from dataclasses import dataclass

from ..privacy.relations import describe_relation

__all__ = ["Summary", "Noise", "num", "interval_text", "table", "json_safe", "privacy_summary", "choices_lines",
           "clipped_fraction", "randomness_text", "feature_labels", "rows_text", "of_data", "release_lines", "SENTENCES",
           "WITHHOLDING", "FLOAT_NOISE", "EXACT_NOISE"]

#: What "not secure" means for unseeded noise: floating-point noise, not a weaker guarantee (read as "not private").
FLOAT_NOISE = ("floating-point noise: private as stated, but its low-order bits are not hardened against "
               "floating-point attacks; --secure draws exact discrete noise instead (covariance, pca, precision)")
EXACT_NOISE = "exact discrete noise on a 2^-k grid from the OS CSPRNG: secure"


@dataclass(frozen=True)
class Summary:
    """What a fitted estimator says about itself, as the command line prints it (``est.summary()``).

    ``str(summary)`` is the text: a title line, then the estimate with its noise (every number
    beside its standard error and interval), how much of it is noise (the signal-to-noise, the
    checks that failed, what is withheld), the privacy guarantee and any private choices. In a
    notebook it displays as that text (``_repr_html_``). Post-processing of the fit: reading it
    costs no privacy.

    Attributes
    ----------
    title : str
        The first line: what was estimated, from how many rows and columns.
    lines : tuple of str
        The rest, line by line.
    """

    title: str
    lines: tuple

    def __str__(self):
        return "\n".join((self.title, *self.lines))

    def __repr__(self):
        return str(self)

    def _repr_html_(self):
        return f'<pre class="dpmoments-summary">{html.escape(str(self))}</pre>'


def feature_labels(est, names=None):
    """The names a summary gives the columns: ``names``, the fit's ``feature_names_in_``, or x0, x1, ..."""
    if names is None:
        names = getattr(est, "feature_names_in_", None)
    if names is None:
        names = [f"x{j}" for j in range(est.release_.n_features)]
    return [str(n) for n in names]


def rows_text(release):
    """``"1000 rows"``, or ``"about 1012 rows (noisy count)"`` under add-remove."""
    return f"{release.n} rows" if release.n_public else f"about {release.n} rows (noisy count)"


def of_data(data_name):
    """`` of <data_name>`` for a summary's title, or nothing when the data are not named."""
    return "" if data_name is None else f" of {data_name}"


def release_lines(release):
    """The privacy line of a release, which columns had public ranges, and one line per private choice."""
    from ..moments.choice_budget import WIDENED_NOTE  # here: the command line's --help loads no moments module
    from ..moments.small_grid import GRID_NOTE
    from ..moments.reused_bound import REUSED_NOTE

    ranged = [f"ranges: {step}" for step in release.postprocessing if step.startswith("public ranges")]
    widened = [f"  {step}" for step in release.postprocessing  # a small table's widened shares, coarser grid, one draw
               if step.startswith((WIDENED_NOTE, GRID_NOTE, REUSED_NOTE))]
    return [privacy_summary(release)] + ranged + \
        (choices_lines(release.parts, release.guarantee) + widened if release.parts else [])

#: The checks whose failure means the output is not an estimate of what it is named: it is withheld.
WITHHOLDING = frozenset({"no-eigenvalue-above-noise", "components-below-noise", "components-unstable",
                         "components-unidentified",
                         "no-edge-above-noise",
                         "selection-within-noise", "whitening-failure", "sigma2-above-spectrum",
                         "weights-outside-unit-interval"})


#: The plain sentence the console prints for each failed check (the numbers are in the warning and the report).
SENTENCES = {
    "clipping-bias": "clipping at the row bound removed more of some columns' variance than their intervals' "
                     "half-widths, as the clipping-excess release shows: their intervals count it, and entries marked "
                     "'biased' (rows beyond twice the bound, whose loss is unseen) have no interval; a public bound "
                     "that holds the data removes it.",
    "noise-dominates": "the noise is larger than the signal: at this budget and sample size the estimate is "
                       "mostly noise; read every entry with its interval.",
    "variance-below-noise": "some released variances are below their noise level: those columns are noise at this "
                            "budget.",
    "centre-noise": "the private centre's error is larger than a tenth of some released variances: they measure "
                    "that error more than the data (covariance and PCA intervals count it, and are wide for it); "
                    "give a public centre near the data (--center), or more epsilon.",
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
    import numpy as np  # here: the command line's parsers import this module, and '--help' imports no NumPy

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
        undefined = math.isnan(self.snr)  # e.g. one column: no off-diagonal entry to compare with its noise
        out = [f"signal_to_noise {num(self.snr)}" + (f" ({definition}; below 1 the noise is larger)"
                                                     if definition and not undefined else
                                                     f" (no value here: {definition})" if definition else "")]
        how = u.get("method")
        if how:
            level = u.get("level")
            n = u.get("n_draws") or 0
            few = _too_few(n, level)
            out.append(f"uncertainty: {how}" + (f" over {n} redrawn releases" if n and not few else "")
                       + (f", {_percent(level)} intervals" if level else "")
                       + f" ({u.get('scope', 'the noise only: not sampling variability')})"
                       + few)
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


def randomness_text(randomness, secure):
    """The console's: unseeded float noise says what "not secure" means, so that no one reads it as "not private"."""
    if secure:
        return f"randomness {randomness} (exact discrete noise: secure)"
    if randomness in ("os-entropy", "caller-generator"):
        return f"randomness {randomness} ({FLOAT_NOISE})"
    return f"randomness {randomness}" + ("" if randomness == "none" else " (NOT secure)")


def privacy_summary(release):
    """One line describing the guarantee, for the terminal, in the report's names (``privacy`` block)."""
    rel = release
    sens = "" if rel.sensitivity is None else \
        f", sensitivity {rel.sensitivity:.3g} ({rel.sensitivity_norm}{'' if rel.n_public else ', of the sum'})"
    cal = f", calibration {rel.calibration}" if rel.calibration else ""
    scale = f"noise_scale {rel.noise_scale:.3g}" + ("" if rel.n_public else " (per noisy n)")
    count = "" if rel.n_public or rel.count_noise_scale is None else \
        f"; n {rel.n} is a noisy count (noise scale {rel.count_noise_scale:.3g}, {rel.count_share:g} of the budget)"
    return (f"privacy: guarantee {rel.guarantee}, neighbouring_relation {describe_relation(rel.neighbours)}; "
            f"mechanism {rel.mechanism}, {scale}{sens}{cal}{count}; row_norm {rel.row_norm:g} (rows clipped to it); "
            f"{randomness_text(rel.randomness, rel.secure)}")


#: Released noisy counts: the console shows them floored at 0 and says they are noisy.
_NOISY_COUNTS = frozenset({"rows_beyond_outer"})


def _released_text(released):
    shown = {k: v for k, v in released.items()
             if k not in ("at_range_end", "clipped_fraction", "clipped_fraction_noise_sd")}
    out = []
    for k, v in shown.items():
        if k in _NOISY_COUNTS and isinstance(v, float):  # the report keeps the release; a count below 0 is noise
            out.append(f"{k} {max(v, 0.0):.4g} (noisy{', floored at 0' if v < 0 else ''})")
        elif isinstance(v, float):
            out.append(f"{k} {v:.4g}")
        elif isinstance(v, (int, str, bool)):
            out.append(f"{k} {v}")
    return ", ".join(out)


# -- what the run shows ----------------------------------------------------------------------------------
def clipped_fraction(parts):
    for p in parts:
        if "clipped_fraction" in p.released:
            return p.released["clipped_fraction"], p.released["clipped_fraction_noise_sd"]
    return None


def choices_lines(parts, total):
    """Console lines: one per share (what it chose, its share, its guarantee), then the total and the diagnostic."""
    from ..moments.auto_release import CLIPPED_WARNING, clipping_bias  # here: the command line's --help loads neither

    lines = ["private choices (each paid from its share of the budget; the drawn values are private outputs):"]
    for p in parts:
        share = "" if p.share is None else f"share {p.share:.3g}, "
        what = _released_text(p.released)
        lines.append(f"  {p.label}: {share}guarantee {p.guarantee}" + (f"; {what}" if what else ""))
    lines.append(f"  composed: {total}")
    clipped = clipped_fraction(parts)
    if clipped is not None:
        at_end = any(p.released.get("at_range_end") for p in parts)
        warn = f" -- MORE THAN 10%: {clipping_bias(at_end)}" if clipped[0] - 2 * clipped[1] > CLIPPED_WARNING else ""
        shown = 100 * min(max(clipped[0], 0.0), 1.0)  # a noisy share: "-0.0%" or "103%" is the noise's, not a share
        lines.append(f"  clipped rows (noisy): {shown:.1f}% (noise sd {100 * clipped[1]:.1f}%){warn}")
    return lines


def _too_few(n_draws, level):
    """What the console's uncertainty line adds where the draws cannot reach the level's tails (principle 3)."""
    from .uncertainty import fewest_draws  # NumPy with it: not at import (the command line's parsers read this)

    need = fewest_draws(level) if level else 0
    return (f"; {n_draws} draws are too few for a {_percent(level)} interval's tails ({need} or more): intervals "
            "that only draws give are withheld, closed forms kept" if 0 < n_draws < need else "")
