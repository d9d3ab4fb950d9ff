"""The JSON privacy report written beside every result, and its one-line summary on the console.

The console line uses the report's own field names (``guarantee``,
``neighbouring_relation``, ``noise_scale``, ...), so what a user reads on the
terminal is found under the same name in ``privacy_report.json``. The input
is described by its path as given on the command line (never resolved to an
absolute path) and, only with ``--fingerprint``, a hash of its bytes.
"""

import datetime
import sys
import types

from .._rng import secure_randomness
from .._version import __version__
from ..estimators.summaries import rows_text  # noqa: F401 (the console's words, shared)
from ..estimators.summary import EXACT_NOISE, FLOAT_NOISE, privacy_summary, randomness_text  # noqa: F401
from ..privacy.relations import RELATION_WORDS, n_is_public
from ._args import CLIPPING_HELP

__all__ = ["privacy_report", "privacy_summary", "n_note", "recorded_arguments", "rows_text", "randomness_text",
           "randomness_note", "estimator_report"]

_RANDOMNESS = {
    "os-entropy": "fresh OS entropy (numpy PCG64 seeded from the OS): the noise cannot be reproduced; " + FLOAT_NOISE,
    "seeded": "seeded with --seed: reproducible, NOT secure (anyone with the seed can remove the noise)",
    "caller-generator": "a caller-supplied generator; " + FLOAT_NOISE,
    "none": "no noise",
}


def privacy_report(command, release, *, source=None, fingerprint=None, analysis=None, argv=None, extra=None):
    """A JSON-able dict: guarantee, relation, sensitivity, calibration, mechanism, randomness, input, analysis."""
    g = release.guarantee
    report = {
        "dpmoments_version": __version__,
        "command": command,
        "arguments": recorded_arguments(sys.argv[1:] if argv is None else argv),
        "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "privacy": {
            "guarantee": str(g),
            "guarantee_detail": g.to_dict(),
            "certified": g.certified,
            "neighbouring_relation": release.neighbours,
            "neighbouring_relation_meaning": RELATION_WORDS[release.neighbours],
            "mechanism": release.mechanism,
            "sensitivity": release.sensitivity,
            "sensitivity_norm": release.sensitivity_norm,
            "calibration": release.calibration,
            **({} if release.calibration_asked is None else {"calibration_note": release.calibration_note}),
            "noise_scale": release.noise_scale,
            "row_norm": release.row_norm,
            "center": None if release.center is None else release.center.tolist(),
            "clipping": clipping_text(release),
            "randomness": release.randomness,
            "secure_randomness": release.secure,
            "randomness_note": randomness_note(release.randomness, release.secure),
            "n_public": release.n_public,
            "n_note": n_note(release),
        },
        "release": release.to_dict(),
        "input": _input(source, release, fingerprint),
        "analysis": analysis or {},
    }
    if extra:
        report.update(extra)
    return report


PRIVATE_BOUND_CLIPPING = (
    "rows are clipped: every (centred) row x is scaled down to norm R when ||x||_2 > R, so no single row can move "
    "the result by more than the sensitivity the noise is calibrated to; here R was drawn privately (--row-norm "
    "auto: a noisy quantile of the row norms on a public grid, paid from its share of the budget, under "
    "private_choices), never computed exactly from the data: too small a bound biases the estimate towards zero, "
    "too large a bound adds more noise")


REUSED_BOUND_CLIPPING = PRIVATE_BOUND_CLIPPING.replace(
    "paid from its share of the budget, under private_choices", "the private location's own draw, reused (a table "
    "too small for two draws; no share of its own, the location's under private_choices)")


def clipping_text(release):
    """How the rows were clipped: to a public bound, or to one drawn privately (a ``row_norm`` part, or the
    location's bound reused as the row bound: moments/reused_bound.py)."""
    from ..moments.reused_bound import REUSED_NOTE

    if any(step.startswith(REUSED_NOTE) for step in (release.postprocessing or ())):
        return REUSED_BOUND_CLIPPING
    private = any(getattr(p, "label", None) == "row_norm" for p in (release.parts or ()))
    return PRIVATE_BOUND_CLIPPING if private else CLIPPING_HELP


