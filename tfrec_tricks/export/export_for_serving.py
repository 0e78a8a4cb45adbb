"""Export a trained model as a versioned SavedModel for TF Serving."""

import contextlib
import json
import math
import os
from typing import Any

import numpy as np
import tensorflow as tf

from tfrec_tricks import ownership
from tfrec_tricks.atomic_files import (
    make_folders,
    publish_directory,
    remove_empty_folders,
    remove_leftovers,
    withdraw_directory,
    write_text_atomic,
)
from tfrec_tricks.errors import OutputError
from tfrec_tricks.export.model_identity import ModelIdentity, write_identity
from tfrec_tricks.export.models_config import (
    check_model_name,
    check_version,
    read_models_config,
    update_models_config,
)
from tfrec_tricks.export.saved_model_writer import serving_writer
from tfrec_tricks.export.serving_module import (
    ServingModule,
    check_k,
    load_item_vocabulary,
)
from tfrec_tricks.export.warmup import write_warmup_requests
from tfrec_tricks.output_folders import TargetKind, check_target, target_lock

MODELS_CONFIG = "models.config"


# A model's folder of versions, TF Serving's base_path: each version a
# folder with its own record (``ownership``), listed in the folder's.
MODEL_VERSIONS = TargetKind("folder of model versions", "--name")
# Served models' root: models.config, the models' folders and requests
# beside what else the user keeps there; export only adds to it (only
# locked, never checked or replaced).
SERVED_MODELS = TargetKind("models.config", "--base-path")


def holds_only_versions(folder: str) -> bool:
    """Whether ``folder`` is a folder of model versions by record: export
    wrote every entry of it (``ownership``)."""
    return MODEL_VERSIONS.recognise(folder)


def next_version(base_path: str) -> int:
    """One more than the largest integer folder name in ``base_path``."""
    versions = [0]
    if os.path.isdir(base_path):
        versions += [
            int(entry)
            for entry in os.listdir(base_path)
            if entry.isdigit() and os.path.isdir(os.path.join(base_path, entry))
        ]
    return max(versions) + 1


def example_instances(
    items: list,
    features: tuple,
    max_len: int,
    rows: int = 2,
    tokens: dict | None = None,
) -> list:
    """Small ``instances`` of a REST request built from the vocabulary.

    Row ``i`` holds the first ``min(3 + i, max_len)`` real items (raw ids);
    rows are padded with ``""`` to the same length, as a dense request
    must be. Every feature gets an hour per step (0 at padding); every
    token feature of ``tokens`` (name -> its vocabulary) the vocabulary's
    values in turn (``""`` at padding).
    """
    real = items[1:]
    lengths = [max(1, min(3 + i, max_len, len(real))) for i in range(rows)]
    width = max(lengths)
    instances = []
    for length in lengths:
        history = [real[j % len(real)] for j in range(length)]
        instance = {"history": history + [""] * (width - length)}
        for name in features:
            values = [3600.0 * (j + 1) for j in range(length)]
            instance[name] = values + [0.0] * (width - length)
        for name, vocabulary in (tokens or {}).items():
            values = [(vocabulary or ["?"])[j % max(len(vocabulary), 1)]
                      for j in range(length)]  # fmt: skip
            instance[name] = values + [""] * (width - length)
        instances.append(instance)
    return instances


