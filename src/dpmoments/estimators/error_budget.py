r"""The error budget behind a covariance interval: noise, the private centre, sampling and clipping.

The noise-only interval (:func:`~dpmoments.estimators._uncertainty_matrix.covariance_spread`) holds
the *exact statistic of the clipped rows about the private centre*. A user compares the interval
with the covariance of the rows without privacy (``target="sample"``) or with the population's
(``target="population"``, the default, as statsmodels). Between those and the released entry lie,
besides the added noise:

- **the private centre's noise**: the second moment about :math:`\hat m` is the one about the mean
  plus :math:`e e^\top`, :math:`e = \hat m - \bar x`, whose noise has scale :math:`s` per coordinate
  (the ``"mean"`` part's ``noise_scale``): a product of two normals off the diagonal and
  :math:`s^2 \chi^2_1` on it, whose tails are much heavier than a normal's at the levels the
  false-coverage-rate adjustment asks for; the intervals use that law exactly, with the normal
  parts (:mod:`dpmoments.estimators.centre_law`);
- **the clipping bias**: clipping only shrinks, and what it removed from each variance between the
  bound :math:`R` and :math:`2R` is itself released (the ``"clipping excess"`` part,
  :mod:`dpmoments.moments.clipping_bias`). A variance's upper end moves up by the released loss,
  its noise added in quadrature. A column whose loss stands out of that noise (one-sided at
  ``1 - (1 - level) / d``, so that noise rarely makes a detection) is *clipped*: its variance
  interval is moved up by the loss's interval, and every entry of its row and column widened by
  :math:`\pm\sqrt{U_i U_j}` (the loss matrix is positive semi-definite, so
  :math:`|D_{ij}| \le \sqrt{D_{ii} D_{jj}}`, :math:`U` the upper ends). No column's loss is taken above
  3 times its released variance's upper end (:func:`loss_cap`: a clipped row loses in the band at most
  3 times what it keeps), which in mixed units is far below the loss release's own noise. Off the diagonal an
  undetected loss is taken as clipping shrinks elliptical rows, :math:`D_{ij} \approx \rho_{ij}
  \sqrt{D_{ii} D_{jj}}`: towards a larger :math:`|S_{ij}|`. With Gaussian noise both off-diagonal allowances
  take their own noise in quadrature with the entry's (:mod:`.clipping_allowance`). Where rows beyond :math:`2R`
  stand out of their count's noise (one-sided 95%), what they lost beyond :math:`2R` is not seen: the columns
  that bear them (whose band loss stands out, one-sided ``1 - (1 - level) / d``: such rows leave :math:`3R^2`
  times their share of each column in the band) have their entries marked (``covariance_biased_``, ``biased`` in
  the console) and their intervals withheld (NaN), never printed as if complete. Where such rows are
  not seen but not ruled out either (their count's one-sided 95% upper end is a row or more), a
  clipped column's *variance*, the entry they move most, is withheld and marked the same way (its loss
  standing out at one-sided ``1 - (1 - level) / (10 d)``, or at the detection's level where their count stands out
  at one-sided 90%, :func:`_far_rows_likely`): on small
  tables the private bound clips a fifth of the rows, a tenth lie beyond :math:`2R`, and their count's
  noise hides them. A variance printed only because its loss did not stand out has that loss's upper end taken
  given the printing (:mod:`.selective_loss`), and an off-diagonal entry within what the loss may have moved it
  by is of unclear sign (:func:`entries_of_unclear_sign`);
- **sampling** (``target="population"``): a bound that needs no fourth moment, from the bound
  :math:`R` and the released matrix (:func:`~.sampling_bound.sampling_variance`); normal theory understates the
  spread of heavy-tailed columns.

**Entries that exclude 0** are at a false-coverage-rate level (:func:`~dpmoments.estimators.fcr.fcr_level`) over the printed
entries (a withheld one is never reported), and PCA's
eigenvalues get the same parts along each component
(:func:`~dpmoments.estimators.eigenvalue_budget.eigenvalue_error_budget`).

Everything here reads a release and public values only: no rows.
"""

