"""The pipeline every data subcommand shares: check, fingerprint, stream, release.

Order matters: the output destination and every option are checked before
the data are touched, so a bad flag never costs a pass over a large file.
"""

import functools

import numpy as np

from ..data import SpilledPasses
from ..mechanisms import laws
from ._args import _epsilon, privacy_options, with_epsilon_grid
from ._choices import bound_budget, center_budget, check_choices, too_few_rows_hint
from ._cluster import ClusterSource, on_cluster, print_notes, scheduler_address
from ._io import DataSource, chunk_rows
from ._output import check_destination, figures_ahead
from ._progress import Progress
from ._ranges import ranges_of

__all__ = ["second_moment_release", "expected_noise_error", "noise_sd", "epsilon_grid", "Rereadable"]


def second_moment_release(args, check=None):
    """Open ``args.data``, fingerprint it, and release its second moment.

    Returns ``(source, release, fingerprint, request)``: the run's :class:`~._args.ReleaseRequest`, read
    from the privacy options once, is what the rest of the command reads. With a scheduler
    (``--scheduler``, ``DASK_SCHEDULER_ADDRESS``) the cluster's workers open the data and run every pass
    (:mod:`._cluster`); this process holds the partial sums only. ``check(source)``, if given, runs once
    the input is open and the privacy options are checked, before any pass.
    """
    out = getattr(args, "out", None)
    if out is not None:
        check_destination(out, args.force)
    ranges_of(args)  # the ranges' own form, before the file is opened
    address = scheduler_address(args)
    if address is None:
        source = DataSource(args.data, args.columns, getattr(args, "target", None), meanwhile=figures_ahead(args))
        return _release(source, args, check)
    with on_cluster(address) as client:
        return _release(ClusterSource(client, args.data, args.columns, getattr(args, "target", None)), args, check)


def _release(source, args, check):
    from ..moments import release_second_moment  # here: --help loads no release module

    print_notes(source, args.quiet)
    request = privacy_options(args, source.n_features)
    if check is not None:
        check(source)
    if request.offers_choices:
        check_choices(request.choices)
    request = with_epsilon_grid(request, epsilon_grid(args))
    kwargs = request.release_kwargs()
    show = not args.quiet
    fingerprint = None
    if args.fingerprint:
        with Progress("fingerprint", total=source.nbytes(), unit="bytes", enabled=show) as bar:
            fingerprint = source.fingerprint(bar)
    rows = chunk_rows(args.chunk_size, source.n_features)
    private = request.choices.private
    if isinstance(source, ClusterSource):
        label = f"reading {source.name} on the cluster" + (" (one pass per private choice)" if private else "")
        with source.progress(label, None if private else source.total_rows, show):
            release = _private_release(source.data, request, source.feature_names) if private else \
                release_second_moment(source.data, **kwargs)
        return source, release, fingerprint, request
    if private:
        with Progress(f"reading {source.name} (one pass per private choice)", enabled=show) as bar:
            release = _private_release(Rereadable(source, rows, bar), request, source.feature_names)
        return source, release, fingerprint, request
    with Progress(f"reading {source.name}", total=source.total_rows, enabled=show) as bar:
        release = release_second_moment(source.chunks(rows, bar), chunk_size=rows, **kwargs)
    return source, release, fingerprint, request


class Rereadable:
    """The file's chunks on every iteration: one pass per private choice, then the release.

    A parsed file (CSV, Parquet, ...) is parsed once: its float64 chunks are written to an unnamed
    temporary file by the first complete pass and read back from it by the next
    (:class:`~dpmoments.data.SpilledPasses`), so memory stays one chunk plus the sums whatever the
    file's size. A ``.npy`` is read again (from the page cache), never copied.
    """

    def __init__(self, source, rows, progress):
        self.source, self.rows, self.progress = source, rows, progress
        self.passes = None if source.kind == "npy" else SpilledPasses(lambda: source.chunks(rows, progress))

    def __iter__(self):
        return iter(self.source.chunks(self.rows, self.progress) if self.passes is None else self.passes)

    @property
    def n_features(self):
        return self.source.n_features

    def recut(self, rows):
        """The rows in blocks of at most ``rows`` (:meth:`dpmoments.data.Source.recut`): a ``.npy`` is read at
        that size; a parsed file's passes replay its spill as the first pass cut it (the release's chunks)."""
        return self.source.chunks(rows, self.progress) if self.passes is None else iter(self)


