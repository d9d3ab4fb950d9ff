"""The ``dpmoments`` command line (the only code that prints).

Today it has one subcommand, ``demo``; the analyses join it as they land.
"""

import argparse
import json
import sys
import warnings

import numpy as np

from .exceptions import NotPrivateWarning
from .moments import release_second_moment
from .privacy import Accountant, ApproxDP

from ._version import __version__

# sklearn's bundled diabetes data are published mean-centred with every column
# scaled to unit L2 norm over its 442 rows, so a typical row has norm
# sqrt(10/442) ~ 0.15. The bound below is chosen from that documented
# scaling, not from the values: rows beyond it are clipped.
DIABETES_ROW_NORM = 0.2


def _demo(args):
    from sklearn.datasets import load_diabetes

    data = load_diabetes()
    X, names = data.data, data.feature_names
    acct = Accountant(ApproxDP(args.epsilon, args.delta))
    release = release_second_moment(
        X, epsilon=args.epsilon, delta=args.delta, row_norm=DIABETES_ROW_NORM, rng=args.seed
    )
    acct.spend(release.guarantee, label="diabetes second moment")
    with warnings.catch_warnings():  # the exact matrix is a reference for the demo only
        warnings.simplefilter("ignore", NotPrivateWarning)
        exact = release_second_moment(X, epsilon=float("inf"), row_norm=DIABETES_ROW_NORM)
    _print_demo(release, exact, names, acct)
    if args.report:
        with open(args.report, "w") as fh:
            json.dump({"release": release.to_dict(), "accountant": acct.report(), "version": __version__}, fh, indent=2)
        print(f"privacy report written to {args.report}")


def _top_direction(S):
    w, V = np.linalg.eigh(S)
    return w[::-1], V[:, -1]


def _print_demo(release, exact, names, acct):
    S, S0 = release.second_moment, exact.second_moment
    err = np.linalg.norm(S - S0) / np.linalg.norm(S0)
    w, v = _top_direction(S)
    w0, v0 = _top_direction(S0)
    print(f"dpmoments {__version__} demo: diabetes data (n={release.n}, d={release.n_features}), "
          f"rows clipped to ||x|| <= {release.row_norm}")
    print(f"guarantee: {release.guarantee} ({release.neighbours}, {release.mechanism} noise, "
          f"{release.calibration} calibration, sigma = {release.noise_scale:.3g}, randomness: {release.randomness})")
    print(f"relative Frobenius error of the private second moment: {err:.3f}")
    print(f"top eigenvalue private / exact: {w[0]:.5f} / {w0[0]:.5f}; "
          f"|cos| between top principal directions: {abs(v @ v0):.3f}")
    print("top principal direction (private, exact):")
    sign = np.sign(v @ v0) or 1.0
    for name, a, b in zip(names, sign * v, v0):
        print(f"  {name:>4s} {a:+.3f} {b:+.3f}")
    print(f"budget spent: {acct.spent} of {acct.budget}")
    print("(the exact values are printed only to show the error; publishing them would not be private)")


def build_parser():
    parser = argparse.ArgumentParser(prog="dpmoments", description="Differentially private multivariate statistics.")
    parser.add_argument("--version", action="version", version=f"dpmoments {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="a private second moment of bundled data, beside the exact one",
                          epilog="example: dpmoments demo --epsilon 1 --delta 1e-6")
    demo.add_argument("--epsilon", type=float, default=1.0, help="privacy parameter epsilon (default 1)")
    demo.add_argument("--delta", type=float, default=1e-6, help="privacy parameter delta (default 1e-6)")
    demo.add_argument("--seed", type=int, default=None, help="seed: reproducible but NOT secure noise")
    demo.add_argument("--report", default=None, help="write a JSON privacy report to this path")
    demo.set_defaults(func=_demo)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        args.func(args)
    except (ValueError, TypeError, OSError) as exc:
        print(f"dpmoments: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
