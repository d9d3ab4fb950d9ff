"""Which columns of a table are features by default: typed columns, ``exclude``, and the notes saying so.

A table as a statistician has it holds more than numbers: a pandas index
written as an unnamed first column (or stored as Parquet's index), text or
categorical columns (a firm's name, a species), identifiers. With no
``columns`` given, every numeric column but the target is a feature; text
and categorical columns are left out with a one-line note naming them, and
``exclude`` leaves out more by name or position. Naming a text column in
``columns`` is still refused (it has no numbers to release).

A column's type is the file's schema: Parquet's declared types, or for
delimited text the first data row (a column whose first value is not a
number is text). That row decides only which columns are analysed, which
the notes and the report name; a later non-number in a numeric column is
refused as before, naming the line and column, never the value.
"""

from ._chunking import resolve_columns

__all__ = ["select_features"]


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
        gone, _ = resolve_columns(list(exclude), None, names, len(names), where)
        if t in gone:
            raise ValueError(f"'exclude' names the target {names[t]!r}; the response cannot be left out.")
        dropped |= set(gone)
    kept = [j for j in feats if j not in dropped]
    if not kept:
        raise ValueError(f"No numeric feature columns are left in {where} once text columns and 'exclude' are "
                         "left out.")
    return kept, t, notes
