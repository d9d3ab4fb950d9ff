"""The Flower apps end to end in one process, through a fake Grid (no SuperLink, no Ray).

ServerApp and ClientApp logic run unchanged; only the transport is faked (the
fake grid calls the ClientApp object directly with each node's node_config).
Compared with :func:`dpmoments.distributed.run_cape` on the same data: exactly
with noise off, and in the report (noise levels, both guarantees) with noise on.
"""

import itertools
import json
import math
import warnings

import numpy as np
import pytest

flwr = pytest.importorskip("flwr", reason="the Flower extra is not installed (pip install 'dpmoments[flower]')")

from flwr.app import Context, Error, Message, RecordDict  # noqa: E402
from flwr.serverapp import Grid  # noqa: E402
from flwr.supercore.task_identity import TaskIdentity  # noqa: E402  (internal: Message() outside a run)

from dpmoments.distributed import ProtocolAborted, Site, run_cape  # noqa: E402
from dpmoments.exceptions import NotPrivateWarning  # noqa: E402
from dpmoments.flower import FlowerPlan, deal_shares, load_share  # noqa: E402
from dpmoments.flower.client_app import app as client_app  # noqa: E402
from dpmoments.flower.server_app import app as server_app, run_aggregator  # noqa: E402

TaskIdentity.run_id, TaskIdentity.node_id, TaskIdentity.task_id = 1, 0, 0

D, R = 4, 1.0
SIZES = {"alpha": 300, "beta": 500, "gamma": 400}


class FakeGrid(Grid):
    """Delivers each message to the ClientApp in this process; ``fail`` = {site: "error"|"timeout"}."""

    def __init__(self, node_configs, fail=None, fail_round="query.moment"):
        self._nodes = {i + 1: c for i, c in enumerate(node_configs)}
        self._site = {i + 1: c["site"] for i, c in enumerate(node_configs)}
        self._fail, self._fail_round = dict(fail or {}), fail_round
        self._run, self._replies, self._ids = None, {}, itertools.count()
        self.sent = []

    def set_run(self, run):
        self._run = run

    @property
    def run(self):
        return self._run

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
        return Message(content, dst_node_id=dst_node_id, message_type=message_type, group_id=group_id)

    def get_node_ids(self):
        return list(self._nodes)

    def push_messages(self, messages):
        ids = []
        for m in messages:
            mid = str(next(self._ids))
            m.metadata.__dict__.update(_message_id=mid, _src_node_id=0)  # the SuperLink's job
            nid = m.metadata.dst_node_id
            self.sent.append((nid, m.metadata.message_type, m.content))
            mode = self._fail.get(self._site[nid]) if m.metadata.message_type == self._fail_round else None
            if mode == "timeout":
                ids.append(mid)
                continue
            if mode == "error":
                cfg = dict(self._nodes[nid], **{"share-path": "/nonexistent/share.npz"})
            else:
                cfg = self._nodes[nid]
            try:
                reply = client_app(m, Context(run_id=1, node_id=nid, node_config=cfg, state=RecordDict(),
                                              run_config={}))
            except Exception as exc:  # what a SuperNode does: an error reply, not a crash of the run
                reply = Message(error=Error(code=0, reason=f"{type(exc).__name__}: {exc}"), reply_to=m)
            reply.metadata.__dict__["_src_node_id"] = nid
            self._replies[mid] = reply
            ids.append(mid)
        return ids

    def pull_messages(self, ids):
        return [self._replies.pop(i) for i in ids if i in self._replies]

    def send_and_receive(self, messages, *, timeout=None):  # abstract in Grid; the ServerApp polls instead
        raise AssertionError("the ServerApp should push and pull, not call send_and_receive (3 s polls)")


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return {s: rng.normal(size=(n, D)) / 3 for s, n in SIZES.items()}


