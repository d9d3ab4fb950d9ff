"""One set of defaults: the command line, the estimators and the release function agree.

Given only epsilon and delta, each way in centres the rows about a private mean, draws the row
bound privately, holds under replace-one and splits the budget the same way: read from their
signatures and parsers, and from the releases they make of one table with one seed.
"""

import inspect
import warnings

import numpy as np
import pytest

from dpmoments import release_second_moment
from dpmoments.cli import build_parser
from dpmoments.cli._args import center_asked
from dpmoments.cli._choices import bound_budget, center_budget, choices_of
from dpmoments.estimators import (CenterBudget, PrivateCovariance, PrivateGraphicalLasso, PrivatePCA,
                                  PrivateRidgePrecision)
from dpmoments.moments import BoundBudget

from .cli.helpers import in_process, report

EPS, DELTA = 1.0, 1e-6
ESTIMATORS = {
    "covariance": lambda **kw: PrivateCovariance(**kw),
    "pca": lambda **kw: PrivatePCA(n_components=2, **kw),
    "precision": lambda **kw: PrivateGraphicalLasso(**kw),
    "ridge": lambda **kw: PrivateRidgePrecision(**kw),
}
COMMANDS = {  # command line -> the extra arguments each needs
    "covariance": [], "pca": ["--n-components", "2"], "precision": [], "correlation": [],
    "simulate": ["--analysis", "covariance"], "noise-generator": ["--sites", "a=100,b=100", "--n-features", "3"],
}


def _defaults(fn):
    return {k: p.default for k, p in inspect.signature(fn).parameters.items() if p.default is not p.empty}


@pytest.mark.parametrize("way", [*ESTIMATORS, "release_second_moment"])
def test_the_library_defaults_are_one_set(way):
    signature = _defaults(release_second_moment if way not in ESTIMATORS else type(ESTIMATORS[way]()).__init__)
    assert signature["center"] == "private" and signature["row_norm"] == "auto"
    assert signature["neighbours"] == "replace-one" and signature["mechanism"] == "gaussian"
    assert signature["center_budget"] is None and signature["bound_budget"] == 0.1  # CenterBudget(), 0.1 of it
    assert signature["scale"] is None and signature["ranges"] is None


@pytest.mark.parametrize("command", COMMANDS)
def test_the_command_line_defaults_are_the_librarys(command, tmp_path):
    argv = [command, *(["data.csv"] if command != "noise-generator" else []), "--epsilon", "1", "--delta", "1e-6",
            *COMMANDS[command], "--out", str(tmp_path / "o")]
    args = build_parser().parse_args(argv)
    assert center_asked(args) == "private" and args.row_norm == "auto"
    assert args.neighbours == "replace-one" and getattr(args, "mechanism", "gaussian") == "gaussian"
    choices = choices_of(args)
    assert bound_budget(choices).share == BoundBudget().share == 0.1
    if command in ("simulate", "noise-generator"):
        from dpmoments.multisite.location import MEAN_SHARE
        # Across sites the location is found by another procedure (the sites' histograms), with its own share;
        # the mean's share is the library's.
        assert MEAN_SHARE == CenterBudget().mean
    else:
        assert center_budget(choices) == CenterBudget()


def _table(tmp_path):
    X = np.random.default_rng(0).normal(loc=[40.0, 5.0, -3.0], scale=[10.0, 1.0, 2.0], size=(3000, 3))
    path = tmp_path / "t.csv"
    np.savetxt(path, X, delimiter=",", header="a,b,c", comments="")
    return X, path


def _parts(parts):
    return [(p["label"], round(p["share"], 9)) if isinstance(p, dict) else (p.label, round(p.share, 9))
            for p in parts]


