"""Crash a command at a chosen write: what SIGKILL, a power loss, a full
disk or a folder made read-only leave behind.

A *write event* is one call that changes the workspace (the current
folder and below): ``open`` for writing, ``os.open`` with ``O_CREAT``,
``os.mkdir`` (``makedirs``, ``tempfile.mkdtemp``), ``os.replace``,
``os.rename``, ``os.link``, ``os.remove``, ``os.rmdir``, and the
boundaries between the files libraries write in C++ (every Keras
callback call, ``tf.saved_model.save`` before and after). Its *label* is
the function's name and the path it writes (``mkdir /w/runs/run``), or
the callback's name (``on_epoch_end``).

Run as a script, this runs ``tfrec-tricks ARGS`` (or ``--code``) in its
process and, at the N-th event (of those ``--match`` finds):

- ``--fault kill``: ``os._exit(137)``, as SIGKILL: no ``finally``, no
  handler, the kernel releases the locks;
- ``--fault ENOSPC`` (or ``EACCES``, any errno's name): raises that
  ``OSError`` there and at every later Python-level event (a disk stays
  full, a folder read-only);
- ``--snapshots DIR``: at *every* event, before it, copies the workspace
  to ``DIR/<N>/`` and appends the event's label to ``DIR/events.txt``,
  then goes on. Each copy is what a SIGKILL at that instant would leave
  on the disk (what the process had written, nothing it held in memory);
  one run gives every crash state of a command, each to be put back in
  the workspace's place (paths are part of a run's fingerprint) and run
  again. With ``--sequence FILE`` (``run_sequence``), one process does so
  for several commands, each in its own workspace: TensorFlow is
  imported once::

    python tests/crash_helpers.py --at 40 --fault kill -- train ...
    python tests/crash_helpers.py --snapshots /tmp/states -- train ...
"""

import argparse
import builtins
import errno
import io
import json
import os
import re
import shutil
import subprocess
import sys

# The events a Keras callback list gives: between two of them, TensorFlow
# writes checkpoints and TensorBoard events in C++.
CALLBACK_EVENTS = (
    "on_train_begin",
    "on_epoch_begin",
    "on_train_batch_end",
    "on_test_begin",
    "on_test_end",
    "on_epoch_end",
    "on_train_end",
)
KILLED = 137
EVENTS_FILE = "events.txt"
# The crashed commands run under the Keras of the tests (tf-keras unless
# TF_USE_LEGACY_KERAS=0).
_KERAS = os.environ.get("TF_USE_LEGACY_KERAS", "1")


class WriteEvents:
    """Counts write events below ``root``; at event ``at`` (from 1)
    applies ``fault``, or copies the workspace at every event.

    Args:
        root: str. The workspace: writes elsewhere (TensorFlow's caches)
            are not counted.
        at: int or None. The event to fault at; None: none.
        fault: "kill", or an errno's name ("ENOSPC", "EACCES").
        match: str or None. A regular expression: only events whose
            label it finds count (``"on_train_begin"``, ``"mkdir .*/x$"``).
        snapshots: str or None. A folder outside ``root`` to copy the
            workspace into at every event.
    """

    def __init__(
        self,
        root: str,
        at: int | None = None,
        fault: str = "kill",
        match: str | None = None,
        snapshots: str | None = None,
    ):
        self.root = os.path.realpath(root)
        self.at = at
        self.fault = fault
        self.match = None if match is None else re.compile(match)
        self.snapshots = snapshots
        self.count = 0
        self.faulted = False
        self.copying = False

    def inside(self, path) -> bool:
        if isinstance(path, int) or self.copying:
            return False
        try:
            path = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        return path == self.root or path.startswith(self.root + os.sep)

    def event(self, what: str, grows: bool = True, path=None) -> None:
        """One event, labelled ``what``; ``grows``: it needs space (a
        removal or a rename does not, so a full disk lets it through);
        ``path``: the file it writes, named by a fault's ``OSError``."""
        if self.copying:
            return
        if not self.faulted:
            if self.match is not None and not self.match.search(what):
                return
            self.count += 1
            if self.snapshots is not None:
                self._copy(what)
            if self.at is None or self.count < self.at:
                return
            self.faulted = True
        if self.fault == "kill":
            sys.stdout.flush()
            os._exit(KILLED)
        if self.fault == "ENOSPC" and not grows:
            return
        code = getattr(errno, self.fault)
        raise OSError(code, os.strerror(code), path)

    def event_at(self, path, what: str, grows: bool = True) -> None:
        if self.inside(path):
            path = os.fsdecode(path)
            self.event(f"{what} {path}", grows, path)

    def _copy(self, what: str) -> None:
        copy = os.path.join(self.snapshots, str(self.count))
        self.copying = True
        try:
            for _ in range(3):
                try:
                    shutil.copytree(self.root, copy, symlinks=True)
                    break
                except (shutil.Error, OSError):
                    # A file a library's thread removed meanwhile.
                    shutil.rmtree(copy, ignore_errors=True)
            else:
                what = "(not copied) " + what
            with open(os.path.join(self.snapshots, EVENTS_FILE), "a") as out:
                out.write(what.replace("\n", " ") + "\n")
        finally:
            self.copying = False