@pytest.fixture
def federation(tmp_path):
    def make(epsilon=1.0, delta=1e-5, fmt="npy", seed=0):
        data = _data(seed)
        plan = FlowerPlan(tuple(SIZES), tuple(SIZES.values()), D, epsilon, delta, R)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NotPrivateWarning)
            paths = deal_shares(plan, tmp_path / "shares", rng=seed + 1)
        cfgs = []
        for k, (s, X) in enumerate(data.items()):
            p = tmp_path / f"{s}.{fmt}"
            if fmt == "npy":
                np.save(p, X)
            else:
                np.savetxt(p, X, delimiter=",", header=",".join(f"x{j}" for j in range(D)), comments="")
            cfgs.append({"site": s, "data-path": str(p), "share-path": str(paths[s]), "seed": 100 + k})
        return data, plan, paths, cfgs
    return make


def _run(tmp_path, cfgs, paths, fail=None, fail_round="query.moment", **run_config):
    grid = FakeGrid(cfgs, fail, fail_round)
    rc = {"plan-path": str(paths["plan"]), "out-dir": str(tmp_path / "out"), "seed": 7, "wait-s": 0.0, "timeout-s": 0.3,
          **run_config}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        return run_aggregator(grid, rc), grid


def _sites(data):
    return [Site(s, X, row_norm=R) for s, X in data.items()]


@pytest.mark.parametrize("fmt", ["npy", "csv"])
def test_noise_off_equals_run_cape_exactly(federation, tmp_path, fmt):
    data, plan, paths, cfgs = federation(epsilon=math.inf, fmt=fmt)
    (release, report), _ = _run(tmp_path, cfgs, paths)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        ref, ref_report = run_cape(_sites(data), epsilon=math.inf, delta=1e-5, rng=0)
    tol = 1e-15 if fmt == "npy" else 1e-12  # csv: text round trip of the rows
    np.testing.assert_allclose(release.second_moment, ref.second_moment, rtol=0, atol=tol)
    assert release.n == ref.n == sum(SIZES.values()) and release.noise_scale == 0
    saved = np.load(tmp_path / "out" / "second_moment.npy")
    np.testing.assert_array_equal(saved, release.second_moment)


def test_report_matches_run_cape(federation, tmp_path):
    data, plan, paths, cfgs = federation()
    (release, report), grid = _run(tmp_path, cfgs, paths)
    ref, ref_report = run_cape(_sites(data), epsilon=1.0, delta=1e-5, rng=0)
    assert report.aggregate_std == pytest.approx(ref_report.aggregate_std, rel=1e-12)
    assert report.target_std == pytest.approx(ref_report.target_std, rel=1e-12)
    assert report.joint_view.epsilon == pytest.approx(ref_report.joint_view.epsilon, rel=1e-12)
    assert report.claimed == ref_report.claimed
    assert release.guarantee == report.joint_view and report.joint_view.epsilon > report.claimed.epsilon
    assert report.extra_std == 0 and report.dropped == ()
    # what crossed the aggregator: d x d messages and f_s only; never e_s, never rows
    hops = report.transcript
    assert {h["from"] for h in hops} <= {"aggregator", *SIZES} and all(h["shape"] == (D, D) for h in hops)
    assert not any(h["from"] == "noise-generator" for h in hops)
    for _, mtype, content in grid.sent:
        for rec in content.array_records.values():
            for arr in rec.values():
                assert arr.numpy().shape == (D, D)
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["report"]["joint_view"]["epsilon"] == pytest.approx(report.joint_view.epsilon)
    assert saved["plan_digest"] == plan.digest


def test_distribution_matches_pooled_noise(federation, tmp_path):
    """Across runs, the aggregate's error has the std the report claims (CAPE: the pooled one)."""
    data, plan, paths, cfgs = federation()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        exact = run_cape(_sites(data), epsilon=math.inf, delta=1e-5).release.second_moment
    errs, std = [], None
    for rep in range(30):
        for k, c in enumerate(cfgs):
            c["seed"] = 1000 * rep + k
        deal_shares(plan, paths["plan"].parent, rng=5000 + rep)
        (release, report), _ = _run(tmp_path, cfgs, paths, seed=rep)
        iu = np.triu_indices(D)
        errs.append((release.second_moment - exact)[iu])
        std = report.aggregate_std
    errs = np.concatenate(errs)
    assert abs(errs.mean()) < 4 * std / math.sqrt(errs.size)
    assert errs.std() == pytest.approx(std, rel=0.15)


