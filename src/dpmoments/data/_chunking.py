"""What every reader shares: choosing columns, checking blocks, cutting them to size.

A reader produces ``(start_row, float64 block)`` pairs holding every used
column (features first, then the target); these helpers check the blocks
for non-finite values, re-cut them to the requested chunk size and split
off ``y``. Messages name the source, column and row of a problem, never a
value read from the data.
"""

import numbers
import queue
import threading
import unicodedata

import numpy as np

__all__ = ["resolve_columns", "TypedNumber", "checked", "rebatch", "split", "read_ahead"]


class TypedNumber(int):
    """A whole number typed on the command line where a column is meant: the column of that name where the
    table has one (a header of numbers: pandas' 0, 1, 2 beside an ``id`` column, or years), else the 0-based
    position. ``--columns 0`` above ``id,0,1,2`` took ``id`` while the header shows a column named 0."""

    def __new__(cls, text):
        number = super().__new__(cls, int(text))
        number.text = text
        return number


def resolve_columns(columns, target, names, n_cols, where, param="columns"):
    """Feature positions and target position (or None) from names/positions.

    ``param`` is the argument a refusal names (``columns``, ``exclude``, ``categories``, ``impute``).
    """
    t = None if target is None else _position(target, "target", names, n_cols, where)
    if columns is None:
        feats = [j for j in range(n_cols) if j != t]
    else:
        if isinstance(columns, (str, bytes, numbers.Number)) or not hasattr(columns, "__iter__"):
            raise TypeError(f"'columns' must be a list of column names or positions; got {type(columns).__name__}.")
        feats = [_position(c, param, names, n_cols, where) for c in columns]
        if len(set(feats)) != len(feats):
            raise ValueError(f"'columns' names a column more than once; got {list(columns)!r}.")
        if t in feats:
            raise ValueError(f"'target' {target!r} is also listed in 'columns'; a response cannot be a feature.")
    if not feats:
        raise ValueError(f"No feature columns are left in {where}; got columns={columns!r}, target={target!r}.")
    return feats, t


def _nfc(name):
    return unicodedata.normalize("NFC", name)


def _position(c, param, names, n_cols, where):
    if isinstance(c, TypedNumber) and names is not None and c.text in names:
        c = c.text
    if isinstance(c, str):
        if names is None:
            raise TypeError(f"'{param}' gives a column name ({c!r}) but {where} has no column names; use 0-based positions.")
        if c not in names:  # the same name in another Unicode form (a header in NFD, typed in NFC) is the name
            same = [j for j, name in enumerate(names) if _nfc(name) == _nfc(c)]
            if len(same) == 1:
                return same[0]
            raise ValueError(f"{where} has no column named {c!r} (from '{param}'); its columns are {names}.")
        if names.count(c) > 1:
            raise ValueError(f"{where} has more than one column named {c!r} (from '{param}').")
        return names.index(c)
    if isinstance(c, bool) or not isinstance(c, numbers.Integral):
        raise TypeError(f"'{param}' must hold column names (str) or positions (int); got {type(c).__name__}.")
    if not -n_cols <= c < n_cols and names is not None and str(c) in names:
        return _position(str(c), param, names, n_cols, where)  # a column named 2010 (a year)
    if not -n_cols <= c < n_cols:
        raise ValueError(f"'{param}' positions must be in [0, {n_cols}) for {where}; got {c}.")
    return int(c) % n_cols


def checked(blocks, where, labels, row_text):
    """Raise on the first non-finite value, naming source, column and row (never the value)."""
    total = 0
    for start, block in blocks:
        if not _all_finite(block):
            bad = ~np.isfinite(block)
            r, c = (int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"{where}: missing or non-finite value in column {labels[c]} at {row_text(start + r)}; "
                             "remove it, or impute a public value (impute=; --impute COL=VALUE).")
        total += block.shape[0]
        yield start, block
    if total == 0:
        raise ValueError(f"{where} has no data rows.")


def _all_finite(block):
    """Whether every entry of a float block is finite, from one read of it: its sum is finite only if every entry
    is (a NaN or an inf makes it NaN or inf). A sum that overflows is checked entry by entry."""
    if block.dtype.kind != "f":
        return bool(np.isfinite(block).all())
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.add.reduce(block, axis=None)
    return bool(np.isfinite(total)) or bool(np.isfinite(block).all())


def rebatch(blocks, chunk_size):
    """Re-cut ``(start, block)`` pairs into blocks of exactly ``chunk_size`` rows (the last may be shorter)."""
    pending, count, start = [], 0, 0
    for _, block in blocks:
        pos = 0
        if count:
            take = block[: chunk_size - count]
            pending.append(take)
            count, pos = count + take.shape[0], take.shape[0]
            if count < chunk_size:
                continue
            yield start, np.concatenate(pending)
            start, pending, count = start + chunk_size, [], 0
        while block.shape[0] - pos >= chunk_size:
            yield start, block[pos:pos + chunk_size]
            start, pos = start + chunk_size, pos + chunk_size
        if pos < block.shape[0]:
            pending, count = [block[pos:]], block.shape[0] - pos
    if count:
        yield start, np.concatenate(pending)


def split(blocks, feats, t):
    """``(start, block)`` -> ``X`` or ``(X, y)`` with the selected columns."""
    n_cols = None
    for _, block in blocks:
        n_cols = block.shape[1] if n_cols is None else n_cols
        X = block if feats == list(range(n_cols)) else block[:, feats]
        yield X if t is None else (X, np.ascontiguousarray(block[:, t]))


def read_ahead(items, depth):
    """The items of ``items``, produced by a background thread up to ``depth`` items ahead of the caller.

    pyarrow parses a CSV or Parquet block without holding the GIL, so while the caller works on one
    chunk (clipping, ``X^T X``) the thread parses the next ones on another core. The items and their
    order are those of ``items``; an exception raised in the thread is raised here, in its place.
    When the caller stops early the thread stops after the item it is producing, and ``items`` is
    closed in it. At most ``depth + 2`` items exist at once (the queue's, the thread's, the caller's).
    """
    box, stop = queue.Queue(depth), threading.Event()

    def offer(message):
        while not stop.is_set():
            try:
                box.put(message, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False

    def produce():
        try:
            for item in items:
                if not offer((True, item)):
                    return
            offer((False, None))
        except BaseException as exc:  # every failure is the caller's to raise
            offer((False, exc))
        finally:
            if hasattr(items, "close"):
                items.close()

    worker = threading.Thread(target=produce, name="dpmoments-read-ahead", daemon=True)
    worker.start()
    try:
        while True:
            more, value = box.get()
            if not more:
                if value is not None:
                    raise value
                return
            yield value
    finally:
        stop.set()
        worker.join()
