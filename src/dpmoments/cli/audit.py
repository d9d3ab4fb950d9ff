"""``dpmoments audit``: an empirical lower bound on the epsilon of a second-moment release.

The release is made by the library itself (``release_second_moment``) on two
neighbouring datasets, which fixes the exact statistic and the calibrated
noise scale of each; the noise (i.i.d. draws on the d(d+1)/2 distinct
entries, exactly as ``symmetric_matrix_noise`` draws it; under add-remove
also on the row count, and the statistic is the sum) is then sampled in
batches and :func:`dpmoments.testing.audit` turns the two samples into a
lower bound on epsilon that holds with the stated confidence. A bound above
the claim refutes it (exit status 3). A bound below it does not prove the
claim: it means this pair and these events found no violation.
"""

import math
import warnings

from ..exceptions import NotPrivateWarning
from ..mechanisms.laws import ADDITIVE, as_mechanism
from ._args import CliError, _bound, _bounded_int, add_format_arguments, add_privacy_arguments
from .._version import __version__
from ..privacy.relations import RELATION_WORDS, describe_relation

HELP = "audit a release's privacy claim empirically (small d)"
DESCRIPTION = """\
Sample the Gaussian or Laplace second-moment release on a worst-case (or your own) neighbouring
pair and print a high-confidence empirical lower bound on epsilon beside the claim. Exit status 0
when the claim survives, 3 when the audit refutes it."""
EXAMPLES = """\
  dpmoments audit --mechanism gaussian --epsilon 1 --delta 1e-5 --dim 2
  dpmoments audit --mechanism laplace --epsilon 0.5 --dim 3 --neighbours add-remove   # pair of n and n - 1 rows
  dpmoments audit --epsilon 1 --delta 1e-5 --dim 2 --noise-factor 0.5   # a negative control: refuted
  dpmoments audit --epsilon 1 --delta 1e-5 --pair a.npy b.npy --row-norm 2 --out audit-result"""

EXIT_REFUTED = 3


def add_arguments(parser):
    add_privacy_arguments(parser, bound=False)
    group = parser.add_argument_group("the neighbouring pair and the sampling")
    group.add_argument("--dim", type=int, default=2, metavar="D", help="number of features of the worst-case pair (default 2)")
    group.add_argument("--rows", type=_bounded_int(2, 1_000_000), default=100, metavar="N",
                       help="rows of the worst-case pair (default 100)")
    group.add_argument("--row-norm", type=_bound, default=1.0, metavar="R",
                       help="the row bound the release enforces (default 1; the audit is scale-free)")
    group.add_argument("--pair", nargs=2, metavar=("A", "B"),
                       help="your own neighbouring datasets (any data file, read whole) instead of the worst case")
    add_format_arguments(group)
    group.add_argument("--n-samples", type=_bounded_int(1000, 100_000_000), default=200_000, metavar="K",
                       help="draws per dataset (default 200000)")
    group.add_argument("--confidence", type=float, default=0.95, help="confidence of the lower bound (default 0.95)")
    group.add_argument("--noise-factor", type=_bound, default=1.0, metavar="F",
                       help="multiply the calibrated noise by F (F < 1 is a negative control that should be refuted)")
    group.add_argument("--out", "-o", metavar="DIR", help="also write audit.json into this results directory")
    group.add_argument("--force", action="store_true", help="replace an existing non-empty results directory")


