"""What the command line does after a write failed on a full disk, beside
its one-line message (``tests/test_bad_input_faults.py`` and the crash
tests run the commands): h5py's repeated reports of the failure stay
quiet, and an HDF5 file left open ends the process at once."""

import types

import pytest

from tfrec_tricks import cli


def _unraisable(error):
    return types.SimpleNamespace(exc_value=error)


def test_h5py_reports_of_a_failed_write_stay_quiet():
    seen = []
    unraisable, excepthook = cli._quiet_hdf5_write_failures(
        lambda report: seen.append(("unraisable", report.exc_value)),
        lambda kind, error, traceback: seen.append(("except", error)),
    )
    failed = RuntimeError(
        "Can't decrement id ref count (file write failed: errno = 28)"
    )
    unraisable(_unraisable(failed))
    excepthook(RuntimeError, failed, None)
    assert seen == []
    # Anything else still reaches the hooks it would have reached.
    other = RuntimeError("something else")
    unraisable(_unraisable(other))
    excepthook(ValueError, ValueError("x"), None)
    assert seen == [("unraisable", other), ("except", seen[1][1])]
    assert isinstance(seen[1][1], ValueError)


def test_an_open_hdf5_file_is_seen(tmp_path):
    h5py = pytest.importorskip("h5py")
    handle = h5py.File(tmp_path / "weights.h5", "w")
    try:
        assert cli._hdf5_file_left_open()
    finally:
        handle.close()
    assert not cli._hdf5_file_left_open()


def test_a_write_failure_message_is_one_line():
    error = OSError(28, "No space left on device\n(HDF5: offset = 4096)")
    message = cli._write_failure_message(error, "train")
    assert message is not None and "\n" not in message
    assert "no space left on" in message


@pytest.mark.parametrize(
    "code, left_open, ended",
    [(1, True, True), (1, False, False), (0, True, False)],
)
def test_the_program_ends_at_once_only_after_a_failure_with_hdf5_open(
    monkeypatch, code, left_open, ended
):
    calls = []
    monkeypatch.setattr(cli, "main", lambda: code)
    monkeypatch.setattr(cli, "_hdf5_file_left_open", lambda: left_open)

    def end_now(value):
        calls.append(value)
        raise SystemExit(value)

    monkeypatch.setattr(cli, "_end_now", end_now)
    with pytest.raises(SystemExit) as exited:
        cli.run()
    assert exited.value.code == code
    assert calls == ([code] if ended else [])