def _private_release(data, request, names):
    """The second moment with its bound, scales and centre chosen privately (moments.private_release);
    with ``--ranges``, its ranged columns' centres and scales given (moments.ranged_release)."""
    from ..moments.private_release import private_second_moment
    from ..moments.ranged_release import ranged_second_moment

    ranges = request.choices.ranges
    release = functools.partial(private_second_moment, column_names=names) if ranges is None else \
        functools.partial(ranged_second_moment, ranges=ranges, names=names)
    with too_few_rows_hint(request.choices, ranges=True):
        return release(
            data, epsilon=request.epsilon, delta=request.delta, row_norm=request.row_norm,
            center=request.center, center_budget=center_budget(request.choices), scale=request.scale,
            bound_budget=bound_budget(request.choices), mechanism=request.mechanism, neighbours=request.neighbours,
            calibration=request.calibration, rng=request.rng, count_share=request.count_share)


def epsilon_grid(args):
    text = getattr(args, "epsilon_grid", None)
    if text is None:
        return None
    from ._args import parse_floats

    return sorted(set(parse_floats(text, "--epsilon-grid", check=_epsilon)))


def noise_sd(release, epsilon, delta):
    """Per-entry standard deviation of the release's noise had it been made at ``epsilon`` (calibration only).

    Under add-remove: the sums' noise at that epsilon's share, divided by the
    released noisy count (an estimate, like the release's own noise_scale).
    """
    from ..moments import moment_sensitivity
    from ..moments.calibrated import calibrate
    from ..moments.counts import split_budget, splits_in_rho

    epsilon = _main_epsilon(release, epsilon, delta)
    # Exact discrete noise at its continuous law's scale; a release without additive noise as the Gaussian default.
    law = laws.MECHANISMS[release.law.family] if release.law.additive else laws.GAUSSIAN
    n, per = (release.n, 1) if release.n_public else (None, release.n)
    sens = moment_sensitivity("second", norm=law.norm, n_samples=n, n_features=release.n_features,
                              neighbours=release.neighbours, row_norm=release.row_norm)
    if not release.n_public:
        in_rho = splits_in_rho(release.law, release.calibration)
        epsilon, delta = split_budget(epsilon, delta, release.count_share, in_rho)[1]
    return law.sd(calibrate(law, epsilon, delta, sens, release.calibration or "analytic")[0]) / per


def _main_epsilon(release, epsilon, delta):
    """The epsilon the second moment gets of a total ``epsilon`` when a run also paid for private choices.

    Asked of the split the release itself was made with (``moments.choice_budget.PrivateChoiceBudget``, at
    the share its "second moment" part records): of rho for Gaussian noise (calibrated in zCDP), of epsilon
    for Laplace noise; at the bound this run drew (another epsilon would draw another).
    """
    from ..moments.choice_budget import PrivateChoiceBudget

    share = next((p.share for p in release.parts if p.label == "second moment"), None)
    if share is None:
        return epsilon
    return PrivateChoiceBudget(epsilon, delta, release.mechanism, release.calibration).release(share)["epsilon"]


def expected_noise_error(release, epsilons, delta):
    """Expected relative Frobenius error sqrt(E||E||_F^2) / ||S~||_F of the noise at each epsilon.

    Computed from the calibration alone (n, d, R, the relation are public) and
    the already-released matrix: no data access, no privacy cost. The
    symmetric noise has d(d+1)/2 i.i.d. draws mirrored, so
    E||E||_F^2 = d^2 Var(draw): Var = sigma^2 (Gaussian) or 2 b^2 (Laplace).
    """
    ref = float(np.linalg.norm(release.second_moment)) or 1.0
    return np.array([release.n_features * noise_sd(release, eps, delta) / ref for eps in epsilons])
