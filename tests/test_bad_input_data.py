"""Bad interaction files through the real CLI: named, refused, no harm.

Each case writes a data file into an empty workspace, runs ``tfrec-tricks
train``, ``prepare`` or ``prepare --engine beam`` on it in a subprocess,
and asserts the exit code, the message, no traceback, and that every file
of the workspace is as it was (nothing written or left behind). The
positive cases (gzip, shard order, duplicates) are unit tests of both
reading paths in tests/data/test_input_files.py; two of them also run here
to check the line the CLI prints. docs/run-directories.md ("Bad input")
lists the same cases.
"""

import bz2
import dataclasses
import gzip
import io
import lzma
import zipfile
from collections.abc import Callable

import pytest

from tests.run_helpers import run_cli, snapshot

pytestmark = pytest.mark.slow

HEADER = "SessionId\tItemId\tTime\n"
# Enough sessions to train: 30 sessions of 5 clicks over 12 items.
SESSIONS = HEADER + "".join(
    f"s{s}\ti{(s + k) % 12}\t{1000 * s + k}\n"
    for s in range(30)
    for k in range(5)
)
TINY = ["--max-len", "5", "--embedding-dim", "8", "--epochs", "1"]


def _write(name, data):
    def setup(workspace):
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())

    return setup


def _zip(text):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("clicks.tsv", text)
    return buffer.getvalue()


@dataclasses.dataclass
class Case:
    id: str
    path: str
    messages: list
    setup: Callable
    beam: bool = False


CASES = [
    Case(
        "empty-item-id",
        "u.data",
        ["u.data:2: the item id is empty", "'1\\t\\t3\\t100'"],
        _write("u.data", "1\t10\t3\t90\n1\t\t3\t100\n"),
        beam=True,
    ),
    Case(
        "whitespace-session-id",
        "clicks.tsv",
        ["clicks.tsv:3: the SessionId is empty"],
        _write("clicks.tsv", HEADER + "1\t5\t1\n \t6\t2\n"),
    ),
    Case(
        "empty-recbole-item",
        "x.inter",
        ["x.inter:2: the item_id is empty"],
        _write("x.inter", "user_id:token\titem_id:token\n1\t\n"),
    ),
    Case(
        "quoted-ids",
        "clicks.tsv",
        ["clicks.tsv:2: the ItemId '\"i5\"' is in quotes", "without CSV"],
        _write("clicks.tsv", HEADER + '1\t"i5"\t1\n'),
        beam=True,
    ),
    Case(
        "data-path-is-a-directory",
        "logs",
        ["'logs' is a directory", "logs/*.tsv"],
        _write("logs/part-1.tsv", SESSIONS),
        beam=True,
    ),
    Case(
        "utf-16",
        "clicks.tsv",
        ["clicks.tsv: the file is UTF-16 encoded", "iconv -f utf-16"],
        _write("clicks.tsv", SESSIONS.encode("utf-16")),
        beam=True,
    ),
    Case(
        "utf-16-without-bom",
        "clicks.tsv",
        ["the file is UTF-16 encoded"],
        _write("clicks.tsv", SESSIONS.encode("utf-16-le")),
    ),
    Case(
        "bzip2",
        "clicks.tsv.bz2",
        ["clicks.tsv.bz2: the file is bzip2-compressed"],
        _write("clicks.tsv.bz2", bz2.compress(SESSIONS.encode())),
    ),
    Case(
        "xz",
        "clicks.tsv",
        ["clicks.tsv: the file is xz-compressed"],
        _write("clicks.tsv", lzma.compress(SESSIONS.encode())),
    ),
    Case(
        "zip",
        "clicks.zip",
        ["clicks.zip: the file is zip-compressed"],
        _write("clicks.zip", _zip(SESSIONS)),
    ),
    Case(
        "truncated-gzip",
        "clicks.tsv.gz",
        ["clicks.tsv.gz: the gzip data is damaged or truncated"],
        _write("clicks.tsv.gz", gzip.compress(SESSIONS.encode())[:-20]),
    ),
]

COMMANDS = {
    "train": ["train", *TINY],
    "prepare": ["prepare", "--output", "out"],
    "prepare-beam": ["prepare", "--engine", "beam", "--output", "out"],
}
PARAMS = [
    pytest.param(case, command, id=f"{command}-{case.id}")
    for case in CASES
    for command in COMMANDS
    if command != "prepare-beam" or case.beam
]


@pytest.mark.parametrize("case, command", PARAMS)
def test_bad_data_file_is_refused_and_harms_nothing(case, command, tmp_path):
    case.setup(tmp_path)
    before = snapshot(tmp_path)
    result = run_cli(
        *COMMANDS[command],
        "--data",
        "file",
        "--data-path",
        case.path,
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr[-2000:]
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    for message in case.messages:
        assert message in result.stderr, result.stderr[-2000:]
    assert snapshot(tmp_path) == before


def _duplicated(workspace):
    """Two shards; the last line of the second (gzip) copies the first
    click of the first (line 2)."""
    rows = SESSIONS.splitlines(keepends=True)[1:]
    (workspace / "logs").mkdir()
    (workspace / "logs" / "part-1.tsv").write_text(HEADER + "".join(rows[:75]))
    with gzip.open(workspace / "logs" / "part-10.tsv.gz", "wt") as handle:
        handle.write(HEADER + "".join(rows[75:]) + rows[0])


@pytest.mark.parametrize(
    "command, flags, done",
    [
        ("train", [], "dropped"),
        ("train", ["--no-drop-duplicates"], "kept"),
        ("prepare", [], "dropped"),
        ("prepare-beam", [], "dropped"),
    ],
)
def test_duplicates_are_reported(command, flags, done, tmp_path):
    _duplicated(tmp_path)
    result = run_cli(
        *COMMANDS[command],
        *flags,
        "--data",
        "file",
        "--data-path",
        "logs/part-*",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert (
        "Duplicates: 1 row repeats an earlier row exactly (same user, item, "
        "timestamp and every other field), the first "
    ) in result.stdout
    assert "logs/part-10.tsv.gz:77 (a copy of " in result.stdout
    assert "logs/part-1.tsv:2); " + done in result.stdout