import numpy as np

from .budget_rows import CentreSE, distinct_statistics, finish_interval_rows, squared_entries
from .centre_bias import CENTRE_BIAS_TEXT, centre_bias_blocks, centre_bias_bound, linear_noise_variance, location_offset
from .centre_bias_law import LAW_TEXT
from .entry_intervals import (half_widths as _half_widths,
                              truncate_variances as _truncate_variances, widen_to_noise as _widen_to_noise,
                              with_centre_variance as _with_centre_variance)
from .clipping_allowance import detected_parts, towards_parts, unclear_signs
from .clipping_blocks import ClippingShifts, correlations_in_place
from .selective_loss import SelectiveLoss
from .fcr import first_count, selected_by_fcr as _selected
from .diagnostics import _centre_noise_scale as centre_noise_scale
from .entry_intervals import holding_estimate  # re-exported: the covariance reads it from here
from .sampling_bound import SAMPLING_TEXT, add_sampling_variance, sampling_variance  # the latter: re-exported
from .uncertainty import family_z, noise_law, z_value


__all__ = ["TARGETS", "check_target", "covariance_error_budget", "clipping_part", "entries_of_unclear_sign",
           "holding_estimate",
           "loss_beyond_outer_unseen", "loss_cap", "release_centre_bias", "unseen_loss_columns"]

TARGETS = ("population", "sample")
# Rows beyond the outer bound are 'seen' when their noisy count exceeds 2.33 sd (one-sided 99%): a withheld
# interval costs the user its answer, so noise alone should rarely do it (10% of fits did at 1.28 sd)
BEYOND_Z = 2.326
# Rows beyond 2R seen at one-sided 95% (FAR_Z); likely at one-sided 90% (BEARS_Z). Which columns bear them is asked
# per column at the family level (_unseen_loss_columns: one-sided 1 - (1 - level) / d)
FAR_Z, BEARS_Z = 1.645, 1.2816


def check_target(target):
    if not isinstance(target, str) or target not in TARGETS:
        raise ValueError(f"'target' must be 'population' or 'sample'; got {target!r}.")
    return target


def clipping_part(release):
    """The release's ``"clipping excess"`` part's outputs, or ``None`` where it has none."""
    return next((p.released for p in (release.parts or ()) if p.label == "clipping excess"), None)


def _psd(M):
    w, V = np.linalg.eigh((M + M.T) / 2)
    return (V * np.maximum(w, 0.0)) @ V.T


def _with_diagonal(M, diagonal):
    """A copy of ``M`` with ``diagonal`` on its diagonal."""
    out = np.array(M, dtype=float)
    out[np.diag_indices(len(diagonal))] = diagonal
    return out


def _shifted_psd(spectrum, shift):
    """:func:`_psd` of ``M - shift I`` from the decomposition of ``M`` (the same eigenvectors, the eigenvalues less
    ``shift``): equal to it where ``shift`` is 0, and to rounding (``eps ||M||``) otherwise."""
    w, V = spectrum.pairs()
    return (V * np.maximum(w - shift, 0.0)) @ V.T


