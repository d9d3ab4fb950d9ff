"""The Python examples of the README and of the user guide's pages run as written.

Each page's blocks run in order, sharing one namespace per page (a page is read top to bottom).
"""

import pathlib
import re
import warnings

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The pages a user copies from: the README and the guide's task pages with Python examples.
PAGES = ["README.md", "docs/python.md", "docs/across-sites.md", "docs/bounds.md"]


@pytest.mark.parametrize("page", PAGES)
def test_python_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes a file (bounds.md's grunfeld.csv) writes it here
    path = ROOT / page
    blocks = re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)
    assert blocks, f"{page} has no python examples"
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for block in blocks:
            exec(compile(block, str(path), "exec"), namespace)  # noqa: S102


def test_readme_is_one_page_that_links_the_guide():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 300
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / link).is_file(), link
