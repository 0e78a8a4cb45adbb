"""The heaviest-first order of test files and its record."""

import json
import pathlib

from tests import heaviest_first as order

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_files_go_heaviest_first_and_keep_their_tests_order():
    nodeids = [
        "tests/light.py::test_a",
        "tests/heavy.py::test_a",
        "tests/new.py::test_a",
        "tests/light.py::test_b",
        "tests/heavy.py::Case::test_b",
    ]
    seconds = {"tests/light.py": 3.0, "tests/heavy.py": 600.0}

    indices = order.heaviest_first(nodeids, seconds)

    assert [nodeids[i] for i in indices] == [
        "tests/heavy.py::test_a",
        "tests/heavy.py::Case::test_b",
        "tests/light.py::test_a",
        "tests/light.py::test_b",
        "tests/new.py::test_a",
    ]


def test_seconds_are_summed_per_file_from_a_junit_report(tmp_path):
    report = tmp_path / "junit.xml"
    report.write_text(
        "<testsuites><testsuite>"
        '<testcase classname="tests.export.test_x" name="t1" time="1.5"/>'
        '<testcase classname="tests.export.test_x.Case" name="t2" time="2"/>'
        '<testcase classname="tests.test_y" name="t3" time="0.25"/>'
        "</testsuite></testsuites>"
    )

    assert order.seconds_from_junit(report) == {
        "tests/export/test_x.py": 3.5,
        "tests/test_y.py": 0.25,
    }


def test_the_record_names_only_test_files_that_exist():
    # A renamed file keeps its weight only if the record follows it.
    recorded = json.loads(order.DURATIONS.read_text())
    stale = [name for name in recorded if not (ROOT / name).is_file()]
    assert not stale, f"file_durations.json names missing files: {stale}"
    assert recorded["tests/tuning/test_resume_and_distributed.py"] > 100
