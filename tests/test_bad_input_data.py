"""Bad interaction files through the real CLI: named, refused, no harm.

Each case writes a data file into an empty workspace, runs ``tfrec-tricks
train``, ``prepare`` or ``prepare --engine beam`` on it, and asserts the
exit code, the message, no traceback, and that every file of the workspace
is as it was (nothing written or left behind). ``train`` and ``prepare``
run in this process (``run_cli_here``: most of these refusals come after
TensorFlow's import, which a subprocess would pay for each case); ``prepare
--engine beam`` in a subprocess, as a Beam pipeline ends with its process. The
positive cases (gzip, shard order, duplicates) are unit tests of both
reading paths in tests/data/sources/test_input_files.py; two of them also
run here to check the line the CLI prints. docs/run-directories.md ("Bad input")
lists the same cases.
"""

import bz2
import dataclasses
import gzip
import io
import json
import lzma
import zipfile
from collections.abc import Callable

import pytest

from tests.run_helpers import run_cli, run_cli_here, snapshot

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
        "padding-token-item",
        "u.data",
        ["u.data:2: the item id '[PAD]' is the reserved padding token"],
        _write("u.data", "1\t10\t3\t90\n1\t[PAD]\t3\t100\n"),
        beam=True,
    ),
    Case(
        "padding-token-session-item",
        "clicks.tsv",
        ["clicks.tsv:3: the ItemId '[PAD]' is the reserved padding token"],
        _write("clicks.tsv", HEADER + "1\t5\t1\n1\t[PAD]\t2\n"),
        beam=True,
    ),
    Case(
        "gzip-utf-16",
        "clicks.tsv.gz",
        [
            "clicks.tsv.gz: the file is UTF-16 encoded (and gzip-compressed)",
            "gunzip -c clicks.tsv.gz | iconv -f utf-16 -t utf-8 > clicks.tsv",
        ],
        _write("clicks.tsv.gz", gzip.compress(SESSIONS.encode("utf-16"))),
        beam=True,
    ),
    Case(
        "format-not-told",
        "clicks.tsv",
        ["from its first line 's1,i1,1000 \\t\\n'", "pass --format"],
        _write("clicks.tsv", "s1,i1,1000 \t\n"),
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
    run = run_cli if command == "prepare-beam" else run_cli_here
    result = run(
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
    run = run_cli if command == "prepare-beam" else run_cli_here
    result = run(
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


# --- read as written: pipes, names with glob characters, trailing spaces --
# In-process (``cli.main``): the process boundary is not what is tested, and
# a FIFO needs its writer in this process.


def _fill_later(path_or_fd, data):
    """Writes ``data`` into a FIFO (a path) or a pipe's write end (an fd)
    from a thread, once a reader opens it; then closes it."""
    import threading

    def fill():
        with open(path_or_fd, "wb") as handle:
            handle.write(data)

    thread = threading.Thread(target=fill, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("kind", ["fifo", "process-substitution"])
def test_a_pipe_is_read_as_a_file(kind, command, tmp_path, monkeypatch):
    import os

    from tfrec_tricks import cli

    monkeypatch.chdir(tmp_path)
    data = SESSIONS.encode()
    if kind == "fifo":
        os.mkfifo("clicks.fifo")
        path, close = "clicks.fifo", None
        _fill_later(path, data)
    else:  # what bash passes for <(cat clicks.tsv)
        read_end, write_end = os.pipe()
        path, close = f"/dev/fd/{read_end}", read_end
        _fill_later(write_end, data)
    try:
        status = cli.main(
            [*COMMANDS[command], "--data", "file", "--data-path", path]
        )
    finally:
        if close is not None:
            os.close(close)
    assert status == 0
    if command == "train":
        (run,) = tmp_path.glob("runs/*/run.json")
        identity = json.loads(run.read_text())["fingerprint"]["data"][0]
        # Identified by what it held, as a file is.
        assert identity["bytes"] == len(data) and identity["sha256"]
    else:
        assert (tmp_path / "out" / "metadata.json").is_file()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_name_with_glob_characters_is_that_file(command, tmp_path, capsys):
    from tfrec_tricks import cli

    (tmp_path / "clicks[1].tsv").write_text(SESSIONS)
    # What the glob 'clicks[1].tsv' would match instead.
    (tmp_path / "clicks1.tsv").write_text(HEADER + "bad line\n")
    args = [*COMMANDS[command], "--data", "file", "--data-path"]
    with _chdir(tmp_path):
        status = cli.main([*args, "clicks[1].tsv"])
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]
    assert "clicks1.tsv" not in captured.err + captured.out


@pytest.mark.parametrize("command", ["prepare", "prepare-beam"])
def test_auto_format_tolerates_trailing_whitespace(command, tmp_path, capsys):
    from tfrec_tricks import cli

    # udata rows ending in a tab and spaces: 4 fields, as the reader says.
    rows = "".join(
        f"u{u}\ti{(u + k) % 12}\t1\t{1000 * u + k}\t  \n"
        for u in range(30)
        for k in range(5)
    )
    (tmp_path / "u.tsv").write_text(rows)
    with _chdir(tmp_path):
        status = cli.main(
            [*COMMANDS[command], "--data", "file", "--data-path", "u.tsv"]
        )
    captured = capsys.readouterr()
    assert status == 0, captured.err[-2000:]
    metadata = json.loads((tmp_path / "out" / "metadata.json").read_text())
    assert metadata["num_interactions"] == 150


def _chdir(path):
    import contextlib
    import os

    @contextlib.contextmanager
    def inside():
        before = os.getcwd()
        os.chdir(path)
        try:
            yield
        finally:
            os.chdir(before)

    return inside()
