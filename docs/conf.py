"""Sphinx configuration of the dpmoments documentation site.

Build it (no network needed) with ``python -m sphinx -b html -W docs docs/_build/html``
after ``pip install ".[docs]"`` (``tests/test_docs_build.py`` does the same into a
temporary directory). The API pages are generated from the docstrings at build time
(autosummary, recursive from the package root), so a new module or function appears
without editing anything here; the figure gallery globs the folders the command line
and the reproductions write to.
"""

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

import dpmoments  # noqa: E402  (after the path set-up; the installed or PYTHONPATH package)
from dpm_api import api_map  # noqa: E402

project = "dpmoments"
author = "the dpmoments developers"
copyright = "2026, the dpmoments developers"
release = dpmoments.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    # The docstrings follow the numpydoc format. napoleon (not the numpydoc extension) renders
    # them because it keeps the project's own "Privacy" section, which numpydoc drops as unknown.
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "myst_parser",
    "dpm_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "**/.ipynb_checkpoints"]
templates_path = ["_templates"]

# -- API pages from the docstrings ------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc sections already state the types
# Each public object is documented once, on its home page (see _ext/dpm_api.py).
_documented, _links, _submodules = api_map("dpmoments")
autosummary_context = {"dpm_documented": _documented, "dpm_links": _links, "dpm_submodules": _submodules}
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
# Types stay plain text: "ndarray of shape (n_samples, n_features)" is prose, not a cross-reference.
napoleon_use_param = False
napoleon_use_ivar = True
napoleon_custom_sections = ["Privacy"]

# The docstrings cite their references by label ([BW18]) in prose, and several modules cite
# the same paper under the same label: citations are per docstring, not site-wide targets.
suppress_warnings = ["ref.citation"]


def _skip_member(app, what, name, obj, skip, options):
    """Leave out scikit-learn's generated metadata-routing methods (set_fit_request, ...)."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def _no_type_docstring(app, what, name, obj, options, lines):
    """A module constant without a doc comment would show its type's docstring (dict's, tuple's)."""
    if what in ("data", "attribute") and lines and type(obj).__doc__ and \
            "\n".join(lines).strip() == type(obj).__doc__.strip():
        lines.clear()


def setup(app):
    app.connect("autodoc-skip-member", _skip_member)
    app.connect("autodoc-process-docstring", _no_type_docstring)


# -- Markdown pages (the docs/*.md files are read as they are on GitHub) -----------------------
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 4

# -- Output -----------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"dpmoments {release}"
html_static_path = []
nitpicky = False
