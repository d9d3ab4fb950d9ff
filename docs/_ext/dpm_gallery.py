"""The ``dpm-gallery`` directive: every PNG in a folder, as figures with captions.

Usage (MyST)::

    ```{dpm-gallery} ../benchmarks/results
    cape_pca_eps.png: capePCA's captured energy against epsilon.
    ```

The folder is relative to the page. Every ``*.png`` in it is shown, so a figure a new
reproduction writes appears without editing the page. The content lines give captions
(``file.png: text``, reStructuredText inline markup) and the order: captioned figures first, in
the order given, then the others by name, captioned by their file name. A caption for a file
that no longer exists is ignored: the gallery follows the folder.
"""

import pathlib

from docutils import nodes
from docutils.parsers.rst import Directive, directives

__all__ = ["setup"]


def _captions(lines):
    out = {}
    for line in lines:
        name, sep, text = line.partition(":")
        if sep and name.strip():
            out[name.strip()] = text.strip()
    return out


class Gallery(Directive):
    required_arguments = 1
    has_content = True
    option_spec = {"width": directives.unchanged}

    def run(self):
        env = self.state.document.settings.env
        folder_arg = self.arguments[0]
        _, folder = env.relfn2path(folder_arg, env.docname)
        folder = pathlib.Path(folder)
        if not folder.is_dir():
            raise self.error(f"dpm-gallery: no folder {folder_arg!r} (relative to {env.docname!r})")
        captions = _captions(self.content)
        order = {name: i for i, name in enumerate(captions)}
        pngs = sorted(folder.glob("*.png"), key=lambda p: (order.get(p.name, len(order)), p.name))
        figures = []
        for png in pngs:
            env.note_dependency(str(png))
            figure = nodes.figure(align="center")
            uri = f"{folder_arg.rstrip('/')}/{png.name}"
            figure += nodes.image(uri=uri, alt=png.stem, width=self.options.get("width", "80%"))
            text = captions.get(png.name) or png.stem.replace("_", " ")
            inline, messages = self.state.inline_text(f"{text} (``{png.name}``)", self.lineno)
            figure += nodes.caption("", "", *inline)
            figures.extend([figure, *messages])
        if not figures:
            figures.append(nodes.paragraph(text=f"(no figures in {folder_arg} yet)"))
        return figures


def setup(app):
    app.add_directive("dpm-gallery", Gallery)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
