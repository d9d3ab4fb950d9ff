"""The command line's numbers: text Python would read in a way no user means is refused."""

import argparse

import pytest

from dpmoments.cli._numbers import _bound, _epsilon, _share


@pytest.mark.parametrize("parse, text", [(_epsilon, "1_0"), (_bound, "1_000"), (_share, "0.1_5")])
def test_underscores_in_numbers_are_refused(parse, text):
    # Old: float("1_0") == 10, so --epsilon 1_0 spent ten times the budget a reader of the command sees.
    with pytest.raises(argparse.ArgumentTypeError, match="expected a number"):
        parse(text)


def test_plain_numbers_still_parse():
    assert _epsilon("1e-3") == 1e-3 and _bound("10") == 10.0 and _share("0.15") == 0.15