@pytest.mark.parametrize("command", ["pca", "precision"])  # covariance's release is PCA's (both count clipping)
def test_the_releases_agree_through_the_three_ways(command, tmp_path, capsys):
    """The same table, epsilon and delta: the same parts and shares, centre kind, relation and guarantee."""
    X, path = _table(tmp_path)
    run = in_process(capsys)
    extra = ["--n-components", "2"] if command == "pca" else []
    res = run(command, path, "--epsilon", EPS, "--delta", DELTA, "--seed", 1, *extra, "--out", tmp_path / "o", "-q",
              "--no-figures")
    assert res.returncode == 0, res.stderr
    cli_release = report(tmp_path / "o")["release"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ESTIMATORS[command](epsilon=EPS, delta=DELTA, rng=1).fit(X)
        rel = release_second_moment(X, epsilon=EPS, delta=DELTA, rng=1)
    assert _parts(cli_release["parts"]) == _parts(est.release_.parts)
    assert cli_release["centered"] and est.release_.center is not None and rel.center is not None
    assert cli_release["neighbours"] == est.release_.neighbours == rel.neighbours == "replace-one"
    assert cli_release["guarantee"] == est.privacy_.to_dict()
    assert str(rel.guarantee) == str(est.privacy_) == f"({EPS:g}, {DELTA:g})-DP"
    assert _parts(rel.parts) == _parts(est.release_.parts)


def test_the_tensor_estimator_draws_its_bound_privately_and_keeps_a_public_centre_by_design():
    """As ``dpmoments tensor``: the bound private by default; no private centre (about the data's mean the
    mixture's means are linearly dependent and cannot be recovered)."""
    from dpmoments.estimators import PrivateTensorDecomposition

    signature = _defaults(PrivateTensorDecomposition.__init__)
    assert signature["row_norm"] == "auto" and signature["center"] is None and signature["bound_budget"] == 0.1
    with pytest.raises(ValueError, match="private centre would be the data's mean"):
        PrivateTensorDecomposition(n_components=1, model="mog", sigma2=0.1, epsilon=1.0, delta=1e-6,
                                   center="private").fit(np.zeros((10, 2)))


@pytest.mark.parametrize("kwargs, words", [
    (dict(secure=True), "secure=True"),
    (dict(mechanism="wishart"), "center=None or a vector"),
    (dict(center="mean"), "'center' must be"),
    (dict(center_budget=0.2), "'center_budget'"),
    (dict(sparse=True), "scipy.sparse"),
])
def test_what_the_default_private_choices_cannot_take_is_refused_naming_the_public_values(kwargs, words):
    from scipy import sparse

    X = np.ones((50, 2))
    if kwargs.pop("sparse", False):
        X = sparse.csr_array(X)
    with pytest.raises((TypeError, ValueError), match=words):
        release_second_moment(X, epsilon=EPS, delta=DELTA, **kwargs)


def test_an_analysis_without_a_row_bound_takes_the_default_bound_silently_and_refuses_a_typed_one(tmp_path, capsys):
    run = in_process(capsys)
    deal = ("noise-generator", "--sites", "a=2000,b=2000", "--n-features", 3, "--analysis", "tensor-stm",
            "--vocabulary-size", 10, "--epsilon", 1, "--delta", "1e-6")
    res = run(*deal, "--out", tmp_path / "default")
    assert res.returncode == 0, res.stderr
    res = run(*deal, "--row-norm", "auto", "--out", tmp_path / "typed")
    assert res.returncode == 2 and "--row-norm auto has no use with --analysis tensor-stm" in res.stderr


def test_select_draws_its_radius_privately_by_default_alone_and_across_sites():
    """``--R`` defaults to "private" in ``select`` and across sites, as ``PrivateModelSelection(R="private")``."""
    from dpmoments.estimators import PrivateModelSelection

    assert _defaults(PrivateModelSelection.__init__)["R"] == "private"
    for argv in (["select", "d.csv", "--target", "y"], ["simulate", "a.csv", "b.csv", "--analysis", "select",
                                                         "--target", "y", "--delta", "1e-6"]):
        args = build_parser().parse_args([*argv, "--epsilon", "1", "--out", "o"])
        assert args.R == "private"


def test_a_private_radius_from_a_release_is_the_full_fit_s_l1_norm_and_costs_nothing():
    """``fit_release`` with ``R="private"``: the L1 norm of the full model fitted to the released moments
    (post-processing: the guarantee is the release's), near the true one when the noise is small."""
    from dpmoments.estimators import PrivateModelSelection
    from dpmoments.moments.releases import release_public_second_moment

    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, size=(4000, 3))
    y = X @ np.array([0.8, -0.5, 0.0]) + 0.05 * rng.normal(size=4000)
    rel = release_public_second_moment(np.c_[X, y] / 2, row_norm=1.0, epsilon=50.0, delta=1e-6, rng=0)
    est = PrivateModelSelection(epsilon=1.0, bounds=1.0, response_bound=1.0, sigma2=0.01, rng=0).fit_release(rel)
    assert abs(est.R_ - 1.3) < 0.1 and est.privacy_ == rel.guarantee
    assert est.privacy_report_["R_source"].startswith("the release's full-model fit")
    assert est.selected_ == (0, 1)


