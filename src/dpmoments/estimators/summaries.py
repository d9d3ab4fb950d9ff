"""Each analysis's summary: the tables ``est.summary()`` returns and the command line prints.

Per analysis, the estimate with its noise (covariance and correlation entries with their standard
errors and intervals; the strongest edges with their inclusion frequency or standard error; the
decompositions' eigenvalues, loadings, means and topics, in :mod:`.component_summaries`), the noise
rule's lines (:class:`.summary.Noise`), the privacy line and the private choices. The command line's
presenters (``dpmoments.cli.present``) print the same functions' lines, so a summary in a notebook
and the console agree line for line.
"""

import numpy as np

# The decompositions' summaries and the title's words are re-exported: every analysis's table is read from here.
from .component_summaries import (CONSOLE_COORDS, component_lines, noise_floor, pca_noise, pca_summary, shown,
                                  tensor_lines, tensor_noise, tensor_summary)
from .graph import RIDGE_THRESHOLD, edge_matrix, partial_correlations
from .summary import Noise, Summary, feature_labels, interval_text, num, of_data, release_lines, rows_text, table

__all__ = ["covariance_summary", "pca_summary", "precision_summary", "console_lines", "component_lines",
           "edge_lines", "edge_table", "pca_noise", "precision_noise", "statistic", "noise_floor",
           "rows_text", "correlation_summary", "correlation_lines", "tensor_summary", "tensor_lines", "tensor_noise"]


#: The console lists at most this many variances and off-diagonal entries (the files hold them all).
CONSOLE_ROWS = 12


CONSOLE_PAIRS = 5


def statistic(release):
    """What the released matrix is, in words (the report's ``analysis.statistic``)."""
    if release.center is None:
        return "uncentred second moment"
    return "covariance about a private mean" if _private_center(release) else "covariance about a public centre"


def _private_center(release):
    return any(p.label == "mean" for p in release.parts)


def console_lines(est, names, rows=CONSOLE_ROWS, pairs=CONSOLE_PAIRS):
    """The variances, and the off-diagonal entries largest against their noise, each with se and interval.

    A note marks an entry whose interval holds 0 (the noise could have made it) and an estimate the
    positive semi-definite projection moved outside the released entry's interval, so that no
    number is read as signal when the release cannot tell it from noise. The off-diagonal entries
    shown are the largest of d(d-1)/2 against their noise, so they are also marked 'noise' when
    below the level the largest of that many pure-noise entries reaches 5% of the time (at
    d = 200 the top five of pure noise stand 4-5 se from 0, and their intervals exclude 0).
    """
    C, se, (lo, hi) = est.covariance_, est.covariance_se_, est.covariance_interval_
    header = ["column", "estimate", "se", f"{100 * est.level:g}% interval", "note"]
    top = _largest_noise_in_se(est, C.shape[0])

    biased = getattr(est, "covariance_biased_", np.zeros(C.shape, bool))
    # where the PSD projection shows; read an entry at a time (a LazyEntries: unpacked, two d x d arrays)
    noise = getattr(est, "covariance_noise_interval_", None)
    clip = getattr(est, "uncertainty_", {}).get("error_budget", {}).get("clipping")
    clipped = set(clip.get("clipped_columns", ())) if isinstance(clip, dict) else set()

    def row(name, i, j, floor=0.0):
        withheld = biased[i, j] or np.isnan(lo[i, j]) or np.isnan(hi[i, j])
        note = "biased" if withheld else _note(C, lo, hi, i, j, floor * se[i, j], noise)
        if not withheld and {i, j} & clipped:
            note = ", ".join(filter(None, [note, "clipped"]))
        return [name, num(C[i, j], 4), num(se[i, j]), "withheld" if withheld else interval_text(lo[i, j], hi[i, j]),
                note]

    d = C.shape[0]
    shown = range(min(d, rows))
    variances = [row(names[i], i, i) for i in shown]
    out = ["variances (the diagonal):"] + table(header, variances)
    if d > rows:
        out.append(f"  ... {d - rows} more in covariance.csv / covariance.npy")
    noted = [r for r in variances if r[-1]]
    if d > 1:
        pairs_shown = [row(f"{names[i]} x {names[j]}", i, j, top) for i, j in _largest_against_noise(C, se, pairs)]
        out.append("largest off-diagonal entries against their noise (|estimate| / se; all in covariance.csv):")
        out += table(["pair"] + header[1:], pairs_shown)
        noted += [r for r in pairs_shown if r[-1]]
    if noted:
        out.append("  note: 'noise' = its interval holds 0, or (off-diagonal) it is below what the largest of the "
                   f"{d * (d - 1) // 2} noise entries reaches 5% of the time ({num(top)} se), so the noise alone could "
                   "have made it; 'projected' = the PSD projection moved the estimate outside the released entry's "
                   "interval" + ("; 'clipped' = clipping removed a measurable part of the column's variance: the "
                                 "interval counts it, the estimate does not" if clipped else "")
                   + ("; 'biased' = clipping removed more than can be measured (rows beyond twice the row bound, seen "
                      "or not ruled out by their noisy count): no interval is given" if biased.any() else ""))
    return out