def _clipping(release, level, d, sigma, variance_upper, variance_half=None, variance_sd=None):
    """The clipping bias's part of every entry's interval, standardised units (``sigma``: the released
    matrix's PSD projection, :func:`_psd`, the caller's own: turned into its correlations in place;
    ``variance_upper``: each released variance's upper end at ``level``, which caps the loss, :func:`loss_cap`).

    Returns ``(shifts, sd, withheld columns, withheld variances, summary)``: a
    :class:`~.clipping_blocks.ClippingShifts` (the lower and upper ends' shifts, d x d, made a block of rows at a time,
    and, given ``variance_sd``, each released variance's noise sd, Gaussian noise, the allowances' noises,
    :mod:`.clipping_allowance`: the undetected loss's signed sd and a detected column's spread's variance, each in
    quadrature with the entry's), a noise sd to add to the upper half-width of each variance in quadrature (d,: the
    released loss's own noise, where it is not detected; none off the diagonal), the
    columns whose intervals cannot be completed, and the clipped columns whose variance cannot be
    (:func:`_far_rows_possible`). ``variance_half``: each variance's half-width without clipping, at
    ``level``, against which the summary's ``material_columns`` judge the loss (:func:`_material`).
    """
    part = clipping_part(release)
    if part is None:
        return ClippingShifts(d), np.zeros(d), np.zeros(d, bool), np.zeros(d, bool), None
    z_detect = family_z(level, d)  # one-sided, Bonferroni over d: few false detections
    z = z_value(level)
    lost, sd = np.asarray(part["variance_lost"], dtype=float), float(part["noise_sd"])
    cap = loss_cap(variance_upper)
    lower = np.maximum(lost - z_detect * sd, 0.0)  # rows beyond 2R only add to it
    # Rows beyond 2R not ruled out: what they lost beyond it is taken as at most what the band lost (tail_factor):
    # every upper end below is of the band's loss times the factor (the detections' signs are the band's)
    tail = tail_factor(part)
    band_lost, band_sd, band_cap = lost, sd, cap
    lost, sd, cap = lost * tail, sd * tail, cap * tail
    upper = np.minimum(np.maximum(lost + z_detect * sd, 0.0), cap)
    lower = np.minimum(lower, upper)
    biased = lower > 0
    withheld, variance_unseen = unseen_loss_columns(part, level, d)
    # the rate at which a variance is withheld (unseen_loss_columns), at which a loss is called material
    z_withhold = family_z(level, 10 * d)
    # A detected loss: the variance moves up by it (its interval), and its row and column widen by +-sqrt(U_i U_j)
    # (D is positive semi-definite, so |D_ij| <= sqrt(D_ii D_jj)). An undetected loss still only lowers a variance:
    # the upper end moves up by the released loss (if positive) with its noise in quadrature. Off the diagonal it is
    # taken as clipping shrinks elliptical rows, D_ij ~ rho_ij sqrt(D_ii D_jj): towards a larger |entry|, by the
    # released correlation times the variances' upper ends. Each is made a block of rows at a time when read
    # (clipping_blocks.py): the correlations are the one d x d array kept
    detected = detected_parts(lost, sd, upper, biased, variance_upper, variance_sd, tail, z, z_detect)
    towards = towards_parts(band_lost, band_sd, band_cap, variance_upper, variance_sd, z)
    capped = np.maximum(lost, 0.0) + z * sd > cap  # the cap is the tighter upper end: it replaces loss and noise
    unclear = entries_of_unclear_sign(release, sigma, level, towards[2])  # before sigma turns into correlations
    # A variance printed only because its loss did not stand out: its loss's upper end given that (selective_loss.py)
    printed_if = np.where(capped & ~biased, np.inf, printing_threshold(part, level, d))
    shifts = ClippingShifts(d, correlations_in_place(sigma), biased, detected, towards, unclear,
                            lo_diagonal=np.where(biased, lower, 0.0),
                            hi_diagonal=np.where(biased, upper, np.where(capped, cap, np.maximum(lost, 0.0))),
                            selective=SelectiveLoss(band_lost, band_sd, printed_if, band_cap, tail,
                                                    np.where(biased, z_detect, np.nan),
                                                    laplace=noise_law(release).kind == "laplace"))
    extra = np.where(biased | capped, 0.0, sd)  # the sd on the diagonal; 0 off it (kept as the diagonal alone)
    summary = {"variance_lost_noise_sd": sd / tail, "detected_above": z_detect * sd / tail,
               "biased_columns": int(biased.sum()), "tail_factor": tail,
               "clipped_columns": np.nonzero(biased)[0].tolist(),
               "rows_beyond_outer": part["rows_beyond_outer"], "outer_norm": part["outer_norm"],
               "loss_beyond_outer_unseen": bool(withheld.any()), "withheld_columns": np.nonzero(withheld)[0].tolist(),
               "variances_withheld": np.nonzero(variance_unseen)[0].tolist(),
               "material_columns": np.nonzero(_material(band_lost, band_sd, z_withhold, variance_half))[0].tolist()}
    return shifts, extra, withheld, variance_unseen, summary