def patches(events: WriteEvents) -> list[tuple[object, str, object]]:
    """``(owner, name, replacement)`` for each function ``events`` wraps:
    set them with ``setattr`` (or pytest's ``monkeypatch.setattr``)."""
    import tensorflow as tf

    found = []

    def wrap_path(owner, name, argument=0, when=None, grows=True):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            if len(args) > argument and (when is None or when(args, kwargs)):
                events.event_at(args[argument], name, grows)
            return original(*args, **kwargs)

        found.append((owner, name, wrapper))

    def writing(args, kwargs):
        mode = args[1] if len(args) > 1 else kwargs.get("mode", "r")
        return any(flag in mode for flag in "wax+")

    def creating(args, kwargs):
        flags = args[1] if len(args) > 1 else kwargs.get("flags", 0)
        return bool(flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR))

    wrap_path(builtins, "open", when=writing)
    wrap_path(io, "open", when=writing)
    wrap_path(os, "open", when=creating)
    wrap_path(os, "mkdir")
    for name in ("remove", "unlink", "rmdir"):
        wrap_path(os, name, grows=False)
    for name in ("link", "symlink"):
        wrap_path(os, name, argument=1)
    for name in ("replace", "rename"):
        wrap_path(os, name, argument=1, grows=False)

    def wrap_call(owner, name, label):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            events.event(label)
            result = original(*args, **kwargs)
            events.event(label + " done")
            return result

        found.append((owner, name, wrapper))

    wrap_call(tf.saved_model, "save", "tf.saved_model.save")
    callbacks = tf.keras.callbacks.CallbackList
    for name in CALLBACK_EVENTS:
        original = getattr(callbacks, name)

        def hook(self, *args, _original=original, _name=name, **kwargs):
            events.event(_name)
            return _original(self, *args, **kwargs)

        found.append((callbacks, name, hook))
    return found


def crash_command(
    args,
    at: int = 0,
    fault: str = "kill",
    cwd=None,
    code: str | None = None,
    match: str | None = None,
    snapshots: str | None = None,
) -> subprocess.CompletedProcess:
    """Runs ``tfrec-tricks ARGS`` (or the Python ``code``) in a fresh
    process in ``cwd`` that faults at write event ``at`` (of those
    ``match`` finds), or copies the workspace to ``snapshots`` at each
    event (``WriteEvents``).

    Returns:
        The finished process (output captured).
    """
    extra = [] if code is None else ["--code", code]
    extra += [] if match is None else ["--match", match]
    extra += [] if snapshots is None else ["--snapshots", str(snapshots)]
    return subprocess.run(
        [sys.executable, __file__, "--at", str(at), "--fault", fault]
        + extra
        + ["--"]
        + [str(a) for a in args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "TF_USE_LEGACY_KERAS": _KERAS},
    )


def crash_states(folder: str) -> list[tuple[str, str]]:
    """The crash states a ``--snapshots`` run copied to ``folder``: the
    label of each event and the copy of the workspace before it, in
    order."""
    with open(os.path.join(folder, EVENTS_FILE)) as handle:
        labels = handle.read().splitlines()
    return [
        (label, os.path.join(folder, str(number)))
        for number, label in enumerate(labels, start=1)
        if not label.startswith("(not copied)")
    ]


def run_sequence(commands: list[dict], snapshots: str) -> None:
    """Runs ``commands`` in this process, one after the other, each in its
    workspace with the crash states copied to ``snapshots/<name>/`` and
    its exit status written to ``snapshots/<name>/status``.

    Args:
        commands: dicts: ``name``, ``folder`` (its workspace), ``args``
            (the command line) or ``code`` (Python code).
        snapshots: str. A folder outside every workspace.
    """
    events = WriteEvents(os.getcwd(), snapshots=snapshots)
    for owner, name, replacement in patches(events):
        setattr(owner, name, replacement)
    from tfrec_tricks import cli

    start = os.getcwd()
    for command in commands:
        states = os.path.join(snapshots, command["name"])
        os.makedirs(states)
        events.root = os.path.realpath(command["folder"])
        events.snapshots, events.count = states, 0
        os.chdir(events.root)
        try:
            if command.get("code") is not None:
                exec(compile(command["code"], "<facade>", "exec"), {})
                status = "0"
            else:
                status = str(cli.main(command["args"]))
        except BaseException as error:  # told to the test, which fails
            status = f"{type(error).__name__}: {error}"
        finally:
            os.chdir(start)
        with open(os.path.join(states, "status"), "w") as out:
            out.write(status)


def sequence_command(commands: list[dict], snapshots: str):
    """Runs ``run_sequence(commands, snapshots)`` in a fresh process.

    Returns:
        The finished process (output captured).
    """
    os.makedirs(snapshots)
    plan = os.path.join(snapshots, "sequence.json")
    with open(plan, "w") as out:
        json.dump(commands, out)
    return subprocess.run(
        [sys.executable, __file__, "--sequence", plan, "--", "-"],
        capture_output=True,
        text=True,
        env={**os.environ, "TF_USE_LEGACY_KERAS": _KERAS},
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--at", type=int, default=0)
    parser.add_argument("--fault", default="kill")
    parser.add_argument("--code", help="Python code to run instead")
    parser.add_argument("--match", help="count only the events it finds")
    parser.add_argument("--snapshots", help="copy the workspace here")
    parser.add_argument("--sequence", help="run_sequence's commands (JSON)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    options = parser.parse_args()
    if options.sequence is not None:
        with open(options.sequence) as handle:
            commands = json.load(handle)
        run_sequence(commands, os.path.dirname(options.sequence))
        return 0
    command = options.command[1:] if options.command[:1] == ["--"] else []
    events = WriteEvents(
        os.getcwd(),
        options.at or None,
        options.fault,
        options.match,
        options.snapshots,
    )
    for owner, name, replacement in patches(events):
        setattr(owner, name, replacement)
    if options.code is not None:
        exec(compile(options.code, "<facade>", "exec"), {})
        return 0
    from tfrec_tricks import cli

    return cli.main(command)


if __name__ == "__main__":
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