def run(args):
    from ..testing import audit as run_audit
    import numpy as np

    from ._output import check_destination, ResultsDir, RUN

    law = _check(args)
    if args.out:
        check_destination(args.out, args.force)
    A, B, described = _pair(args, law)
    stat_a, scale_a, claim = _release(A, args, law)
    stat_b, scale_b, _ = _release(B, args, law)
    if stat_a.shape != stat_b.shape:
        raise CliError(f"the pair must have the same columns; got {A.shape[1]} and {B.shape[1]}")
    # Scales are public and equal on both sides: outputs in units of their noise, so that the auditor's
    # mean-difference projection weighs each coordinate by its signal-to-noise ratio (post-processing).
    stat_a, stat_b = stat_a / scale_a, stat_b / scale_b
    distance = np.linalg.norm(stat_a - stat_b, _ORDER[law.norm])
    factor = args.noise_factor

    def mechanism(stat, rng, size):
        return stat + law.vector((size, stat.size), factor, rng)

    result = run_audit(mechanism, stat_a, stat_b, delta=args.delta or 0.0, n_samples=args.n_samples,
                       confidence=args.confidence, batch=50_000, rng=args.seed)
    ok = result.consistent_with(args.epsilon)
    summary = _summary(args, described, distance, scale_a, claim, result, ok)
    RUN.document = summary
    if args.out:
        with ResultsDir(args.out, args.force) as res:
            res.save_json("audit.json", summary)
    if not args.quiet:
        _print(args, law, described, distance, claim, result, ok)
    return 0 if ok else EXIT_REFUTED


_ORDER = {"l1": 1, "l2": 2}  # the norm a law's sensitivity is measured in, as numpy's ord


def _check(args):
    """One-line refusals; returns the noise law ``--mechanism`` names."""
    law = as_mechanism(args.mechanism, "--mechanism", ADDITIVE)
    if args.epsilon is None:
        raise CliError("--epsilon is required: the claimed epsilon to audit")
    if law.needs_delta and args.delta is None:
        raise CliError("--delta is required for the Gaussian mechanism (e.g. --delta 1e-5)")
    if args.pair is None and not 1 <= args.dim <= 10:
        raise CliError(f"--dim must be in [1, 10] (the audit is for small d); got {args.dim}")
    if args.rows < 2:
        raise CliError(f"--rows must be >= 2; got {args.rows}")
    if args.n_samples < 1000:
        raise CliError(f"--n-samples must be >= 1000; got {args.n_samples}")
    if not 0 < args.confidence < 1:
        raise CliError(f"--confidence must be in (0, 1); got {args.confidence}")
    return law


def _release(X, args, law):
    """What the release adds noise to, exactly, and the noise scale on each coordinate; and the claim.

    Replace-one and zero-out: the upper triangle of the mean (n public), one
    noise scale. Add-remove: the row count and the upper triangle of the sum,
    with the count's and the sums' scales (the release publishes a function
    of these: auditing them audits at least as much).
    """
    from ..moments import release_second_moment
    from ..mechanisms import upper_triangle
    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        exact = release_second_moment(X, epsilon=math.inf, row_norm=args.row_norm, center=None)
    noisy = release_second_moment(X, epsilon=args.epsilon, delta=args.delta if law.needs_delta else None,
                                  row_norm=args.row_norm, mechanism=law, neighbours=args.neighbours,
                                  calibration=args.calibration, count_share=args.count_share, rng=0, center=None)
    mean = upper_triangle(exact.second_moment)
    if noisy.n_public:
        return mean, np.full(mean.size, noisy.noise_scale), noisy.guarantee
    stat = np.r_[float(exact.n), mean * exact.n]
    return stat, np.r_[noisy.count_noise_scale, np.full(mean.size, noisy.sum_noise_scale)], noisy.guarantee


def _pair(args, law):
    if args.pair:
        A, B = (_read(p) for p in args.pair)
        _check_neighbours(A, B, args.neighbours)
        return A, B, f"your pair {args.pair[0]} / {args.pair[1]}"
    return _worst_case(args.dim, args.rows, args.row_norm, law, args.neighbours)


