"""errors: malformed lines, and failed writes told from other errors."""

import errno

import pytest

from tfrec_tricks.errors import (
    NO_SPACE,
    NOT_WRITABLE,
    WriteFailedError,
    malformed_line,
    named_write_failure,
    write_failed,
    write_failure,
    writes_named,
)


def test_malformed_line_names_file_line_and_shortens_the_line():
    error = malformed_line("u.data", 7, "x" * 100 + "\n", "3 fields expected")
    message = str(error)
    assert message.startswith("u.data:7: 3 fields expected. Received line: ")
    assert repr("x" * 77 + "...") in message
    assert repr("short") in str(malformed_line("f", 1, "short\n", "why"))


@pytest.mark.parametrize(
    "code, kind",
    [
        (errno.ENOSPC, NO_SPACE),
        (errno.EDQUOT, NO_SPACE),
        (errno.EACCES, NOT_WRITABLE),
        (errno.EROFS, NOT_WRITABLE),
    ],
)
def test_write_failure_is_found_through_the_chain(code, kind):
    try:
        try:
            raise OSError(code, "os says no", "runs/a/x")
        except OSError as cause:
            raise RuntimeError("saving failed") from cause
    except RuntimeError as error:
        failure = write_failure(error)
    assert (failure.kind, failure.path) == (kind, "runs/a/x")
    assert write_failure(OSError(errno.ENOENT, "missing", "a")) is None
    assert write_failure(ValueError("bad value")) is None


def test_a_missing_permission_elsewhere_is_not_the_targets():
    denied = PermissionError(errno.EACCES, "Permission denied", "data/u.data")
    assert write_failed(denied, "runs/a") is None
    inside = PermissionError(errno.EACCES, "Permission denied", "runs/a/r.json")
    failed = write_failed(inside, "runs/a")
    assert (failed.kind, failed.target, failed.path) == (
        NOT_WRITABLE,
        "runs/a",
        "runs/a/r.json",
    )
    full = OSError(errno.ENOSPC, "No space left on device", "/tmp/other")
    assert write_failed(full, "runs/a").kind == NO_SPACE  # always the run's


def test_writes_named_reraises_a_failed_write_naming_the_target():
    with pytest.raises(WriteFailedError, match="'runs/b' is not writable"):
        with writes_named("runs/b"):
            raise PermissionError(errno.EACCES, "Permission denied", "runs/b")
    with pytest.raises(KeyError):
        with writes_named("runs/b"):
            raise KeyError("other")


def test_named_write_failure_finds_an_already_named_failure():
    named = WriteFailedError("named", NO_SPACE, "runs/c", None)
    try:
        try:
            raise named
        except WriteFailedError:
            raise RuntimeError("trial failed")  # noqa: B904 (context)
    except RuntimeError as error:
        assert named_write_failure(error) is named
        assert write_failed(error, "elsewhere") is named
    assert named_write_failure(RuntimeError("x")) is None
