"""The reproductions' shared command line refuses what would clobber a file or write an empty result (hunt3)."""

import pytest

from dpmoments.reproduce import _common


def _table(**_):
    return "# a table\n"


@pytest.mark.parametrize("main", [_common.main_for, _common.main_quick])
def test_out_must_be_a_markdown_file_so_no_data_file_is_overwritten(main, tmp_path, capsys):
    data = tmp_path / "patients.csv"
    data.write_text("a,b\n1,2\n")
    with pytest.raises(SystemExit) as exc:
        main("demo", _table, "doc", ["--out", str(data)])
    assert exc.value.code == 2 and data.read_text() == "a,b\n1,2\n"
    assert "--out must be a markdown file" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--reps", "--jobs"])
@pytest.mark.parametrize("value", ["0", "-3", "x"])
def test_zero_or_negative_replications_are_refused_not_written_as_an_empty_table(flag, value, tmp_path):
    out = tmp_path / "r.md"
    out.write_text("old results\n")
    with pytest.raises(SystemExit) as exc:
        _common.main_for("demo", _table, "doc", [flag, value, "--out", str(out)])
    assert exc.value.code == 2 and out.read_text() == "old results\n"


def test_the_markdown_is_replaced_whole_and_no_temporary_is_left(tmp_path, capsys):
    out = tmp_path / "r.md"
    out.write_text("old results\n")

    def broken(**_):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _common.main_quick("demo", broken, "doc", ["--out", str(out)])
    assert out.read_text() == "old results\n"
    _common.main_quick("demo", _table, "doc", ["--out", str(out)])
    assert out.read_text() == "# a table\n" and sorted(p.name for p in tmp_path.iterdir()) == ["r.md"]