@pytest.mark.parametrize("argv", [
    ["covariance", "d.csv"], ["tensor", "d.csv"], ["simulate", "a.csv", "b.csv"],
    ["noise-generator", "--sites", "a=100,b=100", "--columns", "age,score,smoker"],
])
def test_ranges_are_one_option_alone_across_sites_and_on_tensor(argv):
    """``--ranges`` parses the same everywhere, and every way in takes ``ranges=`` (default none)."""
    from dpmoments.cli._ranges import ranges_of
    from dpmoments.estimators import PrivateTensorDecomposition
    from dpmoments.multisite import Plan, Site

    args = build_parser().parse_args([*argv, "--epsilon", "1", "--delta", "1e-6", "--out", "o",
                                      "--ranges", "age=0:120,smoker=0:1"])
    assert ranges_of(args) == {"age": (0.0, 120.0), "smoker": (0.0, 1.0)}
    for fn in (release_second_moment, PrivateCovariance.__init__, PrivateTensorDecomposition.__init__,
               Site.__init__, Plan.build):
        assert _defaults(fn)["ranges"] is None


def test_regress_has_one_set_of_defaults_alone_and_across_sites():
    """An intercept, 10 iterations, a private response bound and w_max = 5 / B: PrivateIRLS, 'regress', the
    wing's irls() and the multi-site commands (their copies of the constants agree)."""
    from dpmoments.cli._multisite import INTERCEPT_SHARE, plan_options, response_bound_of
    from dpmoments.estimators import PrivateIRLS
    from dpmoments.estimators.model_defaults import INTERCEPT_SCALE, N_ITER, W_MAX_AUTO
    from dpmoments.multisite import irls
    from dpmoments.multisite.analyses import IRLS_DEFAULTS

    assert IRLS_DEFAULTS == {"n_iter": N_ITER, "w_max_per_bound": W_MAX_AUTO, "intercept": INTERCEPT_SCALE,
                             "sampling_budget": PrivateIRLS(epsilon=1.0, delta=1e-6).sampling_budget}
    assert INTERCEPT_SHARE == INTERCEPT_SCALE
    est = _defaults(PrivateIRLS.__init__)
    assert est["fit_intercept"] is True and est["response_bound"] == "auto" and est["n_iter"] == N_ITER
    wing = _defaults(irls)
    assert wing["fit_intercept"] is True and wing["n_iter"] == N_ITER and wing["w_max"] is None
    assert wing["sampling_budget"] == est["sampling_budget"] == 0.1  # intervals for the population, both ways
    for argv in (["regress", "d.csv", "--target", "y"],
                 ["simulate", "a.csv", "b.csv", "--analysis", "regress", "--target", "y", "--delta", "1e-6"]):
        args = build_parser().parse_args([*argv, "--epsilon", "1", "--out", "o"])
        assert args.fit_intercept is True
    assert response_bound_of(args) == "auto"
    assert plan_options(args) == {"n_iter": N_ITER, "w_max": None, "p": 1.0, "w_max_per_bound": W_MAX_AUTO,
                                  "intercept": INTERCEPT_SCALE, "sampling_budget": est["sampling_budget"]}


def test_ridge_precision_has_no_penalty_default_and_says_so_before_spending():
    """Its default was alpha='ebic', which only the graphical lasso takes: every default fit failed (after the
    release) with "'alpha' must be a real number". Now required, as --method ridge requires --alpha."""
    from dpmoments.privacy import Accountant, ApproxDP

    acct = Accountant(ApproxDP(1.0, 1e-6))
    for alpha in (None, "ebic"):
        with pytest.raises(ValueError, match="needs a numeric alpha > 0"):
            PrivateRidgePrecision(alpha=alpha, epsilon=EPS, delta=DELTA, accountant=acct).fit(np.ones((50, 2)))
    assert acct.ledger == ()  # refused before the release: nothing spent


@pytest.mark.parametrize("cls, extra", [(PrivateCovariance, {}), (PrivateRidgePrecision, {"alpha": 0.1})])
def test_a_malformed_epsilon_is_named_before_anything_is_spent(cls, extra):
    """epsilon='1' reached math.isinf in the release and came back as "must be real number, not str",
    naming no parameter; the declared check names it (as PrivateIRLS and the tensor did)."""
    from dpmoments.privacy import Accountant, ApproxDP

    acct = Accountant(ApproxDP(1.0, 1e-6))
    with pytest.raises(TypeError, match="'epsilon' must be a real number; got str"):
        cls(epsilon="1", delta=DELTA, accountant=acct, **extra).fit(np.ones((50, 2)))
    assert acct.ledger == ()
