"""The column names a plan may carry: public schema that lets every site select and check its columns.

Column names say what the columns are, not what any row holds, so they may travel in the public
plan. With them, a deployed site selects its columns by name, in the plan's order; without them it
can check only their number, and a file whose columns are in another order would join with its
columns mixed up.
"""

__all__ = ["checked_columns", "takes_response"]


def takes_response(rows, analysis):
    """Whether a site gives a response column beside its features (model selection, IRLS)."""
    return rows == "xy" or analysis == "regress"


def checked_columns(columns, response_column, *, rows, analysis, n_features):
    """The plan's column names checked against its width: ``(columns, response_column)``, or ``(None, None)``."""
    if columns is None and response_column is None:
        return None, None
    if columns is None:
        raise ValueError("'response_column' needs 'columns' (the feature columns' names) beside it.")
    if rows == "stm":
        raise ValueError("'columns' name the columns of a table; the single-topic model's rows are word ids.")
    names, width = tuple(columns), int(n_features) - (rows == "xy")
    if not all(isinstance(c, str) and c for c in names) or len(set(names)) != len(names):
        raise ValueError("'columns' must be distinct, non-empty column names.")
    if len(names) != width:
        raise ValueError(f"'columns' names {len(names)} column(s); the plan's sites give {width}.")
    takes = takes_response(rows, analysis)
    if takes != (response_column is not None):
        raise ValueError(f"'response_column' is {'required' if takes else 'not taken'}: analysis {analysis!r} "
                         f"{'takes a' if takes else 'takes no'} response column.")
    if response_column is not None and (not isinstance(response_column, str) or not response_column
                                        or response_column in names):
        raise ValueError("'response_column' must be a non-empty name, not one of 'columns'.")
    return names, response_column
