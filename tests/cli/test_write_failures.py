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