# The released share of clipped rows from which clipping's loss is taken as a large part of the second moment, its
# shape not the released correlations' (entries_of_unclear_sign): on grunfeld and macrodata 0.10-0.53 (the private
# bound clips a fifth of their rows), on the coverage benchmark's simulations and RAND HIE 0.001-0.064
HEAVY_CLIPPING = 0.1


def entries_of_unclear_sign(release, entries, level, loss_upper=None):
    """(d, d) booleans, or ``None``: the off-diagonal entries of ``entries`` (the release's matrix, standardised units)
    within their noise and the private centre's reach of 0 at ``level`` (:func:`~.clipping_allowance.unclear_signs`),
    where rows beyond the outer bound are likely (:func:`_far_rows_likely`) or the released share of clipped rows is
    ``HEAVY_CLIPPING`` or more: which way clipping moved them, and by how much, is not known. Elsewhere (``None``)
    the loss is small beside the noise and the released shape is kept (both ends there cost the simulations'
    widths 10-40% in the covariance and up to 100-fold in ridge's draws). ``loss_upper`` (d,): each column's loss
    upper end; an entry within the allowance the loss may have moved it by is unclear too (grunfeld's ``value`` x
    ``year``, +463 in the full data, was released -80 800 and claimed negative: the private centre 196 years off in
    ``year`` made the loss there positive). The covariance passes it; the draws (error_draws.py) do not. Released
    values only."""
    part = clipping_part(release)
    counted = next((p.released for p in (release.parts or ()) if p.label == "clipped rows"), None)
    heavy = counted is not None and float(counted["clipped_fraction"]) >= HEAVY_CLIPPING
    if part is None or not (heavy or _far_rows_likely(part)):
        return None
    z, law = z_value(level), noise_law(release)
    reach = z * (centre_noise_scale(release) or 0.0) + np.zeros(release.n_features)
    bound = release_centre_bias(release, level)
    if bound is not None:
        reach = reach + bound
    return unclear_signs(entries, law.sd, reach, z, loss_upper)


def unseen_loss_columns(part, level, d):
    """``(bearing, variance_only)`` (d,) booleans: the columns whose loss beyond the outer bound is unseen.

    ``bearing``: rows beyond it are seen and the column bears them (:func:`_unseen_loss_columns`: every entry of its
    row and column is withheld). ``variance_only``: such rows are not ruled out (:func:`_far_rows_possible`) and the
    column's loss stands out at a tenth of the detection's error rate, one-sided ``1 - (1 - level) / (10 d)`` (a
    one-column Gaussian table lost its variance in 25-50% of fits at ``1 - (1 - level) / d``, 0-25% at this one), or
    at the detection's level where such rows are likely (:func:`_far_rows_likely`: on grunfeld the 20 General Motors
    rows beyond 2R sit at 1.6 noise sd, below ``FAR_Z``, and the variance of 'value' they shrink printed an 'excludes
    0' interval 4% short of the full-data value): its variance, the entry they move most, is withheld. The
    covariance and PCA's eigenvalues withhold by these columns. Released values only."""
    lost, sd = np.asarray(part["variance_lost"], dtype=float), float(part["noise_sd"])
    z_detect = family_z(level, d)
    bearing = _unseen_loss_columns(part, lost, sd, z_detect)
    z_withhold = family_z(level, 10 * d)
    z_variance = z_detect if _far_rows_likely(part) else z_withhold
    return bearing, (lost - z_variance * sd > 0) & ~bearing & _far_rows_possible(part)


def printing_threshold(part, level, d):
    """(d,): the band loss above which a column's variance is withheld (:func:`unseen_loss_columns`), ``inf`` where
    it never is: the detection's ``z sd`` where rows beyond the outer bound are seen (the column's row and column) or
    likely, a tenth of its error rate's where they are only not ruled out. Public values and the far rows' count."""
    sd = float(part["noise_sd"])
    if part["rows_beyond_outer"] > FAR_Z * part["rows_beyond_noise_sd"] or _far_rows_likely(part):
        return np.full(d, family_z(level, d) * sd)
    return np.full(d, family_z(level, 10 * d) * sd if _far_rows_possible(part) else np.inf)


