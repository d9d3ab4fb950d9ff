"""``dpmoments site``: run a site's Flower SuperNode (its data and share file stay local)."""

from ._args import CliError

HELP = "run this site's Flower SuperNode for a multi-site CAPE run (rows never leave)"
DESCRIPTION = """\
Start this site's Flower SuperNode (flower-supernode). It dials OUT to the aggregator's SuperLink
(no open port at the site) over TLS (--root-certificates: the CA that signed the SuperLink's
certificate), authenticated with this site's key (--auth-key; register its .pub with the aggregator
first). The node config points the dpmoments ClientApp at --data and --share, which never leave
this machine; the ClientApp sends only the site's noisy d x d statistic (checked by the egress
guard) and takes its local noise level from its own share file, not from the aggregator.
--make-key PATH writes a new site key pair (PATH, PATH.pub) and exits. Runs until stopped (Ctrl-C)."""
EXAMPLES = """\
  dpmoments site --make-key north_key            # once; send north_key.pub to the aggregator
  dpmoments site --name north --data north.npy --share shares/north.npz \\
      --superlink agg.example.org:9093 --root-certificates ca.crt --auth-key north_key"""


def add_arguments(parser):
    parser.add_argument("--make-key", metavar="PATH", help="write a new site key pair PATH, PATH.pub and exit")
    parser.add_argument("--name", help="this site's name (as in the plan)")
    parser.add_argument("--data", help="this site's data file (.npy, or numeric .csv with an optional header)")
    parser.add_argument("--share", help="this site's share file from the noise generator")
    parser.add_argument("--superlink", metavar="HOST:PORT", help="the aggregator's SuperLink")
    parser.add_argument("--root-certificates", metavar="CA_PEM", help="CA certificate to verify the SuperLink (TLS)")
    parser.add_argument("--insecure", action="store_true", help="no TLS (local trials only)")
    parser.add_argument("--auth-key", metavar="KEY", help="this site's private key (registered with the SuperLink)")
    parser.add_argument("--port", type=int, default=9094, help="local port of the SuperNode's own API (default 9094)")
    parser.add_argument("--seed", type=int, help="seed of the local noise g_s (tests only; NOT secure)")


def run(args):
    import subprocess
    import sys

    from ..flower import deploy, load_share

    if args.make_key:
        key, pub = deploy.make_node_key(args.make_key)
        print(f"private key {key} (keep at the site); public key {pub} (send to the aggregator)")
        return 0
    for opt in ("name", "data", "share", "superlink"):
        if getattr(args, opt) is None:
            raise CliError(f"--{opt} is required")
    if not args.insecure and not args.root_certificates:
        raise CliError("give --root-certificates CA_PEM (TLS), or --insecure for a local trial")
    load_share(args.share, args.name)  # fail now on a wrong share file, not mid-run
    cmd = deploy.supernode_command(args.superlink, deploy.node_config_string(args.name, args.data, args.share,
                                                                             args.seed),
                                   port=args.port, root_certificates=args.root_certificates,
                                   private_key=args.auth_key, insecure=args.insecure)
    proc = subprocess.Popen(cmd, env=deploy.flwr_env())
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait(timeout=15)
        print("dpmoments site: stopped", file=sys.stderr)
        return 0
