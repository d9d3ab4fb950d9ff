"""``ast.parse`` for the tests that read the project's own source.

CPython 3.11 before 3.11.8 keeps the AST constructor's recursion depth in interpreter-wide state, so a parse
that runs while another thread parses (the suite's background lane, a figure drawn in a thread) can fail with
``SystemError: AST constructor recursion depth mismatch`` although the source is fine (CPython issue
gh-106905, fixed in 3.11.8). The parse is pure, so it is simply tried again.
"""

import ast


def parse(source, attempts=5):
    """The module's syntax tree; a spurious ``SystemError`` from the race above is retried."""
    for attempt in range(attempts):
        try:
            return ast.parse(source)
        except SystemError as error:
            if "recursion depth mismatch" not in str(error) or attempt == attempts - 1:
                raise