def _material(lost, sd, z_strict, variance_half):
    """The columns whose loss surely moves their variance by more than its interval's half-width without clipping.

    The ``clipping-bias`` check fires on these. A loss within that half-width changes no conclusion the interval
    would not allow, yet on a Gaussian table the private bound clips a few dozen rows whose small, real loss the
    release detects: on the coverage benchmark's Gaussian table (5 columns, 5000 rows, 40 fits) the check had fired
    on 10 and 8 fits at epsilon 1 and 4 when any detection fired it. The loss's lower end is taken at ``z_strict``
    (one-sided ``1 - (1 - level) / (10 d)``, the rate at which a variance is withheld), so a loss within the
    half-width is called material in at most a tenth of ``1 - level`` of fits: at the detection's own rate
    (``1 - (1 - level) / d``) RAND HIE's check named a column with no loss in 3 of 8 fits. Released values
    only (``python -m benchmarks clipping_check``)."""
    if variance_half is None:
        return np.zeros(lost.shape, dtype=bool)
    return lost - z_strict * sd > np.asarray(variance_half, dtype=float)


def loss_cap(variance_upper):
    r"""An upper end of each column's loss in the band from its released variance: ``3`` times its upper end.

    A row beyond ``R`` is scaled by :math:`b = R/\|z\|` and its band loss in column ``j`` is
    :math:`z_j^2 (a^2 - b^2)` with :math:`a = \min(1, 2R/\|z\|) \le 2b`, so at most :math:`3 b^2 z_j^2`:
    three times what the clipped row keeps, whose sum is in the released second moment. In mixed units the
    loss release's noise (one scale for every column) dwarfs a small column's variance; this bound does not.
    """
    return 3.0 * np.maximum(np.asarray(variance_upper, dtype=float), 0.0)


# What rows beyond the outer bound 2R lose beyond it, against what the released band [R, 2R] lost: at most this
# ratio for a tail no heavier than |x|^-3 (a t with 3 degrees of freedom), tail_factor's docstring
TAIL_RATIO = 1.0


def tail_factor(part):
    r"""The factor on the released band loss that also counts what rows beyond ``2R`` lost beyond it.

    Nothing released bounds that loss: a row beyond the outer bound can lose any amount, and their
    count's noise (12.7 rows at epsilon = 4) hides a few. It is *taken* as at most ``TAIL_RATIO``
    times the band's loss: for a column whose tail :math:`P(|x| > t)` falls as :math:`t^{-\alpha}`,
    what clipping at :math:`c` removes, :math:`E(x^2 - c^2)_+`, falls as :math:`c^{2-\alpha}`, so the
    loss beyond :math:`2c` is :math:`1 / (2^{\alpha - 2} - 1)` times the band's: 1 at :math:`\alpha = 3`
    (a t with 3 degrees of freedom), less for lighter tails (a Gaussian's is nearly 0), more for heavier
    ones (the assumption ``not_covered`` names). ``1 + TAIL_RATIO`` while such rows are not ruled out
    (:func:`_far_rows_possible`), else 1; it scales the variances' upper ends and a detected column's
    row and column (off the diagonal an undetected loss keeps the band's elliptical share). On the t3
    simulation of ``python -m benchmarks coverage`` (5000 rows, epsilon = 4, 20 fits), 4 of the 5 wrong
    'excludes 0' entries (of 12) had been its widest column's variance, of which 2 to 9 rows beyond
    ``2R``, hidden in their count's noise, had lost 9-31% beyond it; with it 1 of 12 is (an entry near 0
    released 3.5 noise sd away). The centre's bias bound (:func:`centre_bias_bound`) still reads the band's loss.
    """
    return 1.0 + TAIL_RATIO if _far_rows_possible(part) else 1.0


