"""``dpmoments aggregate``: the aggregator of a deployed run (Flower or gRPC); the result is written atomically."""

import argparse

from ._args import CliError, add_figure_arguments, positive_int

HELP = "run a deployed multi-site plan as the aggregator (Flower or gRPC) and write the result"
DESCRIPTION = """\
The aggregator's side of a deployed run. With --transport flower (default) run it on the SuperLink's
host (the ServerApp runs there and writes --out); it registers site public keys (--register, for
SuperNode authentication) and submits the dpmoments app (a FAB whose code is the site-installed
dpmoments) with 'flwr run'. With --transport grpc it listens itself (--listen, mutual TLS: --cert,
--key, and --root-certificates, the CA of the sites' certificates). Either way it runs the plan's
analysis, fits it and writes --out atomically: an aborted run (a dropout with --on-dropout abort,
fewer than --min-sites sites) exits non-zero with its reason and leaves an earlier result intact.
The headline guarantee is the one that holds against the aggregator (set by the noise generator's
plan, with its colluders); the per-site claim is beside it. A site that fails, refuses or times
out counts as dropped after the deal: more noise, never less, reported. --make-test-ca DIR writes a
throw-away CA, server certificate and (--site-certs) site certificates for localhost trials.
Start the Flower SuperLink first:
  flower-superlink --ssl-ca-certfile ca.crt --ssl-certfile server.pem --ssl-keyfile server.key \\
      --enable-supernode-auth --disable-runtime-dependency-installation --host 0.0.0.0 --port 9093"""
EXAMPLES = """\
  dpmoments aggregate --make-test-ca tls --site-certs north,south,east
  dpmoments aggregate --superlink 127.0.0.1:9093 --root-certificates tls/ca.crt \\
      --register north_key.pub --register south_key.pub --register east_key.pub
  dpmoments aggregate --superlink 127.0.0.1:9093 --root-certificates tls/ca.crt \\
      --plan shares/plan.json --out result
  dpmoments aggregate --transport grpc --listen 0.0.0.0:9095 --cert tls/server.pem --key tls/server.key \\
      --root-certificates tls/ca.crt --plan shares/plan.json --out result

writes: result/<the analysis's estimate>, result/privacy_report.json"""


