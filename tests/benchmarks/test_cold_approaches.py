"""cold_approaches: several cold_items reports on one table and chart."""

import json

import pytest

from benchmarks import cold_approaches


def _row(cold_hr, warm):
    def spread(value):
        return {"mean": value, "min": value, "max": value, "values": [value]}

    return {
        "cold hr@10": spread(cold_hr),
        "cold ndcg@10": spread(cold_hr / 3),
        "warm ndcg@10": spread(warm),
    }


def _report(path, data, warm, slot_gain):
    lists = {
        "model's list": _row(0.0, warm),
        "offset chosen on validation": _row(0.01, warm * 0.99),
        "slots": {
            str(r): _row(r * slot_gain, warm * (1 - 0.04 * r))
            for r in (1, 2, 3)
        },
        "offsets": {
            f"{s / 10:.1f}": _row(s / 100, warm * (1 - s / 20))
            for s in range(0, 11)
        },  # fmt: skip
    }
    numbers = {
        "data": data,
        "model": {"new items into the list": lists},
        "baselines": {
            "random": {"cold": {"hr@10": 0.006}},
            "popularity within attribute": {"cold": {"hr@10": 0.002}},
        },
    }
    path.write_text(json.dumps(numbers))
    return str(path)


def test_table_and_chart_compare_with_the_first_training(tmp_path):
    first = _report(tmp_path / "a.json", "ml-100k", 0.080, 0.02)
    second = _report(tmp_path / "b.json", "ml-100k", 0.076, 0.03)
    stem = tmp_path / "out" / "approaches"
    argv = ["--report", f"defaults={first}", "--report", f"drop={second}"]
    assert cold_approaches.main([*argv, "--output", str(stem)]) == 0
    text = (tmp_path / "out" / "approaches.md").read_text()
    lines = [line for line in text.splitlines() if line.startswith("| d")]
    assert len(lines) == 10  # 2 trainings x 5 lists
    assert lines[0].startswith("| defaults | model's list | 0.0000")
    assert lines[0].endswith("| +0.0% |")
    # The second training's own list costs 5% against the first's.
    assert lines[5].startswith("| drop | model's list |")
    assert lines[5].endswith("| -5.0% |")
    assert "| drop | 3 reserved slots | 0.0900 [0.0900, 0.0900]" in text
    assert lines[1].startswith(
        "| defaults | --new-item-boost chosen on validation | 0.0100"
    )
    assert "python -m benchmarks.cold_approaches --report" in text
    assert (tmp_path / "out" / "approaches.png").stat().st_size > 10_000


def test_reports_of_two_datasets_or_a_bad_label_are_refused(tmp_path, capsys):
    first = _report(tmp_path / "a.json", "ml-100k", 0.08, 0.02)
    other = _report(tmp_path / "b.json", "sports", 0.03, 0.02)
    for reports, said in [
        ([f"a={first}", f"b={other}"], "different datasets"),
        ([first], "a report is LABEL=PATH.json"),
        ([f"a={tmp_path / 'missing.json'}"], "missing.json"),
    ]:
        argv = [arg for text in reports for arg in ("--report", text)]
        with pytest.raises(SystemExit) as raised:
            cold_approaches.main([*argv, "--output", str(tmp_path / "o")])
        assert raised.value.code == 2
        assert said in capsys.readouterr().err
    assert not (tmp_path / "o.md").exists()