def _far_rows_possible(part):
    r"""Rows beyond the outer bound are not ruled out: their noisy count's one-sided 95% upper end is a row or more.

    A detected column's variance is the entry such rows move most: each loses :math:`(\|z\|^2 - 4R^2) u_j^2` of
    it beyond ``2R``, unbounded and unseen by the release (on grunfeld, star98 and wine every 'excludes 0' entry
    that missed for that reason was a detected column's variance, its rows beyond 2R hidden in their count's noise).
    """
    return bool(part["rows_beyond_outer"] + FAR_Z * part["rows_beyond_noise_sd"] >= 1.0)


def _far_rows_likely(part):
    """Rows beyond the outer bound are likely: their noisy count stands out at one-sided 90% (``BEARS_Z``), short of
    'seen' (``FAR_Z``). A clipped column's variance is then withheld at the detection's level (:func:`_clipping`)."""
    return bool(part["rows_beyond_outer"] > BEARS_Z * part["rows_beyond_noise_sd"])


def far_columns(release, level, d):
    """The columns whose share of the centre's bias rows beyond the clipping-excess release's outer bound may carry
    past what the ``"mean overflow"`` release sees (centre_bias.py), by the rule the variances follow: every column
    where such rows are seen (their noisy count stands out, one-sided 95%) or cannot be judged (no such release); the
    clipped columns (band loss detected, as :func:`_clipping`) where they are not ruled out (:func:`_far_rows_possible`)."""
    part = clipping_part(release)
    if part is None or part["rows_beyond_outer"] > FAR_Z * part["rows_beyond_noise_sd"]:
        return np.ones(d, dtype=bool)
    if not _far_rows_possible(part):
        return np.zeros(d, dtype=bool)
    z_detect = family_z(level, d)
    return np.asarray(part["variance_lost"], dtype=float) - z_detect * float(part["noise_sd"]) > 0


def _unseen_loss_columns(part, lost, sd, z_bears):
    """The columns whose loss beyond the outer bound is unseen: rows beyond it are seen, and the column bears them.

    A row beyond ``R' = 2R`` loses, between ``R`` and ``R'``, exactly ``3 R^2`` times its share
    ``z_j^2 / ||z||^2`` of column ``j``: every column such rows lie in shows a loss in the released band.
    Rows beyond ``R'`` are *seen* where their noisy count stands out (one-sided 95%), and a column *bears*
    them where its band loss stands out at ``z_bears``: one-sided ``1 - (1 - level) / d``, Bonferroni over the
    columns, the detection's own level, so that noise alone flags a column in at most ``1 - level`` of fits. At
    one-sided 90% per column (no multiplicity) it flagged about 1-3 more columns per fit on anes96, breast cancer and
    star98 (withheld 7-30% of their entries, 20 fits at epsilon 1 and 4); the family level withholds 2-15%, with
    their coverage unchanged (1.00; ``python -m benchmarks coverage``).
    """
    seen = part["rows_beyond_outer"] > FAR_Z * part["rows_beyond_noise_sd"]
    return np.asarray(seen & (lost - z_bears * sd > 0), dtype=bool)


