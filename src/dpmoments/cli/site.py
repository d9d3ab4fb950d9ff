"""``dpmoments site``: one site of a deployed run -- its rows read once, its own ledger and budget, one door."""

import argparse

from ._args import CliError, parse_columns, positive_int

HELP = "serve this site in a deployed multi-site run (Flower or gRPC); rows never leave"
DESCRIPTION = """\
Run this site of a multi-site run. It reads its data file once, checks it against the plan in its
share file (rows, columns) BEFORE joining. It answers each step of a plan once, wherever and however
it is started: each answer is recorded, before it is sent, with the share (SHARE.spent/ beside the
file, this user's registry in $DPMOMENTS_STATE_HOME, default ~/.local/state/dpmoments, and a mark in
the share file), and a used share whose record is missing is refused. Its ledger in --state
(ledger.json) logs refusals with the reason and keeps it within its --budget (default: the plan's
own budget for this site, i.e. this one plan). What leaves passes one door: the site's noisy statistics (egress guard)
or a fixed error code -- never an error text, a data value or a file name.

--transport flower (default): a Flower SuperNode dials OUT to the aggregator's SuperLink over TLS
(--root-certificates), authenticated by this site's key (--auth-key; register its .pub with the
aggregator first); the ClientApp only carries bytes to this process over a private local socket.
--transport grpc: dials OUT to the aggregator's gRPC port (--aggregator) with mutual TLS (--cert,
--key: this site's certificate, common name = its name; --root-certificates: the aggregator's CA).
--make-key PATH writes a new SuperNode key pair (PATH, PATH.pub) and exits. Runs until stopped."""
EXAMPLES = """\
  dpmoments site --make-key north_key            # once; send north_key.pub to the aggregator
  dpmoments site --name north --data north.csv --share shares/north.npz --budget 2,1e-5 \\
      --superlink agg.example.org:9093 --root-certificates ca.crt --auth-key north_key
  dpmoments site --name north --data north.csv --share shares/north.npz --transport grpc \\
      --aggregator agg.example.org:9095 --root-certificates ca.crt --cert north.pem --key north.key"""


def add_arguments(parser):
    parser.add_argument("--make-key", metavar="PATH", help="write a new SuperNode key pair PATH, PATH.pub and exit")
    parser.add_argument("--name", help="this site's name (as in the plan)")
    parser.add_argument("--data", help="this site's data file (.csv with a header, .parquet, .npy)")
    parser.add_argument("--columns", metavar="A,B,...",
                        help="the feature columns (default: the plan's, when it names them; else all but --target)")
    parser.add_argument("--target", metavar="COL",
                        help="the response column (select, regress; default: the plan's, when it names it)")
    parser.add_argument("--share", action="append", default=[], metavar="NPZ",
                        help="a share file from the noise generator (repeatable: one per plan this site may answer)")
    parser.add_argument("--budget", metavar="EPS,DELTA",
                        help="the most this site spends against the aggregator over every plan it answers "
                             "(default: the plans' own budgets for this site, added up)")
    parser.add_argument("--colluders", type=int, metavar="C",
                        help="other sites this site assumes collude with the aggregator when it charges a plan to "
                             "its budget: the larger of C and the plan's own (default: the plan's)")
    parser.add_argument("--state", metavar="DIR", help="this site's ledger and local socket (default: "
                                                       "./dpmoments-site-NAME)")
    parser.add_argument("--transport", choices=("flower", "grpc"), default="flower", help="default flower")
    parser.add_argument("--superlink", metavar="HOST:PORT", help="flower: the aggregator's SuperLink")
    parser.add_argument("--aggregator", metavar="HOST:PORT", help="grpc: the aggregator's address")
    parser.add_argument("--root-certificates", metavar="CA_PEM", help="CA certificate of the aggregator (TLS)")
    parser.add_argument("--cert", metavar="PEM", help="grpc: this site's certificate")
    parser.add_argument("--key", metavar="PEM", help="grpc: this site's private key")
    parser.add_argument("--insecure", action="store_true", help="no TLS (local trials only)")
    parser.add_argument("--auth-key", metavar="KEY", help="flower: this site's private key (registered)")
    parser.add_argument("--port", type=int, default=9094, help="flower: the SuperNode's local API port (9094)")
    parser.add_argument("--max-rows", type=positive_int, default=10_000_000, metavar="N",
                        help="refuse a data file of more rows (they are held in memory; default 10,000,000)")
    parser.add_argument("--chunk-size", type=positive_int, default=65536, metavar="ROWS", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, help="seed of the local noise g_s (tests only; NOT secure)")


