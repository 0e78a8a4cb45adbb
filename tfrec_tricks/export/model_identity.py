"""Which trained weights an export was made from: a model's identity.

A finished run's ``run.json`` records the SHA-256 of every file of its
model (``model/config.json`` and the weights). A model's *identity* is one
digest of those records, ``ModelIdentity.sha256``: the SHA-256 of the
lines ``<sha256>  <file>`` (``sha256sum``'s format), one per file of
``model/``, sorted by name. It is read from ``run.json`` alone (no
TensorFlow, no hashing of the weights), it is the same for a run and its
copy (``Recommender.save``), and it changes when the run is retrained to
other weights (``--overwrite``, other settings). Beside it the identity
keeps, for messages only, where the run was, its seed and when its weights
were written.

``export`` writes the identity of the model it exported into the version
folder, ``<version>/assets.extra/tfrec_tricks_model.json``: TF Serving
reads only ``tf_serving_warmup_requests`` there, and ``tf.saved_model.load``
never looks at ``assets.extra``. An export with ``--add-items`` records the
run's model it was derived from and the items it added.

Every consumer of an export compares that record with the run it serves
(``check_exported_model``): a mismatch, or an export without the record
(made by an older tfrec-tricks), is refused before anything is written,
naming both models.

Example:

>>> import tempfile
>>> run = {"fingerprint": {"train": {"seed": 3}}, "files": {
...     "config.json": "c" * 64, "model/weights.index": "a" * 64,
...     "model/config.json": "b" * 64}}
>>> identity = ModelIdentity.of_run("/runs/a", run)
>>> lines = ("b" * 64 + "  model/config.json\\n"
...          + "a" * 64 + "  model/weights.index\\n")
>>> identity.sha256 == hashlib.sha256(lines.encode()).hexdigest()
True
>>> identity.run_dir, identity.seed
('/runs/a', 3)
>>> version = tempfile.mkdtemp()
>>> path = write_identity(version, identity.record())
>>> read_identity(version) == identity
True
>>> check_exported_model(version, identity)
"""

import dataclasses
import datetime
import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

import tensorflow as tf

from tfrec_tricks.atomic_files import file_sha256

#: Where an export keeps its model's identity, in the version folder.
IDENTITY_FILE = os.path.join("assets.extra", "tfrec_tricks_model.json")
IDENTITY_FORMAT = 1
# A run's model folder as run.json names its files: training.run_directory
# .MODEL_DIR (training builds on export, so the name is repeated here; a
# test holds the two equal).
RUN_MODEL_FOLDER = "model"
# Digits of a digest shown in messages.
SHOWN_DIGITS = 12


@dataclasses.dataclass(frozen=True)
class ModelIdentity:
    """The trained weights an export holds (or was derived from).

    Attributes:
        sha256: str. The model's digest (see the module docstring): equal
            digests are the same weights.
        run_dir: str. The run directory it was trained in, absolute.
        seed: int or None. The run's seed.
        trained: str or None. When its weights were written (ISO 8601,
            local time with its offset).
        added_items: dict or None. For an export with ``--add-items``:
            ``file`` (absolute path), ``sha256`` (of the file) and
            ``items`` (how many were added); None for the run's model
            itself.

    Only ``sha256`` tells models apart; the rest describes them.
    """

    sha256: str
    run_dir: str
    seed: int | None = None
    trained: str | None = None
    added_items: dict | None = None

    @classmethod
    def of_run(cls, run_dir: str, run: Mapping) -> "ModelIdentity":
        """The identity of a finished run's model.

        Args:
            run_dir: str. The run directory.
            run: its ``run.json`` as ``check_finished_run`` returns it
                (checked: every recorded file is as recorded).

        Raises:
            ValueError: ``run`` records no file of ``model/``.
        """
        prefix = RUN_MODEL_FOLDER + "/"
        files = {
            name: digest
            for name, digest in (run.get("files") or {}).items()
            if name.startswith(prefix)
        }
        if not files:
            raise ValueError(
                f"The run in {run_dir} records no file of its model "
                f"({prefix}), so its model has no identity; retrain it with "
                f"--overwrite. Received: files {sorted(run.get('files') or {})}"
            )
        lines = "".join(
            f"{digest}  {name}\n" for name, digest in sorted(files.items())
        )
        seed = ((run.get("fingerprint") or {}).get("train") or {}).get("seed")
        return cls(
            sha256=hashlib.sha256(lines.encode("utf-8")).hexdigest(),
            run_dir=os.path.abspath(run_dir),
            seed=seed,
            trained=_written(run_dir, files),
        )

    def with_added_items(self, item_file: str, added: int) -> "ModelIdentity":
        """This identity, for a version that adds ``added`` items of
        ``item_file`` to the model (``export --add-items``)."""
        return dataclasses.replace(
            self,
            added_items={
                "file": os.path.abspath(item_file),
                "sha256": file_sha256(item_file),
                "items": int(added),
            },
        )

    def facts(self) -> str:
        """Its seed, when it was trained and its digest, in words.

        >>> ModelIdentity("ab" * 32, "/runs/a", 0,
        ...     "2026-12-01T10:02:11+00:00").facts()
        'seed 0, trained 2026-12-01 10:02:11, weights abababababab'
        """
        facts = []
        if self.seed is not None:
            facts.append(f"seed {self.seed}")
        if self.trained:
            facts.append(f"trained {self.trained[:19].replace('T', ' ')}")
        facts.append(f"weights {self.sha256[:SHOWN_DIGITS]}")
        return ", ".join(facts)

    def describe(self) -> str:
        """The model in words, for messages.

        >>> ModelIdentity("ab" * 32, "/runs/a", 0).describe()
        'the model trained in /runs/a (seed 0, weights abababababab)'
        """
        text = f"the model trained in {self.run_dir} ({self.facts()})"
        if self.added_items:
            text += (
                f" with the {self.added_items.get('items')} items of "
                f"{self.added_items.get('file')} added"
            )
        return text

    def record(self) -> dict:
        """What ``write_identity`` writes: JSON of this identity."""
        model = dataclasses.asdict(self)
        added = model.pop("added_items")
        record = {"format": IDENTITY_FORMAT, "model": model}
        if added:
            record["added_items"] = added
        return record

    @classmethod
    def from_record(cls, record: Any, source: str) -> "ModelIdentity":
        """The identity ``record`` (a ``record()``) holds.

        Raises:
            ValueError: ``record`` is not such a record; the message names
                ``source``.
        """
        model = record.get("model") if isinstance(record, dict) else None
        fields = {field.name for field in dataclasses.fields(cls)}
        fields.discard("added_items")  # beside "model", not in it
        if (
            not isinstance(model, dict)
            or record.get("format") != IDENTITY_FORMAT
            or not isinstance(model.get("sha256"), str)
            or not set(model) <= fields
        ):
            raise ValueError(
                f"{source} is not a tfrec-tricks model identity of format "
                f"{IDENTITY_FORMAT}; export the run again. Received: "
                f"{json.dumps(record)[:120]}"
            )
        return cls(**model, added_items=record.get("added_items"))