def covariance_error_budget(release, noise_se, noise_interval, level, target, spectrum=None):
    """The intervals of every entry with every part counted, in the release's (standardised) units.

    ``noise_se`` and ``noise_interval`` are the noise-only ones (standardised
    units). ``spectrum``: a :class:`~dpmoments.moments.psd.SymmetricSpectrum` of
    ``release.second_moment`` shared with the estimate's PSD projection. ``noise_se`` may be a
    :class:`~.noise_entries.LazyEntries`. Returns a dict: ``se`` (all symmetric parts together, normal
    approximation), ``interval`` (2, d, d), ``biased`` (d, d) booleans,
    ``parts`` (JSON-able summary).
    """
    d = release.n_features
    # The centre, unbiased for the exact moment: the released matrix less the noise's mean on the diagonal, kept as
    # that matrix and its own diagonal (one d x d array fewer: 800 MB at d = 10 000; the same bits)
    raw, diagonal = np.asarray(release.second_moment, dtype=float), np.diag_indices(d)
    centre_diagonal = raw[diagonal] - noise_law(release).diagonal_mean
    s = centre_noise_scale(release) or 0.0
    mid_diagonal = centre_diagonal - s**2  # the centre's own diagonal, less its noise's mean
    # One eigendecomposition (about 9 d^3 flops, the command's largest cost at large d) serves both parts, and
    # the estimate's projection where it made one
    needed = target == "population" or clipping_part(release) is not None
    sigma = _shifted_psd(spectrum.check_of(release.second_moment, "second_moment"), noise_law(release).diagonal_mean
                         + s**2) if needed and spectrum is not None else (_psd(_with_diagonal(raw, mid_diagonal))
                                                                          if needed else None)
    if spectrum is not None:
        spectrum.release()  # the last reader: its eigenvectors (d x d) need not outlive sigma
    # the noise's and sampling's variances: one d x d array written in place, a block of rows at a time (at
    # d = 10 000 each d x d array is 800 MB); noise_se**2, from a LazyEntries (noise_entries.py)
    normal_parts = squared_entries(noise_se, d)
    if target == "population":
        add_sampling_variance(normal_parts, release, sigma)
    offset = location_offset(release)  # across sites: the mean's step a, in a term linear in it (centre_bias.py)
    if offset is not None:
        normal_parts += linear_noise_variance(offset, s)
    variance_upper = centre_diagonal + z_value(level) * noise_se.diagonal()  # the clipped rows' variances
    variance_half = z_value(level) * np.sqrt(np.diagonal(normal_parts) + 2.0 * s**4)  # noise, sampling, centre
    gaussian = noise_law(release).kind == "gaussian"  # the allowance's noise in quadrature (clipping_allowance.py)
    shifts, bias_sd, withheld_cols, variances_unseen, clip = _clipping(
        release, level, d, sigma, variance_upper, variance_half, np.diagonal(noise_se) if gaussian else None)
    del sigma  # its correlations live on in 'shifts' where the clipping part reads them
    # The standard errors (a result, d x d) of the parts before a detected column's spread: made here where that is
    # added, else at the end in place of 'normal_parts' (one d x d array fewer while the intervals are made)
    se = _with_centre_variance(normal_parts, s) if shifts.has_spread_variance else None
    shifts.add_spread_variance(normal_parts)  # a detected column's spread: its noise a normal part, on both sides
    biased = withheld_cols[:, None] | withheld_cols[None, :] | np.diag(variances_unseen)
    # The centre's bias bound reads the band's loss alone, as before the tail factor (a factor of 1 or 2: exact)
    tail = clip["tail_factor"] if clip is not None else 1.0
    second_upper = variance_upper + (shifts.hi_diagonal + z_value(level) * bias_sd) / tail
    bias_bound = centre_bias_bound(release, second_upper, level, far_columns(release, level, d), with_norm=gaussian)
    bias_bound, joint = bias_bound if gaussian and bias_bound is not None else (bias_bound, None)  # None: not known

    widths_at = {}  # the centre bias's widths at each level asked (the level itself twice)

    def bias_widths(at):
        if at not in widths_at:
            widths_at[at] = centre_bias_blocks(bias_bound, s, second_upper, at, offset, joint, normal_parts)
        return widths_at[at]

    def intervals(at):  # every entry's interval at level 'at', made in its (2, d, d) result
        out = np.empty((2, d, d))
        lo_half, hi_half = _half_widths(normal_parts, s, at, out)
        # The noise-only interval (exact for its law) at that level where it is wider (Laplace noise's tails)
        _widen_to_noise(lo_half, hi_half, release, noise_interval, level, at)
        # about the entry, with the clipping part's shifts and the centre's own clipping bias, a block at a time
        finish_interval_rows(out, raw, centre_diagonal, shifts, bias_sd,
                             bias_widths(at), z_value(at))
        _truncate_variances(out, centre_diagonal)
        return out

    # Which entries exclude 0: their distance from it at the level, the distinct printed entries' alone
    counted = first_count(distinct_statistics(raw, mid_diagonal, shifts, bias_widths(level),
                                              CentreSE(normal_parts, s, se), ~biased), level)
    selected, adjusted, interval = _selected(intervals, None, ~biased, level, counted)
    kept = interval[:, selected]  # the selected entries' own: two d x d arrays fewer while the others' are made
    del interval
    # Not selected: the interval at the level itself, stretched to hold 0 (it contains the one at that level, so
    # its coverage is at least the level; and it never says 'excludes 0' where the selection did not)
    interval = intervals(level)
    widths_at.clear()  # they read normal_parts, about to be overwritten
    np.minimum(interval[0], 0.0, out=interval[0])
    np.maximum(interval[1], 0.0, out=interval[1])
    interval[:, selected] = kept
    del kept
    interval[:, biased] = np.nan  # what their rows lost beyond 2R is unseen: withheld, never printed as if complete
    if se is None:
        se = _with_centre_variance(normal_parts, s, in_place=True)
    del normal_parts
    parts = {
        "target": target,
        "level_each": adjusted,
        "selected": int(np.count_nonzero(np.triu(selected))),
        "multiplicity": ("false coverage rate (Benjamini & Yekutieli 2005): the entries whose interval excludes 0 "
                         "are chosen by Benjamini-Hochberg at 1 - level among the m distinct printed ones, and their "
                         "intervals are at level 1 - R (1 - level) / m (R chosen), so that among the entries whose "
                         "interval excludes 0 the share that miss is at most 1 - level; every other interval is the "
                         "one at the level, stretched to hold 0"),
        "noise": "the added noise of every entry (as noise_law)",
        "centre_noise_scale": s,
        "centre": ("the private centre's noise e e^T, e ~ N(0, s^2 I): its exact law with the normal parts "
                   "(the product of two normals off the diagonal, s^2 chi-square(1) on it)"),
        "sampling": (SAMPLING_TEXT if target == "population" else "not counted: the interval is for these rows"),
        "clipping": clip if clip is not None else "not estimated: no clipping-excess release",
        "centre_bias": (CENTRE_BIAS_TEXT + LAW_TEXT if bias_bound is not None else "not bounded: the release does not "
                        "say how many rows the centre's mean clipped"),
    }
    return {"se": se, "interval": interval, "biased": biased, "parts": parts}