def add_arguments(parser):
    from ._multisite import add_analysis_arguments

    parser.add_argument("--make-test-ca", metavar="DIR", help="write a localhost CA and certificates, then exit")
    parser.add_argument("--site-certs", metavar="A,B,...", help="--make-test-ca: also a certificate per site (gRPC)")
    parser.add_argument("--transport", choices=("flower", "grpc"), default="flower", help="default flower")
    parser.add_argument("--superlink", metavar="HOST:PORT", help="flower: the SuperLink's address")
    parser.add_argument("--listen", metavar="HOST:PORT", help="grpc: where to listen for the sites")
    parser.add_argument("--root-certificates", metavar="CA_PEM",
                        help="flower: the SuperLink's CA; grpc: the CA of the sites' certificates")
    parser.add_argument("--cert", metavar="PEM", help="grpc: the server certificate")
    parser.add_argument("--key", metavar="PEM", help="grpc: the server key")
    parser.add_argument("--insecure", action="store_true", help="no TLS (local trials only)")
    parser.add_argument("--register", action="append", default=[], metavar="PUB",
                        help="flower: register a site's public key with the SuperLink (repeatable)")
    parser.add_argument("--plan", metavar="PLAN_JSON", help="the public plan.json from the noise generator")
    parser.add_argument("--out", metavar="DIR", help="result directory, written atomically")
    parser.add_argument("--force", action="store_true", help="replace an existing result directory")
    add_figure_arguments(parser)
    parser.add_argument("--min-sites", type=positive_int, default=2, help="fewer surviving sites abort (default 2)")
    parser.add_argument("--on-dropout", default="complete", choices=("complete", "abort"))
    parser.add_argument("--wait", type=float, default=60.0, metavar="S", help="seconds to wait for the sites (60)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="S", help="seconds per step (120)")
    parser.add_argument("--seed", type=int, help="seed of the aggregator's own noise (tests only; NOT secure)")
    parser.add_argument("--flwr-home", metavar="DIR", help=argparse.SUPPRESS)
    add_analysis_arguments(parser)


def run(args):
    # Ctrl-C, SIGTERM and SIGHUP raise where the run is (cli._signals): the staging directory is removed
    # and flwr run ended by the finally clauses below.
    if args.make_test_ca:
        return _make_ca(args)
    return _grpc(args) if args.transport == "grpc" else _flower(args)


def _make_ca(args):
    from ..multisite import tls

    paths = tls.make_ca(args.make_test_ca)
    for name in filter(None, (args.site_certs or "").split(",")):
        cert, key = tls.make_site_cert(paths, name.strip(), args.make_test_ca)
        paths[f"{name.strip()}-cert"], paths[f"{name.strip()}-key"] = cert, key
    print(" ".join(f"{k}={v}" for k, v in paths.items()))
    return 0


def _request(args, plan_path, status):
    """Everything the aggregator's run needs, as JSON (it may run in another process: the ServerApp)."""
    import os
    import uuid
    from pathlib import Path

    fit = {k: getattr(args, k) for k in ("n_components", "alpha", "R", "phi", "max_size", "sigma2", "no_figures",
                                         "figure_format", "seed", "draws", "level",
                                         "intervals_for")}
    return {"plan": str(Path(plan_path).resolve()), "out": str(Path(args.out).resolve()), "force": args.force,
            "min_sites": args.min_sites, "on_dropout": args.on_dropout, "wait_s": float(args.wait),
            "timeout_s": float(args.timeout), "seed": args.seed, "status": str(status), "nonce": uuid.uuid4().hex,
            "fit": fit, "argv": args.argv, "pid": os.getpid()}


def _load_plan(args):
    """The plan of --plan, checked, and the options with the plan's (a new namespace, for the fit)."""
    from pathlib import Path

    from ..multisite import Plan
    from ._multisite import check_analysis
    from ._output import check_destination
    from ._plan_fixed import refuse_contradictions

    if not (args.plan and args.out):
        raise CliError("give --plan and --out (or only --register, to register sites)")
    check_destination(args.out, args.force)
    try:
        plan = Plan.from_json(Path(args.plan).read_text())
    except (OSError, ValueError, KeyError, TypeError):
        raise CliError(f"'{args.plan}' is not a dpmoments plan (plan.json from the noise generator)") from None
    refuse_contradictions(args, plan)  # an option typed against the plan is refused, never replaced
    # the release's options are the plan's (those left out take its values): a new namespace, the parsed one untouched
    args = argparse.Namespace(**{**vars(args), **dict(plan.options), "analysis": plan.analysis,
                                 "vocabulary_size": plan.vocabulary_size, "response_bound": plan.response_bound})
    check_analysis(args, fit=True)
    if args.min_sites > plan.n_sites:
        raise CliError(f"--min-sites {args.min_sites} exceeds the plan's {plan.n_sites} sites: the run could only "
                       "abort; no release was made")
    return plan, args


def _report(args, status, plan):
    if not status.get("ok"):
        raise CliError(status.get("error", "the run produced no result"))
    if not args.quiet:
        print(f"plan {plan.digest[:12]} ({plan.analysis}, {plan.protocol}): {status['n']} rows from "
              f"{len(plan.sites) - len(status['dropped'])} of {len(plan.sites)} sites; {status['summary']}")
        for line in status.get("noise", ()):  # each estimate against its noise, the failed checks, what is withheld
            print(line)
        for line in status.get("choices", ()):  # an auto plan: the bound step's share, the chosen bound, the total
            print(line)
        print(f"guarantee against the aggregator ({status['colluders']} colluder(s)): {status['guarantee']}  <- holds")
        if status.get("collusion"):
            print(f"collusion: {status['collusion']}")
        print(f"per-site claim (each message alone, the papers' view): {status['claimed']}; "
              f"dropped: {status['dropped']}")
        print(f"results in {args.out}/ ({', '.join(status['files'])})")
    return 0


def _staging(args):
    """A private working directory beside --out, marked as this process's so that a later run sweeps it if we die."""
    import os
    from pathlib import Path

    from ._temps import make_temp

    parent = Path(os.path.abspath(args.out)).parent if args.out else Path.cwd()
    return make_temp(parent)


def _grpc(args):
    import shutil

    from ..multisite import tls
    from ..multisite.grpc_transport import GrpcTransport
    from ._serverapp import aggregate_plan

    if not args.listen:
        raise CliError("--listen HOST:PORT is required with --transport grpc")
    plan, args = _load_plan(args)
    creds = {}
    if not args.insecure:
        if not (args.cert and args.key and args.root_certificates):
            raise CliError("give --cert, --key and --root-certificates (mutual TLS), or --insecure for a local trial")
        creds = tls.read_credentials(args.cert, args.key, args.root_certificates)  # a wrong file: one line naming it
    stage = _staging(args)
    try:
        transport = GrpcTransport(args.listen, insecure=args.insecure, **creds)
        if not args.quiet:
            print(f"listening on port {transport.port} for the sites of plan {plan.digest[:12]}", flush=True)
        return _report(args, aggregate_plan(plan, transport, _request(args, args.plan, stage / "status.json")), plan)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _flower(args):
    import json
    import shutil
    from pathlib import Path

    from ..multisite import deploy

    if not args.superlink:
        raise CliError("--superlink is required")
    if not args.insecure and not args.root_certificates:
        raise CliError("give --root-certificates CA_PEM (TLS), or --insecure for a local trial")
    if not args.register and not (args.plan or args.out):
        raise CliError("give --register PUB (register sites) and/or --plan and --out (run)")
    plan, args = _load_plan(args) if (args.plan or args.out) else (None, args)
    stage = _staging(args)
    try:
        home = Path(args.flwr_home) if args.flwr_home else stage / "home"
        deploy.write_flwr_config(home, args.superlink, root_certificates=args.root_certificates,
                                 insecure=args.insecure)
        env = deploy.flwr_env(home)
        _register(args, env)
        if plan is None:
            return 0
        status = stage / "status.json"
        request = _request(args, args.plan, status)
        (stage / "request.json").write_text(json.dumps(request))
        config = deploy.write_toml(stage / "run-config.toml", {"request": stage / "request.json"})
        fab = deploy.write_fab(stage / "fab")
        limit = request["wait_s"] + len(plan.steps) * request["timeout_s"] + 180
        try:
            proc = deploy.watch_flwr(deploy.run_command(fab, config), env, status, args.superlink, limit)
        except deploy.FlwrFailed as exc:
            raise CliError(f"{exc.one_line}; no release was made") from None
        if not status.exists():
            raise CliError(f"flwr run produced no result: {deploy.flwr_reason(proc)}; no release was made")
        outcome = json.loads(status.read_text())
        if outcome.get("nonce") != request["nonce"]:
            raise CliError("the result on disk is not this run's; no release was made")
        return _report(args, outcome, plan)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _register(args, env):
    from pathlib import Path

    from ..multisite import deploy

    for pub in args.register:
        if not Path(pub).is_file():
            raise CliError(f"--register: no such public key file: '{pub}'")
    try:
        deploy.run_flwr_all([deploy.register_command(pub, name=Path(pub).stem) for pub in args.register], env,
                            timeout=120)
    except deploy.FlwrFailed as exc:
        raise CliError(f"--register: {exc.one_line}") from None
    if not args.quiet:
        for pub in args.register:
            print(f"registered {pub}")
