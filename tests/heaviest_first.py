"""Test files ordered heaviest first, so two xdist workers end together.

With ``--dist=loadfile`` each file runs whole in one worker, taken in
collection order. pytest-xdist's default reorder puts the files with the
most tests first, which sent the slowest files (three real KerasTuner
searches, 646 s) to the end, where one worker ran them alone while the
other idled. Longest-processing-time-first ordering from measured
seconds per file balances the two workers instead (``pyproject.toml``
turns the reorder off with ``--no-loadscope-reorder``).

Refresh the measured seconds after a run with ``--junitxml``:

    pytest -n 2 tests --junitxml=/tmp/junit.xml
    python -m tests.heaviest_first /tmp/junit.xml
"""

import collections
import json
import pathlib
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence

DURATIONS = pathlib.Path(__file__).with_name("file_durations.json")


def file_of(nodeid: str) -> str:
    """The file of a node id: ``tests/a.py::T::t`` -> ``tests/a.py``."""
    return nodeid.split("::", 1)[0]


def heaviest_first(nodeids: Sequence[str], seconds: dict) -> list[int]:
    """Indices of ``nodeids``, files by measured seconds, heaviest first.

    Files not measured yet count as zero (they go last); the sort is
    stable, so a file's tests and equally heavy files keep their order.
    """
    return sorted(
        range(len(nodeids)),
        key=lambda i: -seconds.get(file_of(nodeids[i]), 0.0),
    )


def load_seconds(path: pathlib.Path = DURATIONS) -> dict:
    """The recorded seconds per test file, ``{}`` if there is no record."""
    if not path.exists():
        return {}
    return json.loads(path.read_text())


def seconds_from_junit(path: str | pathlib.Path) -> dict:
    """Seconds per test file summed from a pytest ``--junitxml`` report."""
    seconds: collections.Counter = collections.Counter()
    for case in ET.parse(path).iter("testcase"):
        parts = (case.get("classname") or "").split(".")
        # The class name of a test method is not part of the file.
        while parts and parts[-1][:1].isupper():
            parts.pop()
        seconds["/".join(parts) + ".py"] += float(case.get("time") or 0)
    return dict(seconds)


def main(argv: Sequence[str]) -> int:
    """Writes ``file_durations.json`` from the junit reports given."""
    if not argv:
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    seconds = load_seconds()
    for report in argv:
        seconds.update(seconds_from_junit(report))
    root = DURATIONS.parent.parent
    kept = {
        name: round(value, 1)
        for name, value in sorted(seconds.items())
        if (root / name).is_file()
    }
    DURATIONS.write_text(json.dumps(kept, indent=1) + "\n")
    print(f"{len(kept)} test files' seconds written to {DURATIONS}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