def _worst_case(d, n, R, mechanism, neighbours):
    """The candidate pair whose statistics differ most in the mechanism's norm."""
    from ..mechanisms import upper_triangle
    import numpy as np

    ones = np.full(d, R / math.sqrt(d))
    alt = ones * np.where(np.arange(d) % 2, -1.0, 1.0)
    e = np.eye(d) * R
    if neighbours == "replace-one":
        candidates = {"x = R e1 vs x' = R e2": (e[0], e[1 % d]), "x = R 1/sqrt(d) vs x' = 0": (ones, np.zeros(d)),
                      "x = R 1/sqrt(d) vs x' = alternating signs": (ones, alt),
                      "x = R e1 vs x' = 0": (e[0], np.zeros(d))}
    else:  # one row against the zero row, or against no row at all
        candidates = {"x = R 1/sqrt(d)": (ones, None), "x = R e1": (e[0], None)}
    order = _ORDER[mechanism.norm]
    base = np.zeros((n - 1, d))
    best = None
    for name, (x, x2) in candidates.items():
        A = np.vstack([base, x])
        if neighbours == "add-remove":
            B, name = base, f"{name} added to"
        else:
            B = np.vstack([base, np.zeros(d) if x2 is None else x2])
            name = f"{name}, beside" if x2 is not None else f"{name} vs x' = 0 with"
        gap = np.linalg.norm(upper_triangle(A.T @ A) - upper_triangle(B.T @ B), order)
        if best is None or gap > best[0]:
            best = (gap, A, B, f"worst case: {name} {n - 1} zero rows")
    return best[1], best[2], best[3]


def _read(path):
    """A whole (small) data file, through the one reader every command uses."""
    import numpy as np

    from ._io import DataSource

    chunks = list(DataSource(path).chunks())
    return np.concatenate(chunks) if chunks else np.empty((0, 0))


def _check_neighbours(A, B, neighbours):
    if A.shape[1] != B.shape[1]:
        raise CliError(f"the pair must have the same columns; got {A.shape[1]} and {B.shape[1]}")
    rows = lambda M: sorted(map(tuple, M))  # noqa: E731
    if neighbours == "add-remove":
        big, small = (A, B) if len(A) > len(B) else (B, A)
        ok = len(big) == len(small) + 1 and all(r in rows(big) for r in rows(small))
    else:
        differ = [i for i, (r1, r2) in enumerate(zip(map(tuple, A), map(tuple, B))) if r1 != r2]
        ok = A.shape == B.shape and len(differ) <= 1
        if ok and neighbours == "zero-out" and differ:
            ok = not A[differ[0]].any() or not B[differ[0]].any()
    if not ok:
        raise CliError(f"the two datasets are not neighbours under {neighbours} (replace-one: same rows but one; "
                       "zero-out: same rows but one, which is zero in one of them; add-remove: one extra row)")


def _summary(args, described, distance, scales, claim, result, ok):
    return {"dpmoments_version": __version__, "mechanism": args.mechanism, "neighbouring_relation": args.neighbours,
            "neighbouring_relation_meaning": RELATION_WORDS[args.neighbours],
            "calibration": args.calibration, "claim": str(claim), "claimed_epsilon": args.epsilon,
            "delta": args.delta, "pair": described, "statistic_distance_in_noise_units": float(distance),
            "noise_scale": float(scales[-1]), "count_noise_scale": None if args.neighbours != "add-remove" else
            float(scales[0]),
            "noise_factor": args.noise_factor, "epsilon_lower_bound": result.epsilon_lower_bound,
            "confidence": result.confidence, "event": result.event, "n_samples": list(result.n_samples),
            "consistent_with_claim": ok}


def _print(args, law, described, distance, claim, result, ok):
    norm = law.norm.upper()
    print(f"audit of the {law.name} second-moment release ({describe_relation(args.neighbours)}, "
          f"{args.calibration if law.chooses_calibration else law.name.capitalize()} calibration"
          f"{'' if args.noise_factor == 1 else f', noise x {args.noise_factor:g}'})")
    what = "the count and sums" if args.neighbours == "add-remove" else "the statistics"
    print(f"pair: {described}; {norm} distance of {what} in units of their noise scales {distance:.4g}")
    print(f"claimed: {claim}")
    print(f"empirical lower bound: epsilon >= {result.epsilon_lower_bound:.3f} with {result.confidence:.0%} "
          f"confidence ({result.n_samples[0]} draws per dataset)")
    print("result: " + ("consistent with the claim (an audit can refute a claim, never prove it)" if ok
                        else "the claim is REFUTED"))
