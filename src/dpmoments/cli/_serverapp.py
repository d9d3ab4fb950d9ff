"""The aggregator's side of a deployed run, once for every transport, and the Flower ServerApp around it.

:func:`aggregate_plan` runs a plan over a transport (:func:`~dpmoments.multisite.run_plan`), fits
the plan's analysis to the releases and writes the result through :class:`._output.ResultsDir`
(atomic: the old result stays until the new one is complete). It reports to a status file
that the ``dpmoments aggregate`` process reads: success with this run's nonce, or the reason of
an abort, so a stale result can never be mistaken for this run's. ``dpmoments aggregate``
calls it directly for gRPC; for Flower, the SuperLink runs :data:`app` in its own process, with
the request (a JSON file) named in the run config.

Every process ends: a watchdog ends this one once the run's own deadline has passed (waiting
for the sites, then every step's timeout), or once its parent (Flower's executor), the
executor's parent (the SuperLink) or the ``dpmoments aggregate`` process that asked for the
run has gone.
"""

import json
import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace

__all__ = ["aggregate_plan", "app"]


def _status(path, **fields):
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps(fields, default=str) + "\n")
    os.replace(tmp, path)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _parent_of(pid):
    """The parent of ``pid`` (Linux ``/proc``), or None where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _watchdog(request, status, deadline_s):
    parent, requester = os.getppid(), request.get("pid")
    link = _parent_of(parent)  # Flower's executor's parent: the SuperLink
    deadline = time.monotonic() + deadline_s

    def watch():
        while True:
            time.sleep(1.0)
            gone = (os.getppid() != parent or _parent_of(parent) != link
                    or (requester is not None and not _alive(requester)))
            if gone or time.monotonic() > deadline:
                reason = "the process that started it ended" if gone else \
                    f"it ran past its deadline ({deadline_s:.0f} s)"
                _status(status, ok=False, nonce=request["nonce"], error=f"the aggregator stopped: {reason}; no "
                                                                         "release was made")
                os._exit(3)

    threading.Thread(target=watch, name="dpmoments-watchdog", daemon=True).start()


def deadline_of(plan, request):
    return float(request["wait_s"]) + len(plan.steps) * float(request["timeout_s"]) + 60.0


def aggregate_plan(plan, transport, request):
    """Run ``plan`` over ``transport``, fit and write; returns the status dict (also written to its file)."""
    from ..multisite import ProtocolAborted, run_plan
    from ..multisite.analyses import finish_analysis, next_params
    from ..multisite.report import collusion_line
    from ._choices import choices_lines
    from ._multisite import fit_analysis, headline_release, multisite_report
    from ._output import ResultsDir
    from ._ranges import plan_ranges_report, ranges_lines

    nonce, status = request["nonce"], request["status"]
    try:
        result = run_plan(plan, transport, rng=request.get("seed"), min_sites=request["min_sites"],
                          on_dropout=request["on_dropout"], wait_s=request["wait_s"], timeout_s=request["timeout_s"],
                          next_params=next_params(plan))
        output, report = finish_analysis(plan, result)
        args = SimpleNamespace(**request["fit"])
        names = plan_names(plan)
        info, save, summary, noise_lines = fit_analysis(args, plan.analysis, output, names)
        noise_lines = list(noise_lines) + (ranges_lines(output) if plan.ranges is not None else [])
        info.update(protocol=plan.protocol, sites=list(plan.sites), plan=plan.digest, transport=transport.name)
        with ResultsDir(request["out"], request["force"], figure_formats=request["fit"].get("figure_format")) as res:
            save(res)
            rep = multisite_report("aggregate", output, report, info, request["argv"],
                                   res.files + ["privacy_report.json"], extra={"plan": plan.to_dict(),
                                                                                 "run_nonce": nonce, **plan_ranges_report(
                                                                                     plan.ranges, plan.columns, output)})
            res.save_json("privacy_report.json", rep)
        outcome = dict(ok=True, nonce=nonce, summary=summary, noise=noise_lines, files=sorted(res.files),
                       n=headline_release(output).n,
                       guarantee=str(report.guarantee), claimed=str(report.claimed),
                       dropped=[list(x) for x in report.dropped], colluders=report.colluders,
                       collusion=collusion_line(plan.collusion),
                       choices=choices_lines(report.choices, report.guarantee)
                       if getattr(report, "choices", ()) else [])
    except ProtocolAborted as exc:
        outcome = dict(ok=False, nonce=nonce, error=f"run aborted, no release: {exc}")
    except Exception as exc:  # the aggregator's own failure: its text holds no site data (sites send codes)
        outcome = dict(ok=False, nonce=nonce, error=f"the aggregator failed ({type(exc).__name__}: {exc})")
    finally:
        transport.close()
    _status(status, **outcome)
    return outcome


def _flower_app():
    try:
        from flwr.serverapp import ServerApp
    except ImportError:  # the flower extra is optional: the app exists only where flwr does
        return None
    server = ServerApp()

    @server.main()
    def main(grid, context):
        from ..multisite import Plan
        from ..multisite.flower import FlowerTransport

        from ._output import RUN

        request = json.loads(Path(str(context.run_config["request"])).read_text())
        RUN.begin("aggregate", inputs=[request["plan"]])  # this process's results marker and --out checks
        plan = Plan.from_json(Path(request["plan"]).read_text())
        _watchdog(request, request["status"], deadline_of(plan, request))
        aggregate_plan(plan, FlowerTransport(grid), request)

    return server


app = _flower_app()


def plan_names(plan):
    """The columns' names in the outputs: the plan's, when it names them; else x0, x1, ... (and y)."""
    features = list(plan.columns) if plan.columns is not None else [f"x{j}" for j in range(plan.feature_width)]
    response = plan.response_column or "y"
    return features + ([response] if plan.rows == "xy" else [])
