"""What a file's name and a Parquet column's type say: the format the one reader reads it as."""

import os
from pathlib import Path

from ._csv import COMPRESSIONS

__all__ = ["EXTENSIONS", "format_of", "check_parquet_type"]

EXTENSIONS = (".csv", ".tsv", ".parquet", ".pq", ".npy", ".npz")


def format_of(path, where):
    """``(format, compression)`` from a file name's extension (local or remote)."""
    raw = Path(os.fspath(path).rsplit("/", 1)[-1]).suffixes
    suffixes = [s.lower() for s in raw] or [""]
    compression = suffixes[-1] if suffixes[-1] in COMPRESSIONS else None
    ext = (suffixes[-2] if len(suffixes) > 1 else "") if compression else suffixes[-1]
    if ext not in EXTENSIONS or (compression and ext not in (".csv", ".tsv")):
        raise ValueError(f"Cannot read {where}: unknown extension {''.join(raw[-2:])!r}; supported: "
                         f"{', '.join(EXTENSIONS)} (.csv and .tsv also compressed as .gz or .bz2).")
    return {".pq": "parquet"}.get(ext, ext[1:]), compression


def check_parquet_type(name, kind, where):
    """Refuse a Parquet column that does not hold numbers (named, with its type)."""
    import pyarrow as pa

    value = kind.value_type if pa.types.is_dictionary(kind) else kind
    if not (pa.types.is_integer(value) or pa.types.is_floating(value) or pa.types.is_boolean(value)
            or pa.types.is_decimal(value)):
        raise ValueError(f"{where}: column {name!r} has type {kind}; expected numbers.")