def _written(run_dir: str, files: Mapping) -> str | None:
    """When the newest of the model's ``files`` was written, or None."""
    times = [
        os.path.getmtime(path)
        for path in (os.path.join(run_dir, name) for name in files)
        if os.path.isfile(path)
    ]
    if not times:
        return None
    when = datetime.datetime.fromtimestamp(max(times)).astimezone()
    return when.isoformat(timespec="seconds")


def write_identity(version_dir: str, record: Mapping) -> str:
    """Writes ``record`` (``ModelIdentity.record()``) into an export.

    Args:
        version_dir: str. The version folder being written (export's
            staging folder: it is published whole, so the file needs no
            write of its own aside).
        record: the identity's JSON.

    Returns:
        The path of the written file.
    """
    path = os.path.join(version_dir, IDENTITY_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(record, handle, indent=2)
        handle.write("\n")
    return path


def read_identity(version_dir: str) -> ModelIdentity | None:
    """The identity an export records, or None when it records none.

    Reads through ``tf.io.gfile``: the export may be on storage a Beam
    runner's workers read (``gs://...``).

    Raises:
        ValueError: the file is not an identity record (named).
    """
    path = os.path.join(version_dir, IDENTITY_FILE)
    if not tf.io.gfile.exists(path):
        return None
    try:
        with tf.io.gfile.GFile(path, "r") as handle:
            record = json.loads(handle.read())
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(
            f"{path} is damaged ({error}); export the run again."
        ) from None
    return ModelIdentity.from_record(record, path)


def check_exported_model(version_dir: str, identity: ModelIdentity) -> None:
    """Refuses an export that was not made from the model ``identity``.

    Args:
        version_dir: str. An exported version folder.
        identity: the model it must hold (``ModelIdentity.of_run`` of the
            run it serves).

    Raises:
        ValueError: the export records no identity (an older tfrec-tricks
            made it), or another model's; the message names both models
            and how to export the run again.
    """
    exported = read_identity(version_dir)
    again = (
        f"Export the run again (tfrec-tricks export {identity.run_dir} "
        "--name NAME) and give the new version"
    )
    if exported is None:
        raise ValueError(
            f"The SavedModel {version_dir!r} does not say which model it "
            f"was exported from (it has no {IDENTITY_FILE}: an older "
            "tfrec-tricks exported it, or export_for_serving without "
            "`identity`), so it cannot be checked against "
            f"the run's, {identity.describe()}. {again}. Received: no "
            f"{IDENTITY_FILE}"
        )
    if exported.sha256 != identity.sha256:
        if exported.run_dir == identity.run_dir:
            since = "; the run was retrained since"
        else:
            since = ""
            again += ", or use the run it was exported from"
        raise ValueError(
            f"The SavedModel {version_dir!r} was exported from another "
            f"model than the run's ({identity.run_dir}: {identity.facts()})"
            f"{since}. {again}. Received: an export of "
            f"{exported.describe()}"
        )
