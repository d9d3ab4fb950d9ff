"""Which columns of a table are features by default: typed columns, ``exclude``, and the notes saying so.

A table as a statistician has it holds more than numbers: a pandas index
written as an unnamed first column (or stored as Parquet's index), text or
categorical columns (a firm's name, a species), identifiers. With no
``columns`` given, every numeric column but the target is a feature; text
and categorical columns are left out with a one-line note naming them, and
``exclude`` leaves out more by name or position. Naming a text column in
``columns`` is still refused (it has no numbers to release).

**Categories** (``categories={"firm": ["GM", "IBM", ...]}``, ``--categories
firm=GM,IBM``) are public: declared by the user, never read from the data. A
declared column is read as text and replaced by one 0/1 column per level,
named ``firm=GM``, ...; a value that is none of the levels (or missing) sets
them all to 0 (its own, unlisted level). **Sensitivity**: a row's indicators
hold at most one 1, so replacing a row changes at most two of them, each by 1
(adding or removing a row, at most one): in the L2 norm of the row they add at
most 1 (the row's own indicator), and every bound that holds for the row holds
with them as 0/1 columns with the range 0 to 1 they are given.

**Missing values** are refused by default (naming the column and row). The
alternative, ``impute={"income": 0}`` (``--impute income=0``), replaces a
missing value by a PUBLIC value stated before the data are read, and adds a
0/1 column ``income:missing`` that is 1 where the value was missing. Both are
a fixed map of each row on its own, so every guarantee holds as for any table
(same relation, same sensitivity of the mapped rows): what changes is what is
estimated -- the moments of the completed table, in which the indicator
carries the missingness (its mean is the missing fraction, released with
noise like every other entry). The indicator's range is 0 to 1.

A column's type is the file's schema: Parquet's declared types, or for
delimited text the first data row (a column whose first value is not a
number is text; one whose first value is True or False is read as 1/0, as
Parquet's bool columns are). That row decides only which columns are analysed, which
the notes and the report name; a later non-number in a numeric column is
refused as before, naming the line and column, never the value.
"""

import numpy as np

from ._chunking import resolve_columns

__all__ = ["select_features", "one_hot_block", "one_hot_names", "check_categories", "check_impute", "impute_block",
           "check_unique_names", "MISSING_SUFFIX"]

MISSING_SUFFIX = ":missing"  # the name of an imputed column's indicator: "income:missing"


def select_features(columns, target, names, where, *, text_columns=(), exclude=None):
    """``(feature positions, target position or None, notes)``: the default selection leaves text columns out."""
    feats, t = resolve_columns(columns, target, names, len(names), where)
    if columns is not None:
        if exclude:
            raise ValueError("give 'columns' or 'exclude', not both: 'exclude' leaves columns out of the default "
                             "selection (every numeric column but the target).")
        return feats, t, []
    notes = []
    text = [j for j in feats if j in set(text_columns)]
    if text:
        notes.append(f"{where}: left out text/categorical column(s) {', '.join(names[j] for j in text)} "
                     "(name them in columns to be refused, or declare their categories to one-hot encode them)")
    dropped = set(text)
    if exclude:
        gone, _ = resolve_columns(list(exclude), None, names, len(names), where, "exclude")
        if t in gone:
            raise ValueError(f"'exclude' names the target {names[t]!r}; the response cannot be left out.")
        dropped |= set(gone)
    kept = [j for j in feats if j not in dropped]
    if not kept:
        raise ValueError(f"No numeric feature columns are left in {where} once text columns and 'exclude' are "
                         "left out.")
    return kept, t, notes


def check_categories(categories, names, where):
    """``{position: levels}`` from ``{name or position: [levels]}``: levels distinct, non-empty text."""
    if not categories:
        return {}
    out = {}
    for key, levels in categories.items():
        j = resolve_columns([key], None, names, len(names), where, "categories")[0][0]
        levels = [str(v) for v in levels] if not isinstance(levels, str) else [levels]
        numbers = _as_numbers(levels) or levels  # numeric levels are matched by value: "1" and "1.0" are one
        if not levels or len(set(numbers)) != len(levels) or any(v == "" for v in levels):
            raise ValueError(f"'categories' of column {names[j]!r} must be distinct, non-empty levels; got {levels!r}.")
        out[j] = levels
    return out