def _budget(text, plans, name):
    from ..privacy import ApproxDP, compose

    if text is None:
        return compose([ApproxDP(p.epsilon[p.index(name)], p.delta[p.index(name)]) for p in plans])
    try:
        eps, delta = (float(v) for v in text.split(","))
        return ApproxDP(eps, delta)
    except ValueError:
        raise CliError(f"--budget must be EPSILON,DELTA (e.g. 2,1e-5); got {text!r}") from None


def _plan_columns(plans, args):
    """``(columns, target)``: the names the plans give (each then found by name, in order); None if they give none."""
    named = {(p.columns, p.response_column) for p in plans}
    if named == {(None, None)}:
        return None
    if len(named) > 1:
        raise CliError("the plans of --share name different columns (or some none): serve them from separate "
                       "site processes")
    columns, target = named.pop()
    if args.columns is not None and [str(c) for c in parse_columns(args.columns)] != list(columns):
        raise CliError(f"--columns differs from the columns the plan names ({','.join(columns)}): leave it out")
    if args.target is not None and args.target != target:
        raise CliError(f"--target differs from the response column the plan names ({target}): leave it out")
    return list(columns), target


def _load(args):
    """The bundle and the site: its data read once and checked against the plan before joining."""
    from pathlib import Path

    import numpy as np

    from ..multisite import Site, read_bundle
    from ..multisite.spent import ShareRecordError, check_writable
    from ._io import DataSource
    from ._io import read_in_memory

    for opt in ("name", "data", "share"):
        if not getattr(args, opt):
            raise CliError(f"--{opt} is required")
    bundles = [read_bundle(path, args.name) for path in args.share]
    plans = [b.plan for b in bundles]
    state = Path(args.state or f"dpmoments-site-{args.name}")
    check_writable(state, "--state")  # before joining: a site that cannot record its answers would drop out later
    # The one reader's errors name the file and what is wrong, never a value (cli._errors guards the rest);
    # they stay on this site's console: nothing has been sent.
    named = _plan_columns(plans, args)
    source = DataSource(args.data, *named, by_name=True) if named else DataSource(args.data, args.columns, args.target)
    X, y = read_in_memory(source, args)
    if args.colluders is not None and args.colluders < 0:
        raise CliError(f"--colluders must be >= 0; got {args.colluders}")
    site = Site(args.name, X, y, budget=_budget(args.budget, plans, args.name), ledger=state / "ledger.json",
                colluders=args.colluders)
    del X, y
    for k, (path, bundle) in enumerate(zip(args.share, bundles)):
        plan = bundle.plan
        try:
            site.accept(bundle, rng=None if args.seed is None else np.random.SeedSequence([args.seed, k]))
        except ShareRecordError as exc:  # used before with its record missing, or nowhere to record it
            raise CliError(str(exc)) from None
        except ValueError:
            raise CliError(f"'{args.data}' does not fit the plan of '{path}': site {args.name!r} must hold "
                           f"{plan.n[plan.index(args.name)]} rows of {plan.feature_width} feature columns"
                           + (" and a --target column" if plan.takes_response else "") + "; nothing was sent") from None
    if not any(site.ledger.can_answer(p.digest, site.cost(p), p.neighbours) for p in plans):
        raise CliError(f"every plan held would exceed this site's budget {site.ledger.budget} (spent: "
                       f"{site.ledger.spent() or 'nothing'}): nothing to serve")
    return site, plans, state


