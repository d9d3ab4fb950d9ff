"""The documentation site builds from the docstrings, offline, with no new warnings.

Sphinx (autodoc + napoleon for the numpydoc-format docstrings, myst-parser for the
``docs/*.md`` pages) builds a copy of ``docs/`` into a temporary directory, so the
generated API stubs never land in the working tree. Every warning or error is a failure
except the few listed in ``KNOWN``: reStructuredText mistakes in docstrings of ``src/``
that predate the site. Fix the docstring, then delete its entry.

The second test keeps the code's citations of ``docs/algorithms.md`` honest: every
section number the code, the tests and the benchmarks cite exists there.
"""

import pathlib
import re
import shutil
import sys

import pytest

from .background import Job

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# (what the warning's first line contains, why it is tolerated for now)
KNOWN = []
_ENTRY = re.compile(r": (WARNING|ERROR|SEVERE|CRITICAL):")


def _entries(text):
    """Warnings as (first line, full text); continuation lines belong to the entry above."""
    out = []
    for line in text.splitlines():
        if _ENTRY.search(line) or not out:
            out.append([line])
        else:
            out[-1].append(line)
    return [(lines[0], "\n".join(lines)) for lines in out if lines[0].strip()]


def _docs_build(scratch, background):
    """Sphinx over a copy of docs/ in ``scratch``: (argv, cwd)."""
    src = scratch / "docs"
    shutil.copytree(DOCS, src, ignore=shutil.ignore_patterns("_build", "api"))
    (scratch / "benchmarks").symlink_to(ROOT / "benchmarks")  # the gallery reads ../benchmarks/results
    # Alone, -j auto reads and writes the pages on every core (about 50 CPU-s, most of it the API pages; every
    # extension declares itself parallel-safe); started beside the other tests, it takes the idle core only.
    jobs = "1" if background else "auto"
    return [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E", "-j", jobs, "-w", str(scratch / "warnings.txt"),
            str(src), str(scratch / "html")], None


DOCS_BUILD = Job("docs-build", _docs_build, timeout=300)


@pytest.mark.prestart(DOCS_BUILD)
def test_docs_site_builds_without_new_warnings():
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    proc, scratch = DOCS_BUILD.result()
    out, warnings_file = scratch / "html", scratch / "warnings.txt"
    assert proc.returncode == 0, proc.stderr[-3000:]
    new = [full for first, full in _entries(warnings_file.read_text())
           if not any(pattern in first for pattern, _ in KNOWN)]
    assert not new, "Sphinx warnings:\n" + "\n".join(new)[:5000]

    # The pages a reader starts from, the API from the docstrings, and the figures.
    for page in ("index", "algorithms", "architecture", "privacy", "errors", "gallery", "api"):
        assert (out / f"{page}.html").is_file(), page
    release = (out / "api" / "dpmoments.moments.html").read_text()
    assert "release_second_moment" in release and "Privacy" in release  # napoleon kept the Privacy section
    images = {p.name for p in (out / "_images").glob("*.png")}
    expected = {p.name for p in (DOCS / "images").glob("*.png")} | \
               {p.name for p in (ROOT / "benchmarks" / "results").glob("*.png")}
    assert expected <= images, sorted(expected - images)


def _headings(markdown):
    """Section numbers of the headings of a markdown file: '0.2', '2.6.1', '3', ..."""
    return set(re.findall(r"^#{1,6} (?:§\s*)?(\d+(?:\.\d+)*)[.\s]", markdown, flags=re.M))


def test_every_cited_algorithms_section_exists():
    sections = _headings((DOCS / "algorithms.md").read_text())
    cited = set()
    for folder in ("src", "tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in (".py", ".md") or not path.is_file():
                continue
            for match in re.finditer(r"algorithms\.md\W{0,4}((?:§\s*\d+(?:\.\d+)*[,;\s]*(?:and\s+)?)+)",
                                     path.read_text(encoding="utf-8")):
                cited.update(re.findall(r"§\s*(\d+(?:\.\d+)*)", match.group(1)))
    assert cited, "no citation of docs/algorithms.md found: the pattern is out of date"
    missing = sorted(cited - sections, key=lambda s: [int(p) for p in s.split(".")])
    assert not missing, f"cited but missing in docs/algorithms.md: {missing}"


def test_the_code_cites_only_documents_inside_the_repository():
    # A citation must be one a reader can open from a clone: docs/algorithms.md, never a bare
    # "algorithms.md" or a design note outside the repository.
    outside = re.compile(r"(?<![/\w])algorithms\.md|\bdesign/\w+\.md|\.\./shared")
    found = []
    for folder in ("src", "benchmarks", "tests"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in (".py", ".md", ".c") and path.is_file() and path.name != "test_docs_build.py":
                found += [f"{path.relative_to(ROOT)}: {m.group(0)}"
                          for m in outside.finditer(path.read_text(encoding="utf-8"))]
    found += [f"README.md: {m.group(0)}" for m in outside.finditer((ROOT / "README.md").read_text())]
    assert not found, found