def check_unique_names(names, where):
    """``names`` (the features once one-hot encoded and imputed), refused where two are one name: a column
    ``firm=GM`` beside the level ``GM`` of ``firm``, or ``income:missing`` beside ``income``'s indicator, would
    be two columns that results, reports and ``ranges`` could not tell apart."""
    seen = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{where}: two feature columns are named {name!r} once the declared categories and "
                             "imputed columns are added; rename the column or leave it out (exclude=, --exclude).")
        seen.add(name)
    return names


def one_hot_names(name, levels):
    return [f"{name}={level}" for level in levels]


def one_hot_block(batch, keys, text, numeric_rows):
    """One float64 block of ``keys`` in order, each key in ``text`` ({key: levels}) as its 0/1 indicators.

    ``numeric_rows(batch, keys)`` turns the numeric columns into a block (the reader's own fast path).
    """
    numeric = [k for k in keys if k not in text]
    dense = numeric_rows(batch.select(numeric), numeric) if numeric else np.empty((batch.num_rows, 0))
    parts, at = [], 0
    for key in keys:
        if key in text:
            parts.append(_indicators(batch.column(key), text[key]))
        else:
            parts.append(dense[:, at:at + 1])
            at += 1
    return np.ascontiguousarray(np.hstack(parts)) if parts else dense


_NUMBER = r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$"


def _indicators(column, levels):
    """(n, k) 0/1: row i has a 1 in column l when its value is ``levels[l]``; none else.

    Levels that are all numbers (a numeric code: ``region=1,2,3``) are matched by value, so that a
    CSV's ``1.0``, a Parquet or DataFrame column's float 1.0 and its int 1 are one level (a cell that
    is not a number is none of them); other levels are matched as text."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    numbers = _as_numbers(levels)
    text = pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
    if numbers is not None:
        if text:  # not a number: null, no level (a strict cast would refuse the whole block)
            column = pc.if_else(pc.match_substring_regex(column, _NUMBER), column, pa.scalar(None, column.type))
        column, values = column.cast(pa.float64()), pa.array(numbers, type=pa.float64())
    elif not text:
        column, values = column.cast(pa.string()), pa.array(levels, type=pa.string())
    else:
        values = pa.array(levels, type=pa.string())
    index = pc.fill_null(pc.index_in(column, value_set=values), -1)
    codes = pa.RecordBatch.from_arrays([index.cast(pa.float64())], names=["i"]).to_tensor().to_numpy()[:, 0]
    return (codes[:, None] == np.arange(len(levels))).astype(np.float64)


def _as_numbers(levels):
    """The levels as floats when every one is a finite number, else None (they are then text)."""
    try:
        numbers = [float(v) for v in levels]
    except ValueError:
        return None
    return numbers if all(np.isfinite(numbers)) else None


def check_impute(impute, names, feats, where):
    """``{position: value}`` from ``{name or position: value}``: finite public values of selected features."""
    if not impute:
        return {}
    out = {}
    for key, value in impute.items():
        j = resolve_columns([key], None, names, len(names), where, "impute")[0][0]
        if j in out:  # a name and a position of one column: which value holds is not ours to guess
            raise ValueError(f"'impute' gives column {names[j]!r} twice.")
        if j not in feats:
            raise ValueError(f"{where}: 'impute' names column {names[j]!r}, which is not a selected feature.")
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"'impute' of column {names[j]!r} must be a number; got {value!r}.") from None
        if not np.isfinite(value):
            raise ValueError(f"'impute' of column {names[j]!r} must be a finite number; got {value!r}.")
        out[j] = value
    return out


def impute_block(block, columns):
    """``block`` with each column in ``columns`` (block positions) completed by its value, and its indicator after it.

    ``columns``: ``{block position: value}``. Infinite values are left for the reader's refusal.
    """
    parts, last = [], 0
    for at in sorted(columns):
        missing = np.isnan(block[:, at])
        filled = np.where(missing, columns[at], block[:, at])
        parts += [block[:, last:at], filled[:, None], missing[:, None].astype(np.float64)]
        last = at + 1
    parts.append(block[:, last:])
    return np.ascontiguousarray(np.hstack(parts))
