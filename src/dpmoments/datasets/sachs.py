"""The Sachs et al. (2005) flow-cytometry data and consensus network, bundled.

The files under ``data/`` were copied once from the cdt 0.6.0 wheel (see
``data/README``) and are read offline with numpy and the standard library;
dpmoments does not depend on cdt.
"""

import csv
import gzip
import io
from dataclasses import dataclass
from importlib import resources

import numpy as np

__all__ = ["SachsData", "load_sachs"]

_DATA_FILE = "sachs.csv.gz"
_EDGES_FILE = "sachs_edges.csv"

DESCRIPTION = """\
Sachs et al. (2005) cell-signalling data: 7466 single cells x 11 phosphorylated
proteins and phospholipids, measured by multiparameter flow cytometry and pooled
over the stimulation conditions (the table used by Friedman, Hastie & Tibshirani
2008 for the graphical lasso), with the 18 directed edges of the consensus
signalling network.

Source: K. Sachs, O. Perez, D. Pe'er, D. A. Lauffenburger and G. P. Nolan,
"Causal protein-signaling networks derived from multiparameter single-cell
data", Science 308(5721):523-529, 2005. doi:10.1126/science.1105809.
Files taken unchanged from cdt/data/resources/cyto_full_data.csv and
cyto_full_target.csv in the wheel cdt-0.6.0 (Causal Discovery Toolbox; its
LICENSE file is MIT, (c) 2018 Diviyan Kalainathan). Bundled inside dpmoments
and loaded offline; see dpmoments/datasets/data/README.
"""


@dataclass(frozen=True)
class SachsData:
    """The Sachs et al. (2005) data set, as returned by :func:`load_sachs`.

    Attributes
    ----------
    data : ndarray of shape (7466, 11), float64
        Measurements (natural log of the raw intensities when ``log=True``).
    feature_names : tuple of str, length 11
        ``praf, pmek, plcg, PIP2, PIP3, p44/42, pakts473, PKA, PKC, P38, pjnk``.
    edges : tuple of (str, str)
        The 18 directed (cause, effect) edges of the consensus network.
    adjacency : ndarray of shape (11, 11), bool
        The undirected consensus graph: symmetric, ``False`` on the diagonal,
        ordered as ``feature_names``.
    description : str
        Source, citation and licence.
    log : bool
        Whether ``data`` holds logged intensities.
    """

    data: np.ndarray
    feature_names: tuple
    edges: tuple
    adjacency: np.ndarray
    description: str
    log: bool


def _read_bytes(name):
    return resources.files(__package__).joinpath("data", name).read_bytes()


def _read_measurements():
    text = gzip.decompress(_read_bytes(_DATA_FILE)).decode("ascii")
    header, _, body = text.partition("\n")
    names = tuple(header.strip().split(","))
    data = np.loadtxt(io.StringIO(body), delimiter=",", dtype=np.float64, ndmin=2)
    return names, data


def _read_edges():
    rows = list(csv.reader(io.StringIO(_read_bytes(_EDGES_FILE).decode("ascii"))))
    return tuple((cause, effect) for cause, effect in rows[1:])


def _adjacency(names, edges):
    index = {name: i for i, name in enumerate(names)}
    A = np.zeros((len(names), len(names)), dtype=bool)
    for cause, effect in edges:
        A[index[cause], index[effect]] = A[index[effect], index[cause]] = True
    return A


def load_sachs(log=True):
    """Load the Sachs et al. (2005) protein-signalling data and consensus network.

    Parameters
    ----------
    log : bool, default=True
        Apply ``np.log`` to the raw intensities (which are heavy-tailed, with
        minimum 1 and maximum 9058), as is usual before Gaussian modelling.

    Returns
    -------
    SachsData
        A frozen result with ``data`` (7466, 11), ``feature_names``,
        ``edges`` (18 directed pairs), ``adjacency`` (11 x 11 symmetric bool,
        18 undirected edges), ``description`` and ``log``. Every call returns
        fresh arrays.

    Privacy
    -------
    This loads a public benchmark data set; nothing is released. Estimators
    applied to it still need a public ``row_norm`` (e.g. from the measuring
    range of the cytometer), never one computed from ``data``.

    Examples
    --------
    >>> sachs = load_sachs()
    >>> sachs.data.shape, len(sachs.edges), int(sachs.adjacency.sum()) // 2
    ((7466, 11), 18, 18)
    >>> sachs.feature_names[:3]
    ('praf', 'pmek', 'plcg')
    """
    if not isinstance(log, (bool, np.bool_)):
        raise TypeError(f"'log' must be a bool; got {type(log).__name__} {log!r}.")
    names, data = _read_measurements()
    edges = _read_edges()
    if log:
        data = np.log(data)
    return SachsData(
        data=data,
        feature_names=names,
        edges=edges,
        adjacency=_adjacency(names, edges),
        description=DESCRIPTION,
        log=bool(log),
    )
