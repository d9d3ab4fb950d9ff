"""``dpmoments aggregate``: submit the CAPE run to the SuperLink and collect the Release and report."""

from ._args import CliError

HELP = "submit a multi-site CAPE run to a Flower SuperLink and write the release and report"
DESCRIPTION = """\
The aggregator's side of a Flower deployment. Run it on the SuperLink's host (the ServerApp runs
there and writes --out). It registers site public keys (--register, for SuperNode authentication),
then submits the dpmoments app (a FAB whose code is the site-installed dpmoments) with 'flwr run',
waits, and reads OUT/report.json: the release's joint-view guarantee (what holds against the
aggregator) and the per-site claimed one. A site that fails or times out counts as dropped after the
deal: the run completes with the survivors and reports the extra noise (--on-dropout complete), or
aborts with no release (--on-dropout abort, or fewer than --min-sites). --make-test-ca DIR writes a
throw-away CA and server certificate for 127.0.0.1/localhost (local trials) and exits.
Start the SuperLink first:
  flower-superlink --ssl-ca-certfile ca.crt --ssl-certfile server.pem --ssl-keyfile server.key \\
      --enable-supernode-auth --disable-runtime-dependency-installation --host 0.0.0.0 --port 9093"""
EXAMPLES = """\
  dpmoments aggregate --make-test-ca tls
  dpmoments aggregate --superlink 127.0.0.1:9093 --root-certificates tls/ca.crt \\
      --register north_key.pub --register south_key.pub --register east_key.pub
  dpmoments aggregate --superlink 127.0.0.1:9093 --root-certificates tls/ca.crt \\
      --plan shares/plan.json --out result

writes: result/second_moment.npy, result/report.json (or result/aborted.json, and exit status 1)"""


def add_arguments(parser):
    parser.add_argument("--make-test-ca", metavar="DIR", help="write ca.crt, server.pem, server.key for localhost and exit")
    parser.add_argument("--superlink", metavar="HOST:PORT", help="the SuperLink's address")
    parser.add_argument("--root-certificates", metavar="CA_PEM", help="CA certificate of the SuperLink (TLS)")
    parser.add_argument("--insecure", action="store_true", help="no TLS (local trials only)")
    parser.add_argument("--register", action="append", default=[], metavar="PUB",
                        help="register a site's public key with the SuperLink (repeatable)")
    parser.add_argument("--plan", metavar="PLAN_JSON", help="the public plan.json from the noise generator")
    parser.add_argument("--out", metavar="DIR", help="result directory (on the SuperLink's host)")
    parser.add_argument("--min-sites", type=int, default=2, help="fewer surviving sites abort (default 2)")
    parser.add_argument("--on-dropout", default="complete", choices=("complete", "abort"))
    parser.add_argument("--colluders", type=int, default=0, help="colluding sites for the joint-view guarantee")
    parser.add_argument("--wait", type=float, default=60.0, metavar="S", help="seconds to wait for the sites (60)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="S", help="seconds per round (120)")
    parser.add_argument("--flwr-home", metavar="DIR", help="Flower CLI config dir (default: a temporary one)")


def run(args):
    import json
    import tempfile
    from pathlib import Path

    from ..flower import deploy, load_plan

    if args.make_test_ca:
        paths = deploy.make_ca(args.make_test_ca)
        print(" ".join(f"{k}={v}" for k, v in paths.items()))
        return 0
    if not args.superlink:
        raise CliError("--superlink is required")
    if not args.insecure and not args.root_certificates:
        raise CliError("give --root-certificates CA_PEM (TLS), or --insecure for a local trial")
    if not args.register and not (args.plan and args.out):
        raise CliError("give --register PUB (register sites) and/or --plan and --out (run)")
    with tempfile.TemporaryDirectory(prefix="dpmoments-flwr-") as tmp:
        home = Path(args.flwr_home or Path(tmp) / "home")
        deploy.write_flwr_config(home, args.superlink, root_certificates=args.root_certificates,
                                 insecure=args.insecure)
        env = deploy.flwr_env(home)
        deploy.run_flwr_all([deploy.register_command(pub, name=Path(pub).stem) for pub in args.register], env,
                            timeout=120)
        if not args.quiet:
            for pub in args.register:
                print(f"registered {pub}")
        if not args.plan:
            return 0
        plan = load_plan(args.plan)
        out = Path(args.out).resolve()
        fab = deploy.write_fab(Path(tmp) / "fab")
        rc = {"plan-path": Path(args.plan).resolve(), "out-dir": out, "min-sites": args.min_sites,
              "on-dropout": args.on_dropout, "colluders": args.colluders, "wait-s": float(args.wait),
              "timeout-s": float(args.timeout)}
        proc = deploy.run_flwr(deploy.run_command(fab, rc), env, check=False)
    if (out / "aborted.json").exists() and not (out / "report.json").exists():
        raise CliError(f"run aborted, no release: {json.loads((out / 'aborted.json').read_text())['error']}")
    if not (out / "report.json").exists():
        raise CliError(f"flwr run produced no result (exit {proc.returncode}): {proc.stdout[-1500:]} {proc.stderr[-500:]}")
    report = json.loads((out / "report.json").read_text())
    if not args.quiet:
        r = report["report"]
        print(f"plan {plan.digest[:12]}: {report['release']['n']} rows from {len(plan.sites) - len(r['dropped'])} of "
              f"{len(plan.sites)} sites; noise std {r['aggregate_std']:.4g} (target {r['target_std']:.4g}, "
              f"extra {r['extra_std']:.4g})")
        print(f"claimed per site: {r['claimed']}; joint view (holds): {r['joint_view']}; dropped: {r['dropped']}")
        print(f"wrote {out / (plan.statistic + '_moment.npy')} and {out / 'report.json'}")
    return 0
