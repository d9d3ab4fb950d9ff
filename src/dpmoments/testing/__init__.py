"""Tools for testing privacy claims empirically.

:func:`audit` samples a mechanism on two neighbouring datasets and returns a
high-confidence lower bound on its epsilon; :func:`epsilon_lower_bound` does
the same from samples already drawn. A correct mechanism gives a bound at or
below its claim; too little noise shows up as a bound above it.
"""

from .. import _lazy

# Imported on first use: the auditor loads scipy.stats only when it runs.
__getattr__, __dir__ = _lazy.lazy_exports(__name__, {
    "_audit": ("audit",),
    "_bound": ("AuditResult", "epsilon_lower_bound"),
})

__all__ = ["AuditResult", "audit", "epsilon_lower_bound"]