def run(args):
    import sys

    from ..multisite import tls
    from ._signals import Stopped

    if args.make_key:
        key, pub = tls.make_node_key(args.make_key)
        print(f"private key {key} (keep at the site); public key {pub} (send to the aggregator)")
        return 0
    site, plans, state = _load(args)
    if not args.quiet:
        for plan in plans:
            c = max(plan.colluders, args.colluders or 0)
            auto = "" if plan.auto is None else (f"; its bound step (share {plan.auto.share:g}) sends noisy "
                                                 f"histograms of {', '.join(plan.auto.names)}, included")
            if plan.location is not None:
                auto += (f"; its {plan.location.steps} location steps (share {plan.location.share:g}) send noisy "
                         f"per-column histograms and its mean round (share {plan.location.mean:g}) a noisy mean, "
                         "included")
            done = site.answered(plan.digest)  # recorded with the share, wherever it ran: refused if asked again
            auto += f"; its share already answered step(s) {done}, refused if asked again" if done else ""
            print(f"site {site.name}: plan {plan.digest[:12]} ({plan.analysis}, {plan.protocol}) costs "
                  f"{site.cost(plan)} against the aggregator with {c} colluding site(s){auto}", flush=True)
        print(f"site {site.name}: budget {site.ledger.budget}, spent {site.ledger.spent() or 'nothing'}; ledger "
              f"{state / 'ledger.json'}", flush=True)
    try:
        return _serve_grpc(args, site) if args.transport == "grpc" else _serve_flower(args, site, state)
    except (KeyboardInterrupt, Stopped):  # Ctrl-C, systemd, docker stop: how a serving site is meant to end
        print(f"dpmoments site: {site.name} stopped; its ledger is in {state / 'ledger.json'}", file=sys.stderr)
        return 0


def _serve_grpc(args, site):
    from ..multisite import tls
    from ..multisite.grpc_transport import GrpcSite

    if not args.aggregator:
        raise CliError("--aggregator HOST:PORT is required with --transport grpc")
    creds = {}
    if not args.insecure:
        if not (args.root_certificates and args.cert and args.key):
            raise CliError("give --root-certificates, --cert and --key (mutual TLS), or --insecure for a local trial")
        creds = tls.read_credentials(args.cert, args.key, args.root_certificates)  # a wrong file: one line naming it
    GrpcSite(site.handle, args.aggregator, site.name, insecure=args.insecure, **creds).run()
    return 0


def _serve_flower(args, site, state):
    from ..multisite import deploy, tls
    from ..multisite.door import SiteServer
    from ..multisite.supernode import SessionRefused, keep_up

    if not args.superlink:
        raise CliError("--superlink HOST:PORT is required with --transport flower")
    if not args.insecure and not args.root_certificates:
        raise CliError("give --root-certificates CA_PEM (TLS), or --insecure for a local trial")
    if args.auth_key:  # a key the SuperNode cannot use: one line now, not its panel and a restart
        tls.check_node_key(args.auth_key)
    socket_path = (state / "door.sock").resolve()
    if len(str(socket_path)) > 100:
        raise CliError(f"--state '{state}' is too deep for a local socket (its path must be under 100 characters)")
    config = deploy.write_toml(state / "node-config.toml", {"site-socket": socket_path})
    with SiteServer(site.handle, socket_path):
        cmd = deploy.supernode_command(args.superlink, str(config.resolve()), port=args.port,
                                       root_certificates=args.root_certificates, private_key=args.auth_key,
                                       insecure=args.insecure)
        try:  # a restart after a crash waits here (one line says why and until when) for its old session to lapse
            return keep_up(cmd, deploy.flwr_env(), state, interval=deploy.HEARTBEAT_S, key=args.auth_key)
        except SessionRefused as exc:
            raise CliError(exc.one_line) from None
