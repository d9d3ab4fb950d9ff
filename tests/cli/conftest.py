import pytest

from .helpers import in_process


@pytest.fixture
def run(capsys):
    """``run(*args)``: the command line in process (see ``helpers.in_process``)."""
    return in_process(capsys)
