"""The options travel as read: a frozen request value, and no module of the command line writes into them."""

import ast
import dataclasses
import pathlib

import pytest

import dpmoments.cli
from dpmoments.cli import build_parser
from dpmoments.cli._args import ReleaseRequest, privacy_options
from dpmoments.cli._choices import Choices, bound_budget, center_budget
from tests.source_tree import parse

CLI = pathlib.Path(dpmoments.cli.__file__).parent


def _writes_into_args(path):
    """``args.x = ...``, ``args.x += ...``, ``setattr(args, ...)`` and ``del args.x`` in ``path``."""
    for node in ast.walk(parse(path.read_text())):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "args":
                    yield node.lineno
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr" and node.args and \
                getattr(node.args[0], "id", None) == "args":
            yield node.lineno


@pytest.mark.parametrize("path", sorted(CLI.rglob("*.py")), ids=lambda p: str(p.relative_to(CLI)))
def test_nothing_writes_into_the_parsed_options(path):
    assert not list(_writes_into_args(path)), f"{path.name} writes into args at lines {list(_writes_into_args(path))}"


def test_the_rule_sees_a_write(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(args):\n    args.center = 'private'\n    setattr(args, 'x', 1)\n    args.n += 1\n")
    assert sorted(_writes_into_args(bad)) == [2, 3, 4]


def _args(*words):
    return build_parser("covariance").parse_args(["covariance", "x.npy", "--out", "o", *words])


def test_the_request_is_frozen_and_reads_the_defaults_once():
    request = privacy_options(_args("--epsilon", "1", "--delta", "1e-6"), 3)
    assert isinstance(request, ReleaseRequest) and isinstance(request.choices, Choices)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.epsilon = 2.0
    # a moment command centres privately and draws its bound unless told otherwise
    assert request.center == "private" and request.row_norm == "auto"
    assert request.choices.private == ("row_norm", "center")
    assert bound_budget(request.choices).share == 0.1 and center_budget(request.choices).mean == 0.2
    kwargs = request.release_kwargs()
    assert kwargs["epsilon"] == 1.0 and kwargs["delta"] == 1e-6 and kwargs["center"] == "private"


def test_public_choices_and_laplace_noise():
    args = _args("--epsilon", "1", "--delta", "1e-6", "--mechanism", "laplace", "--row-norm", "2", "--uncentred")
    request = privacy_options(args, 3)
    assert request.delta is None and request.row_norm == 2.0 and request.center is None
    assert request.choices.private == () and args.center is None  # nothing was written back
    assert privacy_options(_args("--epsilon", "1", "--delta", "1e-6", "--center", "1,2,3"), 3).center == [1.0, 2.0, 3.0]
