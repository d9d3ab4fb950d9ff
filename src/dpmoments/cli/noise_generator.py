"""``dpmoments noise-generator``: the trusted dealer of a Flower CAPE run (share files per site).

Writes ``OUT/plan.json`` (public: give it to the aggregator) and ``OUT/<site>.npz``
(secret ``e_s``: deliver each to its site only, out of band -- never via the aggregator).
"""

import math

from ._args import CliError

HELP = "deal CAPE's zero-sum noise shares into one file per site (the trusted noise generator)"
DESCRIPTION = """\
The trusted noise generator of a multi-site CAPE run (Flower deployment, see 'dpmoments site' and
'dpmoments aggregate'). From public facts only -- site names, row counts N_s, the number of features,
the public row bound and (epsilon, delta) -- it builds the noise plan and draws the zero-sum shares
e_s (sum_s N_s e_s = 0). It writes OUT/plan.json (public; the aggregator needs it) and one secret
share file OUT/<site>.npz per site. Deliver each share file to its site only, over a channel the
aggregator does not control: if the aggregator saw e_s it could strip the noise from that site's
message. Randomness comes from OS entropy unless --seed is given (tests only)."""
EXAMPLES = """\
  dpmoments noise-generator --sites north=200,south=300,east=250 --n-features 3 \\
      --epsilon 1 --delta 1e-5 --row-norm 1 --out shares

writes: shares/plan.json (public), shares/north.npz, shares/south.npz, shares/east.npz (secret, mode 600)"""


def add_arguments(parser):
    parser.add_argument("--sites", required=True, metavar="NAME=N,...",
                        help="every site and its (public) row count, e.g. north=200,south=300")
    parser.add_argument("--n-features", type=int, required=True, metavar="D", help="number of features")
    parser.add_argument("--epsilon", required=True, help="per-site epsilon ('inf': no noise, no privacy)")
    parser.add_argument("--delta", type=float, required=True, help="per-site delta")
    parser.add_argument("--row-norm", type=float, required=True, metavar="R", help="public L2 bound on each row")
    parser.add_argument("--statistic", default="second", choices=("second", "third"),
                        help="which moment is released (default second)")
    parser.add_argument("--neighbours", default="replace-one", choices=("replace-one", "add-remove"))
    parser.add_argument("--calibration", default="analytic", choices=("analytic", "classic", "zcdp"))
    parser.add_argument("--seed", type=int, help="reproducible shares (tests only; NOT secure)")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for plan.json and the share files")
    parser.add_argument("--force", action="store_true", help="overwrite existing share files")


def parse_sites(text):
    sites, sizes = [], []
    for item in text.split(","):
        name, sep, n = item.strip().partition("=")
        if not sep or not name:
            raise CliError(f"--sites: expected NAME=N, got {item!r}")
        try:
            sizes.append(int(n))
        except ValueError:
            raise CliError(f"--sites: row count of {name!r} must be an integer; got {n!r}") from None
        sites.append(name)
    return tuple(sites), tuple(sizes)


def run(args):
    from pathlib import Path

    from ..flower import FlowerPlan, deal_shares

    sites, sizes = parse_sites(args.sites)
    epsilon = math.inf if str(args.epsilon).lower() in ("inf", "infinity") else float(args.epsilon)
    plan = FlowerPlan(sites, sizes, args.n_features, epsilon, args.delta, args.row_norm, statistic=args.statistic,
                      neighbours=args.neighbours, calibration=args.calibration)
    out = Path(args.out)
    existing = [out / f"{s}.npz" for s in sites if (out / f"{s}.npz").exists()]
    if existing and not args.force:
        raise CliError(f"{existing[0]} exists: use --force to deal new shares")
    paths = deal_shares(plan, out, rng=args.seed)
    if not args.quiet:
        print(f"plan {plan.digest[:12]} for {len(sites)} sites: {out / 'plan.json'} (public)")
        for s in sites:
            print(f"  {s}: {paths[s]} (secret: deliver to site {s!r} only)")
    return 0
