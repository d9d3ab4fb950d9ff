"""``python _supernode.py INTERVAL ARG ...``: Flower's ``flower-supernode ARG ...`` heartbeating every INTERVAL.

Run as a script (it imports flwr, nothing of dpmoments).

Why: flwr 1.41's SuperNode tells the SuperLink to expect a heartbeat every 30 s, and the
SuperLink keeps a node that falls silent online for twice that. A site killed without signing
off (SIGKILL of its process group, the OOM killer, a power cut) is then refused for up to
60 s when it restarts with the same key (its node is still "online"), and an aggregator waits
as long on the dead node. The interval is a field of the node's own requests, which the
SuperLink accepts from 10 s up; flwr has no option for it, so it is set where flwr reads it.
With 10 s, the SuperNode heartbeats every ~4 s and a dead one is forgotten within 20 s.
"""

import sys

def main(argv):
    if len(argv) < 1:
        raise SystemExit("usage: python _supernode.py INTERVAL [flower-supernode ARG ...]")
    import flwr.supercore.heartbeat as sender  # the period between heartbeats
    import flwr.supernode.fleet_http_connection as connection  # the interval the requests announce

    interval = float(argv[0])
    for module in (connection, sender):
        if not hasattr(module, "HEARTBEAT_DEFAULT_INTERVAL"):  # another flwr: refuse rather than run with 30 s
            raise SystemExit(f"dpmoments site: this flwr's SuperNode has no heartbeat interval in {module.__name__}; "
                             "install flwr 1.41.x (pip install 'dpmoments[flower]')")
        module.HEARTBEAT_DEFAULT_INTERVAL = interval
    from flwr.supernode.cli import flower_supernode

    sys.argv = ["flower-supernode", *argv[1:]]
    flower_supernode()


if __name__ == "__main__":
    main(sys.argv[1:])
