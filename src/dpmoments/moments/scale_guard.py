"""Private column scales that cannot explode: a scale drawn at the bottom of its search range is replaced.

A zero-inflated column (a rare 0/1 indicator, counts that are mostly 0) has
few rows away from its private median; its scale draw, weak on so few rows,
and pulled to the lowest bin by the base measure that serves constant
columns, lands at the bottom of the search range (1e-6 by default). Dividing
by it multiplies the column by a million: it then sets the row bound, every
other column drowns in the noise, and a private location refined in those
units moves by the noise (randhie: relative covariance error 5.6e4).

Such a draw says only that the column's spread is below what the draw can
resolve, so it is replaced by the median of the other column scales (1 if
every one fell at the bottom): the column is then on the scale of the
others, its own variance small against the noise, and the result says so
through its noise checks. This is post-processing of private outputs (the
drawn scales) and costs nothing; a warning names the columns, and a public
range (``ranges=``, ``--ranges col=0:1``) gives such a column its scale for free.

A column with more than half its rows at 0 whose private median was drawn
just above 0 (anywhere in the empty stretch above the zeros ranks as a
median) has a scale that is only the median's distance from 0 -- 3.5e-6 for
randhie's ``lncoins`` at some seeds -- above the bottom bin, so it escaped
the rule above and blew the column up by 3e5 (covariance error up to 3e11).
A scale within the median's resolution of ``|median|`` says that the rows
nearest the median are those at 0 (``about=``); where it is also below the
median of the other scales it is replaced by that median, as above. The
rule only raises scales, reads released values and public grid widths only.

A draw at the **top** of the range says the column's spread is beyond it
(values around 1e12 with the default grid ending at 1e8): no private value
can stand in for it, so the release goes on with the top edge, and a warning
names the columns and what follows -- they set the row bound, and the other
columns' entries are mostly noise, which the noise checks then mark.
"""

import contextlib
import contextvars
import warnings

import numpy as np

from ..exceptions import BoundWarning

__all__ = ["guard_scales", "named_columns", "warn_scale_at_top"]

#: The user's column names for these warnings: the draws are several calls below the release that knows them,
#: and a name matters only to a message, so the release sets it here once (``named_columns``) instead of
#: threading it through every pass. Unset, or of the wrong length: 0-based positions.
_NAMES = contextvars.ContextVar("scale_warning_names", default=None)


@contextlib.contextmanager
def named_columns(names):
    """Within it, the scale warnings name columns by ``names`` (a list of the d feature names, or None)."""
    token = _NAMES.set(None if names is None else [str(n) for n in names])
    try:
        yield
    finally:
        _NAMES.reset(token)


def _shown(columns):
    """``columns`` (0-based positions) as the user knows them: their names, else the positions, said so."""
    names = _NAMES.get()
    columns = [int(j) for j in columns]
    if names is not None and all(j < len(names) for j in columns):
        return ", ".join(names[j] for j in columns)
    return ", ".join(str(j) for j in columns) + " (0-based)"


def guard_scales(s, low, label, stacklevel=4, about=None):
    """``s`` with every draw at the bottom of the range (``s <= low``: its lowest bin) replaced (module docstring);
    ``about=(medians, width, drawn)``: the private medians the scales were drawn about, their grid resolution
    and which columns were drawn, to replace too a drawn scale that is only its median's distance from 0.

    Applied to the drawn scales after the draw (post-processing), so the draw itself keeps its law.
    """
    bottom = s <= low
    to_zero = np.zeros_like(bottom) if about is None else _distance_to_zero(s, *about)
    if not (bottom | to_zero).any():
        return s
    kept = s[~bottom]
    fill = float(np.median(kept)) if kept.size else 1.0
    to_zero &= s < fill  # only raised, and the bottom's fill as before: outputs change only where this acts
    if to_zero.any():
        warnings.warn(f"the private {label} of column(s) {_shown(np.flatnonzero(to_zero))} measured only the "
                      f"distance from their private median to 0 (more than half their rows at 0); replaced by the "
                      f"median of the other scales ({fill:.3g}), so it cannot blow the column up. Give such columns "
                      "a public range (ranges=, --ranges COL=LOW:HIGH) for a scale that is right.", BoundWarning,
                      stacklevel=stacklevel)
        s = np.where(to_zero, fill, s)
    if not bottom.any():
        return s
    fine = bottom & (np.zeros_like(bottom) if about is None else _off_zero(*about))
    for columns, why in ((bottom & ~fine, "a constant or zero-inflated column"), (fine, _FINER)):
        if columns.any():
            warnings.warn(f"the private {label} of column(s) {_shown(np.flatnonzero(columns))} fell at the bottom of "
                          f"the search range: {why}; replaced by the median of the other scales ({fill:.3g}), so it "
                          "cannot blow the column up. Give such columns a public range (ranges=, --ranges "
                          "COL=LOW:HIGH) for a scale that is right.", BoundWarning, stacklevel=stacklevel)
    return np.where(bottom, fill, s)


# Why a scale about a median well off 0 fell at the bottom: the rows within the median's grid bin count as tied
# (scale_floors.median_resolution), and that bin is about 3% of the median wide: N(100, 1) beside U(0, 400) had
# every row tied, its scale replaced by the other column's, and its variance came out 0.00003 against 1 (its
# interval [0, 10] held it). Telling it from a 0/1 column with a rare value would take a finer draw (a new release).
_FINER = ("nearly all their rows lie within one grid bin of their private median (a spread under about 3% of the "
          "column's level, or a rare value far from the rest), finer than the private draw resolves, so their "
          "variance may be lost in the noise")


def _off_zero(medians, width, drawn):
    """The drawn columns whose private median lies more than its grid resolution ``width`` from 0 (not a column
    mostly at 0, whose median is drawn at or just above it)."""
    return np.asarray(drawn, dtype=bool) & (np.abs(np.asarray(medians, dtype=float)) > 2.0 * np.asarray(width))


def _distance_to_zero(s, medians, width, drawn):
    """The drawn scales within their median's grid resolution of ``|median|`` (a median off 0): the rows nearest
    the median are those at 0, so the scale is that distance and says nothing of the column's spread."""
    medians = np.asarray(medians, dtype=float)
    return np.asarray(drawn, dtype=bool) & (medians != 0) & (np.abs(s - np.abs(medians)) <= width)


def warn_scale_at_top(columns, label, search, stacklevel=4):
    """One warning naming the columns (0-based positions; shown by name) whose private scale fell at the top of the
    search range."""
    warnings.warn(f"the private {label} of column(s) {_shown(columns)} fell at the top of the search range "
                  f"[{search.low:g}, {search.high:g}]: their spread is beyond it, so they set the row bound and the "
                  "other columns' entries are mostly noise. Give them a public range (ranges=, --ranges "
                  "COL=LOW:HIGH) or a search range that reaches them (--search-range).", BoundWarning,
                  stacklevel=stacklevel)