def release_centre_bias(release, level, with_norm=False):
    """The centre's bias bound ``B`` (d,) (:func:`centre_bias_bound`, standardised units) from the release's variances
    and clipping losses at their upper ends; ``None`` where it is not bounded (a public centre or bound). PCA's
    eigenvalues and the draws behind the non-linear estimates (error_draws.py) read it: released values only.
    ``with_norm``: ``(B, (N, columns))`` or ``None``, ``N`` the bound on the norm of ``beta`` over ``columns``."""
    part, z, law = clipping_part(release), z_value(level), noise_law(release)
    upper = np.diagonal(release.second_moment) - law.diagonal_mean + z * law.diagonal_sd
    if part is not None:
        upper = upper + np.minimum(np.maximum(np.asarray(part["variance_lost"]) + z * float(part["noise_sd"]), 0.0),
                                   loss_cap(upper))
    return centre_bias_bound(release, upper, level, far_columns(release, level, len(upper)), with_norm=with_norm)


def loss_beyond_outer_unseen(part, level):
    """True where rows beyond the clipping-excess release's outer bound are seen and some column's loss stands
    out of its noise (one-sided, Bonferroni over the columns): what clipping removed beyond it is unknown.
    ``part`` is the release's clipping part (:func:`clipping_part`): released values only."""
    lost, sd = np.asarray(part["variance_lost"], dtype=float), float(part["noise_sd"])
    detected = bool(np.any(lost - family_z(level, lost.size) * sd > 0))
    return detected and bool(part["rows_beyond_outer"] > BEYOND_Z * part["rows_beyond_noise_sd"])
