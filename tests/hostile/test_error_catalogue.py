"""Every catalogued bad input gets its documented error, and docs/errors.md is current."""

import pathlib

import pytest

from . import catalogue_io
from .catalogue import CASES, markdown, outcome

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "errors.md"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_a_clear_error(case):
    ident, where, what, thunk, expected, fragment = case
    kind, message = outcome(thunk)
    if where == "CLI":
        assert kind == expected, f"{ident}: exit {kind}: {message}"
        assert "Traceback" not in message and message.count("\n") == 0
    else:
        assert kind is not None and issubclass(kind, expected), f"{ident}: got {kind}: {message}"
    assert fragment in message, f"{ident}: {message!r} does not mention {fragment!r}"
    for value in ("oops", "JANE", catalogue_io.SECRET, "977"):  # cells of the hostile files: never echoed
        assert value not in message, f"{ident}: the message quotes a data value: {message!r}"


def test_at_least_thirty_distinct_cases():
    assert len({c[0] for c in CASES}) >= 30


def test_errors_doc_is_current():
    assert DOC.read_text() == markdown(), "regenerate: python -m tests.hostile.catalogue > docs/errors.md"