def filtered_instances(
    items: list,
    features: tuple,
    max_len: int,
    k: int,
    history_last: bool,
    tokens: dict | None = None,
) -> list:
    """``example_instances`` with ``recommend_filtered``'s options.

    Row ``i`` excludes the ``i + 1`` items after its history (padded with
    ``""`` to one width) and asks for ``k`` items, then half as many; both
    rank the history as ``history_last`` says.
    """
    instances = example_instances(items, features, max_len, tokens=tokens)
    real = items[1:]
    for i, instance in enumerate(instances):
        start = sum(1 for item in instance["history"] if item)
        excluded = [real[(start + j) % len(real)] for j in range(i + 1)]
        instance["exclude_item_ids"] = excluded + [""] * (
            len(instances) - 1 - i
        )
        instance["k"] = max(1, k // (i + 1))
        instance["history_last"] = history_last
    return instances


def token_vocabularies(module: ServingModule) -> dict:
    """Each token feature's name -> vocabulary, of ``module``'s model."""
    return {
        feature["name"]: list(feature["vocabulary"])
        for feature in module.model.config.token_features
    }


def _warmup_requests(module: ServingModule, items: list) -> list:
    """Both signatures at batch 1 and 3: an unknown id, an empty row."""
    features = module.feature_names
    tokens = token_vocabularies(module)
    one = example_instances(items, features, module.max_len, 1, tokens)
    three = example_instances(items, features, module.max_len, 2, tokens)
    width = len(three[0]["history"])
    three.append(
        {
            "history": ["<unknown item>"] + [""] * (width - 1),
            **{name: [math.nan] + [0.0] * (width - 1) for name in features},
            **{name: ["<unknown>"] + [""] * (width - 1) for name in tokens},
        }
    )
    requests = []
    for batch in (one, three):
        inputs = {
            key: np.asarray([row[key] for row in batch]) for key in batch[0]
        }
        requests.append(("serving_default", inputs))
        filters = {
            "exclude_item_ids": np.asarray([[items[1], ""]] * len(batch)),
            "k": np.full([len(batch)], module.k, np.int32),
            "history_last": np.ones([len(batch)], bool),
        }
        requests.append(("recommend_filtered", {**inputs, **filters}))
        candidates = np.asarray([items[1:3] + [""]] * len(batch))
        requests.append(
            ("score_candidates", {**inputs, "candidate_ids": candidates})
        )
    return requests


def checked_base_path(
    base_path: str | os.PathLike,
    model: Any,
    k: int,
    identity: ModelIdentity | None,
    inputs: Any,
) -> tuple[str, str]:
    """An export's arguments checked before anything is written.

    Args:
        base_path: str or PathLike. The model's folder of versions; its last
            component is the model's name.
        model: the model exported (its ``config.num_items`` bounds ``k``).
        k: int. Items per list.
        identity: ModelIdentity or None. The run the model comes from.
        inputs: the files the export reads (``output_folders.check_target``).

    Returns:
        ``(base_path, root)``: the folder without trailing separators and
        the folder of served models that holds it.

    Raises:
        ValueError: a ``base_path`` whose last component is not a model's
            name, ``k`` out of range, or ``identity`` not a ModelIdentity.
        OutputError: ``base_path`` or its parent is not a folder this
            export may write (see ``check_target``).
    """
    # The last component as given (trailing separators aside), not that
    # of a normalised path: "models/demo/.." must not export as "models".
    base_path = os.fspath(base_path)
    stripped = base_path.rstrip("/" + os.sep) or base_path
    name = os.path.basename(stripped)
    try:
        check_model_name(name)
    except ValueError as error:
        raise ValueError(
            "`base_path` must end with the model's name, e.g. "
            f"saved_models/<name>. {error}; base_path={base_path!r}"
        ) from None
    base_path = stripped
    # k above the catalogue would serve padding or repeats: refused before
    # anything (a lock, a folder) is written.
    check_k(k, model.config.num_items)
    if identity is not None and not isinstance(identity, ModelIdentity):
        raise ValueError(
            "`identity` must be a ModelIdentity (ModelIdentity.of_run) or "
            f"None. Received: identity={identity!r}"
        )
    root = os.path.dirname(base_path) or "."
    check_target(base_path, MODEL_VERSIONS, inputs)
    if os.path.lexists(root) and not os.path.isdir(root):
        raise OutputError(
            f"{root!r} is a file, not a folder of served models; choose "
            "another --base-path (it is never replaced)."
        )
    return base_path, root


def export_for_serving(
    model: Any,
    base_path: str,
    vocabulary: Any,
    version: int | None = None,
    k: int = 10,
    scoring: str = "auto",
    server_base_path: str | None = None,
    warmup: bool = True,
    inputs: tuple[str, ...] = (),
    identity: ModelIdentity | None = None,
) -> str:
    """Writes ``<base_path>/<version>/``, a SavedModel TF Serving loads.

    ``base_path`` is the model's folder of versions, TF Serving's
    ``base_path``: its name is the served model's name, its parent the
    folder served with ``--model_config_file`` (e.g.
    ``saved_models/<name>``). The version is written into a temporary
    folder next to it (``.<version>.<random>.staging``, which TF Serving
    ignores: it loads numbered folders only) and renamed
    when complete, so a running server never sees half a version.

    The SavedModel has three signatures (see ``ServingModule``):

    - ``serving_default``: inputs ``history`` (string ``[B, L]`` raw item
      ids, padded with ``""``) and one float ``[B, L]`` input per feature
      of the model (e.g. ``time_gap``); outputs ``item_ids`` (string
      ``[B, k]``) and ``scores`` (float32 ``[B, k]``).
    - ``recommend_filtered``: the same, with a request's own filters:
      ``exclude_item_ids`` (string ``[B, E]``, ranked last), ``k`` (int32
      ``[B]``, at most the exported ``k``) and ``history_last`` (bool
      ``[B]``); outputs ``[B, max(k)]``.
    - ``score_candidates``: the same inputs plus ``candidate_ids`` (string
      ``[B, M]``); output ``scores`` (float32 ``[B, M]``, ``-1e9`` for
      ids not in the vocabulary).

    A request whose shapes do not fit (a feature not of ``history``'s
    shape, ``candidate_ids`` of another batch size, a ``history`` not of
    rank 2) fails with INVALID_ARGUMENT naming the inputs and shapes.

    Also written: ``<version>/assets.extra/tf_serving_warmup_requests``;
    with ``identity``, ``<version>/assets.extra/tfrec_tricks_model.json``
    (``model_identity``), which ``recommend --saved-model`` checks; next
    to ``base_path``, the model's entry in ``models.config`` (added
    or updated), ``<name>.request.json`` and
    ``<name>.filtered_request.json``, REST requests (``instances``
    format) for ``serving_default`` and ``recommend_filtered``.

    Args:
        model: a trained ``tfrec_tricks.models.SequentialRetrievalModel``
            (e.g. ``tfrec_tricks.training.persistence.load_model(run_dir)``).
        base_path: str. The model's folder of versions.
        vocabulary: the run's vocabulary (``Vocabulary``, the dict or the
            path of ``vocabulary.json``, or the list of raw item ids).
        version: int or None. Version number; None takes the next free
            one (1 for a new model). An existing version is an error.
            Defaults to None.
        k: int. Items ``serving_default`` returns, at most the
            catalogue's ``num_items - 1`` real items. Defaults to 10.
        scoring: str. ``"auto"``, ``"index"`` or ``"full"`` (see
            ``ServingModule``). Defaults to ``"auto"``.
        server_base_path: str or None. ``base_path`` written into
            ``models.config``, as the server sees the folder. Defaults to
            ``/models/<name>`` (the Docker image's layout).
        warmup: bool. Write the warmup records. Defaults to True.
        inputs: paths the export reads (the run directory): ``base_path``
            may not be, contain or lie inside one. Defaults to none.
        identity: ``ModelIdentity`` or None. The trained model ``model``
            is (``ModelIdentity.of_run``), recorded in the version; None
            records none (a model of no run: no consumer accepts the
            export as a run's). Defaults to None.

    Returns:
        str, the path of the written version folder.

    Raises:
        ValueError: the last component of ``base_path`` is not a valid
            model name (see ``check_model_name``), ``k`` is above the
            catalogue (see ``check_k``), ``version`` exists or is not
            1 to 2**63 - 1 (see ``check_version``), or ``models.config``
            next to ``base_path`` cannot be parsed. Nothing is written
            then.

    Example:

    >>> import tempfile
    >>> import tfrec_tricks.export
    >>> from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel
    >>> model = SequentialRetrievalModel(ModelConfig(num_items=6, max_len=4))
    >>> root = tempfile.mkdtemp()
    >>> path = tfrec_tricks.export.export_for_serving(
    ...     model, os.path.join(root, "demo"),
    ...     ["[PAD]", "a", "b", "c", "d", "e"], k=3)
    >>> os.path.basename(path)
    '1'
    >>> for entry in sorted(os.listdir(root)):
    ...     print(entry)
    demo
    demo.filtered_request.json
    demo.request.json
    models.config
    """
    base_path, root = checked_base_path(base_path, model, k, identity, inputs)
    name = os.path.basename(base_path)
    # One export per model folder, one writer of models.config at a time.
    with (
        target_lock(base_path, MODEL_VERSIONS),
        target_lock(os.path.join(root, MODELS_CONFIG), SERVED_MODELS),
    ):
        return _export(
            model, base_path, name, vocabulary, version, k, scoring,
            server_base_path, warmup, identity,
        )  # fmt: skip


def _export(
    model: tf.keras.Model,
    base_path: str,
    name: str,
    vocabulary: Any,
    version: int | None,
    k: int,
    scoring: str,
    server_base_path: str | None,
    warmup: bool,
    identity: ModelIdentity | None = None,
) -> str:
    root = os.path.dirname(base_path) or "."
    config_path = os.path.join(root, MODELS_CONFIG)
    # Refuse an unreadable models.config before anything is written.
    read_models_config(config_path)
    if version is None:
        version = next_version(base_path)
    # export --version's check: a positive int64, as TF Serving reads it.
    check_version(version)
    target = os.path.join(base_path, str(version))
    if os.path.exists(target):
        raise ValueError(
            f"Version {version} of {name!r} exists already at {target}; "
            "versions are immutable once served. Received: "
            f"version={version}"
        )
    items = load_item_vocabulary(vocabulary)
    module = ServingModule(model, items, k=k, scoring=scoring)
    # tf.saved_model.save under tf-keras, keras.export.ExportArchive under
    # Keras 3: the same signatures either way (saved_model_writer).
    save = serving_writer(module)

    def write(staging: str) -> None:
        save(staging)
        if warmup:
            write_warmup_requests(
                staging, name, _warmup_requests(module, items)
            )
        if identity is not None:
            write_identity(staging, identity.record())

    # A failed export (a full disk, Ctrl-C) leaves no folder it made: the
    # model's folder of versions goes too when this export created it.
    created = make_folders(base_path)
    try:
        ownership.start_record(base_path, MODEL_VERSIONS.name)
        # TF Serving loads only folders named by a number: it never sees
        # the hidden staging folder.
        publish_directory(target, write, kind="model version")
        try:
            update_models_config(
                config_path,
                name,
                server_base_path or f"/models/{name}",
            )
            _write_request_examples(root, name, module, items)
        except BaseException:
            # Without its models.config entry the version is half an
            # export: withdrawn, the same command publishes it again.
            withdraw_directory(target)
            raise
    except BaseException:
        if created:
            # This export made the folder: its record goes with it.
            with contextlib.suppress(OSError, ValueError):
                ownership.remove_owned(base_path)
        remove_empty_folders(created)
        raise
    return target


def _write_request_examples(
    root: str, name: str, module: ServingModule, items: list
) -> None:
    """``<name>.request.json`` (``serving_default``) and
    ``<name>.filtered_request.json`` (``recommend_filtered``), REST
    requests in the ``instances`` format."""
    examples = {
        "request": ("serving_default", example_instances(
            items, module.feature_names, module.max_len,
            tokens=token_vocabularies(module),
        )),
        "filtered_request": ("recommend_filtered", filtered_instances(
            items,
            module.feature_names,
            module.max_len,
            module.k,
            module.model.ranks_history_last,
            tokens=token_vocabularies(module),
        )),
    }  # fmt: skip
    for suffix, (signature, instances) in examples.items():
        request = {"signature_name": signature, "instances": instances}
        path = os.path.join(root, f"{name}.{suffix}.json")
        # Written under models.config's lock, as every export of the model:
        # what a killed export left in writing them goes.
        remove_leftovers(path)
        write_text_atomic(path, json.dumps(request, indent=2))
