"""The JSON privacy report written beside every result, and its one-line summary on the console.

The console line uses the report's own field names (``guarantee``,
``neighbouring_relation``, ``noise_scale``, ...), so what a user reads on the
terminal is found under the same name in ``privacy_report.json``. The input
is described by its path as given on the command line (never resolved to an
absolute path) and, only with ``--fingerprint``, a hash of its bytes.
"""

import datetime
import sys

from .._version import __version__
from ._args import CLIPPING_HELP

__all__ = ["privacy_report", "privacy_summary", "randomness_text"]

_RANDOMNESS = {
    "os-entropy": "fresh OS entropy (numpy PCG64 seeded from the OS): the noise cannot be reproduced",
    "seeded": "seeded with --seed: reproducible, NOT secure (anyone with the seed can remove the noise)",
    "caller-generator": "a caller-supplied generator",
    "none": "no noise",
}


def privacy_report(command, release, *, source=None, fingerprint=None, analysis=None, argv=None, extra=None):
    """A JSON-able dict: guarantee, relation, sensitivity, calibration, mechanism, randomness, input, analysis."""
    g = release.guarantee
    report = {
        "dpmoments_version": __version__,
        "command": command,
        "arguments": list(sys.argv[1:] if argv is None else argv),
        "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "privacy": {
            "guarantee": str(g),
            "guarantee_detail": g.to_dict(),
            "certified": g.certified,
            "neighbouring_relation": release.neighbours,
            "mechanism": release.mechanism,
            "sensitivity": release.sensitivity,
            "sensitivity_norm": release.sensitivity_norm,
            "calibration": release.calibration,
            "noise_scale": release.noise_scale,
            "row_norm": release.row_norm,
            "center": None if release.center is None else release.center.tolist(),
            "clipping": CLIPPING_HELP,
            "randomness": release.randomness,
            "secure_randomness": release.secure,
            "randomness_note": _RANDOMNESS.get(release.randomness, release.randomness),
            "n_public": "n (the number of rows) is treated as public, as the guarantee assumes",
        },
        "release": release.to_dict(),
        "input": _input(source, release, fingerprint),
        "analysis": analysis or {},
    }
    if extra:
        report.update(extra)
    return report


def _input(source, release, fingerprint):
    info = {} if source is None else source.describe()
    info["shape"] = [release.n, release.n_features]
    if fingerprint is None:
        info["fingerprint"] = None
    else:
        info["fingerprint"] = dict(fingerprint, note=(
            "asked for with --fingerprint: a deterministic hash and size of the input file, for provenance. It is "
            "NOT differentially private: it tells apart inputs that differ in one row and confirms a guess of the "
            "exact file, so share this report only with those who may know that"))
    return info


def randomness_text(randomness, secure):
    return f"randomness {randomness}" + ("" if secure else " (NOT secure)")


def privacy_summary(release):
    """One line describing the guarantee, for the terminal, in the report's names (``privacy`` block)."""
    rel = release
    sens = "" if rel.sensitivity is None else f", sensitivity {rel.sensitivity:.3g} ({rel.sensitivity_norm})"
    cal = f", calibration {rel.calibration}" if rel.calibration else ""
    return (f"privacy: guarantee {rel.guarantee}, neighbouring_relation {rel.neighbours}; mechanism {rel.mechanism}, "
            f"noise_scale {rel.noise_scale:.3g}{sens}{cal}; row_norm {rel.row_norm:g} (rows clipped to it); "
            f"{randomness_text(rel.randomness, rel.secure)}")