def test_shares_sum_to_zero_and_stay_out_of_band(federation):
    data, plan, paths, cfgs = federation()
    es = [load_share(paths[s], s)[0].matrix for s in SIZES]
    w = np.array(list(SIZES.values())) / sum(SIZES.values())
    assert np.abs(sum(wi * e for wi, e in zip(w, es))).max() < 1e-12
    assert np.abs(es[0]).max() > 0
    with pytest.raises(ValueError, match="is for site"):
        load_share(paths["alpha"], "beta")


@pytest.mark.parametrize("mode", ["error", "timeout"])
def test_dropout_completes_with_extra_noise(federation, tmp_path, mode):
    data, plan, paths, cfgs = federation()
    (release, report), _ = _run(tmp_path, cfgs, paths, fail={"beta": mode})
    ref, ref_report = run_cape(_sites(data), epsilon=1.0, delta=1e-5, rng=0, failures={"beta": "after-deal"})
    assert report.dropped == (("beta", "after-deal"),)
    assert release.n == SIZES["alpha"] + SIZES["gamma"]
    assert report.aggregate_std == pytest.approx(ref_report.aggregate_std, rel=1e-12)
    assert report.extra_std == pytest.approx(ref_report.extra_std, rel=1e-9)
    assert report.aggregate_std >= report.target_std  # never less noise than claimed
    assert report.joint_view.epsilon == pytest.approx(ref_report.joint_view.epsilon, rel=1e-9)
    assert report.site("beta").status == "failed-after-deal"


def test_site_never_connects_counts_as_dropout(federation, tmp_path):
    data, plan, paths, cfgs = federation()
    (release, report), _ = _run(tmp_path, cfgs[:2], paths)
    assert report.dropped == (("gamma", "after-deal"),) and report.aggregate_std >= report.target_std


def test_dropout_abort_writes_no_release(federation, tmp_path):
    data, plan, paths, cfgs = federation()
    with pytest.raises(ProtocolAborted, match="failed after the deal"):
        _run(tmp_path, cfgs, paths, fail={"beta": "timeout"}, **{"on-dropout": "abort"})
    assert not (tmp_path / "out" / "second_moment.npy").exists()
    assert "beta" in json.loads((tmp_path / "out" / "aborted.json").read_text())["error"]


def test_too_few_sites_abort(federation, tmp_path):
    data, plan, paths, cfgs = federation()
    with pytest.raises(ProtocolAborted, match="min_sites"):
        _run(tmp_path, cfgs, paths, fail={"beta": "error", "gamma": "timeout"})


def test_wrong_plan_is_refused(federation, tmp_path):
    data, plan, paths, cfgs = federation()
    other = FlowerPlan(tuple(SIZES), tuple(SIZES.values()), D, 2.0, 1e-5, R)
    deal_shares(other, tmp_path / "other", rng=3)
    cfgs[1]["share-path"] = str(tmp_path / "other" / "beta.npz")
    with pytest.raises(ProtocolAborted, match="another plan"):
        _run(tmp_path, cfgs, paths)


def test_site_refuses_wrong_row_count(federation, tmp_path):
    data, plan, paths, cfgs = federation()
    np.save(cfgs[0]["data-path"], data["alpha"][:-1])
    (release, report), _ = _run(tmp_path, cfgs, paths, fail=None)
    assert report.dropped == (("alpha", "after-deal"),)  # describe failed: it never joined the moment round


def test_server_app_object_runs(federation, tmp_path):
    """The registered ServerApp callable itself (what SuperLink executes), through the fake grid."""
    data, plan, paths, cfgs = federation(epsilon=math.inf)
    rc = {"plan-path": str(paths["plan"]), "out-dir": str(tmp_path / "o2"), "wait-s": 0.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotPrivateWarning)
        server_app(FakeGrid(cfgs), Context(run_id=1, node_id=0, node_config={}, state=RecordDict(), run_config=rc))
    assert (tmp_path / "o2" / "second_moment.npy").exists()
