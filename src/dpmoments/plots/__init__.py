"""Figures (layer 4): each function takes arrays and returns a matplotlib ``Axes``.

Nothing here touches data or spends privacy: the functions draw matrices,
curves and spectra that were already computed (and, for anything shown in
public, already released). They use matplotlib's non-interactive Agg backend
unless a backend was chosen before, and are never imported by the package
root (``import dpmoments`` does not import matplotlib). New figures are made
as ``matplotlib.figure.Figure`` objects with constrained layout, not through
``pyplot``: they render with the Agg canvas (PNG, SVG) whatever the
interactive backend, leave no global state behind, and are freed when
dropped. Pass ``ax=`` to draw into a figure of your own (e.g. in a notebook).

* :func:`plot_network`: signed edge weights (partial correlations) as a graph
  on a circle (no networkx), optionally against a reference graph; a heat map
  beyond :data:`NETWORK_MAX_NODES` nodes;
* :func:`plot_roc`: ROC curves of support recovery;
* :func:`plot_spectrum`: eigenvalues against a noise floor;
* :func:`plot_privacy_utility`: error (or any utility) against epsilon;
* :func:`plot_matrix`: a heat map of a square matrix.

**Conventions**, the same in every figure:

* **Colour.** Lines and markers use the Okabe & Ito (2008) palette
  (:data:`OKABE_ITO`), chosen to stay distinct under the common colour-vision
  deficiencies; signed matrices use ColorBrewer's diverging ``RdBu``, rated
  safe for colour-blind readers. Positive is blue and negative is red
  (vermillion) everywhere.
* **Sign and strength of an edge.** Edges are coloured by the sign of their
  weight (for a precision matrix pass the partial correlations
  ``-theta_ij / sqrt(theta_ii theta_jj)``, whose sign is the opposite of the
  precision entry's); the line width grows with ``|weight|`` (absolute, so
  two panels compare). The legend states both.
* **Against a reference graph** (``truth=``): solid = also in the reference,
  dashed = not in it, dotted grey = in the reference only (missed).
* **Size.** Up to 12 nodes the labels are horizontal; up to
  :data:`NETWORK_MAX_NODES` (60) they run radially outside the circle in a
  font that shrinks with the number of nodes, so they do not overlap (tested
  from 3 to 60 nodes; names longer than 20 characters are shortened in the
  middle). Beyond, the network is drawn as a heat map of the weights
  (the upper triangle the estimate, the lower the reference). A heat map of
  more than :data:`MATRIX_MAX_CELLS` (500) rows shows block aggregates (the
  mean of each block for a matrix, the signed entry of largest magnitude for
  edge weights, so that an isolated edge survives), and is labelled by
  variable index instead of by name beyond :data:`LABEL_MAX` (60) rows. This
  keeps a figure of a 5000-variable matrix readable and quick to write. The
  colour scale of a matrix spans its off-diagonal entries (a larger diagonal
  saturates, and the colour bar says so).
* **Text.** Long titles and axis labels are wrapped to the width of their
  axes; nothing is cut off at the written size. The caller names what is
  shown (an uncentred second moment is not a "covariance"); the defaults are
  neutral.

>>> import numpy as np
>>> from dpmoments.plots import plot_network
>>> partial = np.array([[1.0, 0.4, -0.2], [0.4, 1.0, 0.0], [-0.2, 0.0, 1.0]])
>>> ax = plot_network(partial, labels=["a", "b", "c"])
>>> ax.get_title()
'2 edges'
>>> [t.get_text() for t in ax.get_legend().get_texts()]
['positive', 'negative']
"""

from ._curves import plot_privacy_utility, plot_roc, plot_spectrum
from ._matrix import plot_matrix
from ._network import plot_network
from ._style import (DIVERGING, GREY, LABEL_MAX, MATRIX_MAX_CELLS, NEGATIVE, NETWORK_MAX_NODES, OKABE_ITO, POSITIVE,
                     new_axes, new_figure)

__all__ = ["plot_network", "plot_roc", "plot_spectrum", "plot_privacy_utility", "plot_matrix", "new_axes",
           "new_figure", "OKABE_ITO", "POSITIVE", "NEGATIVE", "GREY", "DIVERGING", "NETWORK_MAX_NODES",
           "MATRIX_MAX_CELLS", "LABEL_MAX"]