def _largest_against_noise(C, se, pairs, rows=256):
    """The ``pairs`` entries ``(i, j)``, ``i < j``, largest in ``|C_ij| / se_ij`` (``se`` 0 read as 1), largest first.

    A block of rows at a time, each keeping its own largest few: at d = 10 000 the whole upper triangle's
    ratios, indices and sort order were four d x d arrays.
    """
    d, found = C.shape[0], []
    for lo in range(0, d - 1, rows):
        block = slice(lo, min(lo + rows, d))
        s = se[block]
        ratio = np.abs(C[block]) / np.where(s > 0, s, 1.0)
        ratio[np.tril_indices(ratio.shape[0], lo, ratio.shape[1])] = -np.inf  # the diagonal and below it: not shown
        flat = ratio.ravel()
        keep = np.argpartition(-flat, pairs)[:pairs + 1] if flat.size > pairs + 1 else np.arange(flat.size)
        found += [(-flat[k], lo + k // d, k % d) for k in keep]
    return [(int(i), int(j)) for _, i, j in sorted(found)[:pairs] if i < j]


def _largest_noise_in_se(est, d):
    """The largest of the d(d-1)/2 off-diagonal noise entries' magnitudes (95%), in standard errors."""
    from .diagnostics import largest_noise
    from .uncertainty import noise_law

    law = noise_law(est.release_)
    return largest_noise(law, d * (d - 1) // 2) / law.sd if law.sd > 0 else 0.0


def _note(C, lo, hi, i, j, floor=0.0, noise=None):
    notes = []
    if lo[i, j] <= 0 <= hi[i, j] or abs(lo[i, j] + hi[i, j]) / 2 < floor:  # the released entry is the midpoint
        notes.append("noise")
    nlo, nhi = (lo[i, j], hi[i, j]) if noise is None else (noise[0, i, j], noise[1, i, j])
    if not nlo <= C[i, j] <= nhi:  # outside the interval of the released entry's noise
        notes.append("projected")
    return ", ".join(notes)


def statistic_words(release):
    """(what, about): without a centre the matrix is the uncentred second moment, not a covariance."""
    if release.center is None:
        return "second moment", "about the origin (uncentred)"
    return "covariance", "about the private mean" if _private_center(release) else "about the centre"


#: The console lists at most this many edges (edges.csv holds them all).
CONSOLE_EDGES = 12


def precision_noise(est, floored=()):
    """The noise of a precision fit: a graph with no entry above the noise floor is withheld."""
    noise = Noise(est, floored)
    if noise.failed("no-edge-above-noise"):
        noise.withhold("the edges (no entry of the released matrix stands out of the noise)", "edges.csv",
                       "no-edge-above-noise", fields=("n_edges",))
    return noise


def _edge_columns(est):
    """The noise columns of the edge table: frequency (glasso draws), se and interval of the entry (ridge draws)."""
    freq = getattr(est, "edge_frequency_", None)
    se = getattr(est, "precision_se_", None)
    level = f"{100 * est.level:g}% interval"
    pc = getattr(est, "partial_correlation_interval_", None)

    def pc_text(a, b):
        return "withheld" if np.isnan(pc[0, a, b]) else interval_text(pc[0, a, b], pc[1, a, b])

    if freq is not None:
        if pc is None:
            return ["frequency"], lambda a, b: [f"{freq[a, b]:.2f}"]
        return ["frequency", level], lambda a, b: [f"{freq[a, b]:.2f}", pc_text(a, b)]
    if se is not None and est.precision_interval_ is not None:
        lo, hi = est.precision_interval_
        return (["precision", "se", level],
                lambda a, b: [num(est.precision_[a, b], 4), num(se[a, b]),
                              "withheld" if np.isnan(lo[a, b]) else interval_text(lo[a, b], hi[a, b])])
    return [], lambda a, b: []


def edge_table(est, E, names, truth):
    """(header, rows) of edges.csv: each edge with its partial correlation and its noise columns."""
    P = partial_correlations(est.precision_)
    extra, cells = _edge_columns(est)
    i, j = np.nonzero(np.triu(E, 1))
    pairs = sorted(zip(i.tolist(), j.tolist()), key=lambda ij: -abs(P[ij]))
    rows = [[names[a], names[b], f"{P[a, b]:.4f}", *cells(a, b), "" if truth is None else bool(truth[a, b])]
            for a, b in pairs]
    return ["feature_a", "feature_b", "partial_correlation", *extra, "in_truth"], rows


def edge_lines(est, E, names, top=CONSOLE_EDGES):
    """The strongest edges with their noise (inclusion frequency or standard error), for the console."""
    header, rows = edge_table(est, E, names, None)
    if not rows:
        return []
    freq = getattr(est, "edge_frequency_", None)
    out = []
    if freq is not None:
        u = est.uncertainty_
        out.append(f"edges: {u['n_edges_stable_90']} of {u['n_edges']} stable (in at least 90% of {u['n_draws']} draws "
                   f"carrying {u.get('draws_count', 'the added noise alone')}; 'frequency': the share "
                   "of them with the edge; the interval is the partial correlation's)")
    elif "se" not in header:
        out.append("edges (no per-edge noise without draws: run with --draws B for each edge's frequency):")
    out += table([f"{header[0]} - {header[1]}", *header[2:-1]], [[f"{r[0]} - {r[1]}", *r[2:-1]] for r in rows[:top]])
    if len(rows) > top:
        out.append(f"  ... {len(rows) - top} more in edges.csv")
    return out + _withheld_line(est, rows[:top]) + _whole_range_line(est)


def _withheld_line(est, rows):
    """Why the printed edges' intervals say 'withheld' (the draws' summary says it; the console did not)."""
    covers = (getattr(est, "uncertainty_", None) or {}).get("covers", "")
    if " -- withheld: " not in covers or not any("withheld" in row for row in rows):
        return []
    return [f"note: 'withheld' = {covers.split(' -- withheld: ', 1)[1].split(' -- ')[0]}: no interval is complete"]


def _whole_range_line(est):
    """Ridge: how many entries' intervals are the whole range ridge takes on any covariance (structure_bounds.py)."""
    whole = (getattr(est, "uncertainty_", None) or {}).get("range", {}).get("entries_at_whole_range", 0)
    if not whole:
        return []
    d = est.precision_.shape[0]
    scaled = getattr(getattr(est, "release_", None), "column_scale", None) is not None
    units = ("; in standardised units: divided by s_i s_j, the column scales, in the units printed"
             if scaled else "")
    return [f"note: {whole} of {d * (d + 1) // 2} precision intervals are the whole range ridge takes on any "
            f"covariance ([0, c] on the diagonal, +-c/2 off it, c = 1/sqrt(2 alpha){units}): they say nothing of their "
            "entry at this budget and alpha (the estimate may lie outside it where the released matrix is indefinite)"
            + ("" if scaled else "; in mixed units, private column scales (--scale private) can narrow them")
            + " (docs/uncertainty.md)"]


def covariance_summary(est, names=None, data_name=None, release=None):
    """The summary of a covariance fit: every variance and the largest off-diagonal entries against their noise.

    ``release``: the release whose guarantee the privacy lines state (default the fit's).
    """
    release = est.release_ if release is None else release
    title = f"{statistic(release)} of {rows_text(release)} x {release.n_features} columns{of_data(data_name)}"
    lines = console_lines(est, feature_labels(est, names)) + Noise(est).lines() + release_lines(release)
    return Summary(title, tuple(lines))


def precision_summary(est, method, names=None, data_name=None, release=None, threshold=None, diagnostics=()):
    """The summary of a precision fit: the penalty, the number of edges and the strongest of them with their noise.

    ``method``: ``"glasso"`` or ``"ridge"``; ``threshold``: the edge rule (default: any non-zero entry for
    glasso, an absolute partial correlation above :data:`~.graph.RIDGE_THRESHOLD` for ridge);
    ``diagnostics``: failed checks made outside the estimator (a standardisation's floored variances).
    """
    release = est.release_ if release is None else release
    if threshold is None and method == "ridge":
        threshold = RIDGE_THRESHOLD
    E = edge_matrix(est.precision_, threshold)
    noise = precision_noise(est, diagnostics)
    rule = f"edges<={est.max_edges}" if est.alpha == "edges" else str(est.alpha)
    edges = "the graph withheld (noise)" if noise.withholds else f"{int(E.sum() // 2)} edges"
    title = (f"{method} precision of {rows_text(release)} x {release.n_features} columns{of_data(data_name)}: "
             f"alpha = {float(getattr(est, 'alpha_', est.alpha)):.4g} ({rule}), {edges}")
    shown = [] if noise.withholds else edge_lines(est, E, feature_labels(est, names))
    return Summary(title, tuple(shown + noise.lines() + release_lines(release)))


#: The console lists at most this many correlation pairs (the files hold them all).
CORRELATION_PAIRS = 10

_CORRELATION_NOTE = ("  note: 'noise' = its interval holds 0; 'biased' = clipping may have moved it by more than its "
                     "interval says; 'withheld' = a variance within its noise, so no correlation is computed (give "
                     "that column a public range, a narrower one where its range is far wider than its data, "
                     "--scale private, or more epsilon)")


def correlation_lines(est, names, pairs=CORRELATION_PAIRS):
    """The correlation pairs largest against their standard error, each with its interval and note."""
    r, se, (lo, hi) = est.correlation_, est.correlation_se_, est.correlation_interval_
    d = r.shape[0]
    if d < 2:
        return ["one column: no correlation to show"]
    i, j = np.triu_indices(d, 1)
    strength = np.where(np.isnan(r[i, j]), -1.0, np.abs(r[i, j]) / np.where(se[i, j] > 0, se[i, j], 1.0))
    order = np.argsort(-strength, kind="stable")[:pairs]
    header = ["pair", "correlation", "se", f"{100 * est.level:g}% interval", "note"]
    rows = [[f"{names[i[k]]} x {names[j[k]]}", num(r[i[k], j[k]], 3), num(se[i[k], j[k]], 2),
             interval_text(lo[i[k], j[k]], hi[i[k], j[k]], 3), _correlation_note(est, i[k], j[k])] for k in order]
    out = [f"largest correlations against their standard error (all {d * (d - 1) // 2} in correlation.csv):"]
    out += table(header, rows)
    withheld = int(np.triu(est.correlation_withheld_, 1).sum())
    if withheld:
        out.append(f"  {withheld} of {d * (d - 1) // 2} pairs withheld: a column's variance is within its noise")
    if any(row[-1] for row in rows) or withheld:
        out.append(_CORRELATION_NOTE)
    return out


def _correlation_note(est, i, j):
    if est.correlation_withheld_[i, j]:
        return "withheld"
    lo, hi = est.correlation_interval_[:, i, j]
    notes = ["noise"] if lo <= 0 <= hi else []
    if getattr(est, "correlation_biased_", np.zeros((1, 1), bool)).any() and est.correlation_biased_[i, j]:
        notes.append("biased")
    return ", ".join(notes)


def correlation_summary(est, names=None, data_name=None, release=None):
    """The summary of a correlation fit: the pairs largest against their standard error, each with its interval."""
    release = est.release_ if release is None else release
    title = f"correlation of {rows_text(release)} x {release.n_features} columns{of_data(data_name)}"
    lines = correlation_lines(est, feature_labels(est, names)) + Noise(est).lines() + release_lines(release)
    return Summary(title, tuple(lines))
