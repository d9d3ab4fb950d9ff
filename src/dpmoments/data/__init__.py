"""Reading the user's data: files, arrays and dask collections into chunks of float64 rows.

This floor knows nothing of privacy or noise: it turns a table into rows, in
memory that does not grow with the file, and says what it cannot read in one
line naming the file (never a value). :func:`as_source` asks, once, what an
input is (an array, a DataFrame, a sparse matrix, a dask collection, a path,
a stream of chunks) and answers in one :class:`Source` that every release
and estimator takes. :func:`open_table` is the one file
reader (CSV/TSV, compressed or not, Parquet, ``.npy``, sparse ``.npz``);
:func:`iter_chunks` puts arrays, ``(X, y)`` pairs, paths, dask arrays and
iterables of chunks behind the same stream; :mod:`dpmoments.data.dask_files`
opens Zarr, ``.npy`` and Parquet as dask collections without reading them.
"""

from ._chunking import TypedNumber
from .file_sets import is_file_set
from .readers import iter_chunks
from .spill import SpilledPasses
from .source import KINDS, Source, as_source, is_dask_collection
from .tables import EXTENSIONS, Table, open_table, same_file_version

__all__ = ["as_source", "Source", "KINDS", "is_dask_collection", "iter_chunks", "SpilledPasses",
           "open_table", "Table", "EXTENSIONS", "same_file_version", "is_file_set", "TypedNumber"]