SEED_WITHHELD = "<withheld>"


def recorded_arguments(argv):
    """The command line as given, less the value of ``--seed``: with the seed, anyone can redraw the noise.

    Any abbreviation argparse accepts (``--see 3``, ``--seed=3``) is caught.
    """
    out, hide_next = [], False
    for arg in map(str, argv):
        name, eq, _ = arg.partition("=")
        if hide_next:
            out.append(SEED_WITHHELD)
        elif len(name) >= 4 and "--seed".startswith(name):
            out.append(f"{name}={SEED_WITHHELD}" if eq else arg)
            hide_next = not eq
            continue
        else:
            out.append(arg)
        hide_next = False
    return out


def _input(source, release, fingerprint):
    info = {} if source is None else source.describe()
    info["shape"] = [release.n, release.n_features]
    if not getattr(release, "n_public", True):
        info["shape_note"] = "the row count is the noisy count (add-remove): the exact count is not reported"
    if fingerprint is None:
        info["fingerprint"] = None
    else:
        info["fingerprint"] = dict(fingerprint, note=(
            "asked for with --fingerprint: a deterministic hash and size of the input file, for provenance. It is "
            "NOT differentially private: it tells apart inputs that differ in one row and confirms a guess of the "
            "exact file, so share this report only with those who may know that"))
    return info


def n_note(release):
    """What the released n is, in words (the exact count only where the relation makes it public)."""
    if release.n_public:
        return f"n = {release.n} rows, public under {release.neighbours} (the relation fixes it)"
    if release.count_noise_scale is None:
        return f"n = {release.n} rows, exact: epsilon = inf, nothing is private"
    return (f"n = {release.n} is a noisy row count ({release.mechanism} noise, scale {release.count_noise_scale:.3g}, "
            f"{release.count_share:g} of the budget); the exact count is not released")


def randomness_note(randomness, secure):
    """The report's words for where the noise came from and what kind it is."""
    return f"fresh OS entropy; {EXACT_NOISE}" if secure else _RANDOMNESS.get(randomness, randomness)


def estimator_report(command, guarantee, *, privacy, source, fingerprint, n, d, analysis, argv, randomness,
                     files, extra=None, neighbours="replace-one"):
    """A privacy report with the layout of :func:`._report.privacy_report`, for estimators without a Release.

    Their noise is float noise from numpy, never exact discrete noise, so it
    is never reported secure (:func:`dpmoments._rng.secure_randomness`).
    """
    block = {
        "guarantee": str(guarantee),
        "guarantee_detail": guarantee.to_dict(),
        "certified": guarantee.certified,
        "neighbouring_relation": neighbours,
        "neighbouring_relation_meaning": RELATION_WORDS[neighbours],
        "mechanism": None, "sensitivity": None, "sensitivity_norm": None, "calibration": None,
        "noise_scale": None, "row_norm": None, "center": None,
        "clipping": CLIPPING_HELP,
        "randomness": randomness,
        "secure_randomness": secure_randomness(randomness, exact_discrete=False),
        "randomness_note": randomness_note(randomness, False),
        "n_public": n_is_public(neighbours),
        "n_note": f"n = {n} rows, public under {neighbours} (the relation fixes it)",
    }
    block.update(privacy)
    report = {
        "dpmoments_version": __version__,
        "command": command,
        "arguments": recorded_arguments(sys.argv[1:] if argv is None else argv),
        "created_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "privacy": block,
        "release": None,
        "input": _input(source, types.SimpleNamespace(n=n, n_features=d), fingerprint),
        "analysis": analysis,
        "files": list(files) + ["privacy_report.json"],
    }
    if extra:
        report.update(extra)
    return report
