"""A data frame's bad column is named: text, a date, a pandas NA, a NaN or an infinity, never a value."""

import numpy as np
import pytest

import dpmoments as dpm

pd = pytest.importorskip("pandas")

KW = dict(epsilon=1.0, delta=1e-6, row_norm=1.0, rng=0)


def _frame():
    return pd.DataFrame(np.random.default_rng(0).normal(size=(40, 3)) / 3, columns=["age", "bmi", "bp"])


def _text(d):
    d["bmi"] = d["bmi"].astype(object)
    d.loc[3, "bmi"] = "SECRET-7"


def _na(d):
    d["bmi"] = d["bmi"].astype("Float64")
    d.loc[3, "bmi"] = pd.NA


def _nan(d):
    d.loc[3, "bmi"] = np.nan
    d.loc[5, "bp"] = np.inf


def _date(d):
    d["bmi"] = pd.to_datetime("2020-01-01")


@pytest.mark.parametrize("spoil, words", [(_text, "not text"), (_na, "missing value"),
                                          (_nan, "has NaN or infinite values (other columns have some too); remove or impute them first (a public value"),
                                          (_date, "not numeric")])
@pytest.mark.parametrize("entry", ["release", "estimator"])
def test_the_bad_column_is_named(spoil, words, entry):
    d = _frame()
    spoil(d)
    fit = (lambda: dpm.release_second_moment(d, **KW, center=None)) if entry == "release" else \
        (lambda: dpm.PrivateCovariance(**KW).fit(d))
    with pytest.raises((TypeError, ValueError)) as info:
        fit()
    text = str(info.value)
    assert "'X' column 'bmi'" in text and words in text, text
    assert "SECRET" not in text and "row 3" not in text
