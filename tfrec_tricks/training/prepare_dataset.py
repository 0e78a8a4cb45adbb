"""``tfrec-tricks prepare``: a training run's data, prepared once, on disk.

Three engines end in the same prepared dataset (``data.prepared.format``):

- ``local`` streams the files into compact columns (``read_encoded``: an
  int32 code per id, each raw id kept once), prepares them in one process
  and writes the shards. For data one machine holds.
- ``beam`` runs the same preparation as an Apache Beam pipeline
  (``data.beam.prepare_with_beam``), on the DirectRunner or any Beam runner. For
  logs no single machine holds. Needs ``pip install "tfrec_tricks[beam]"``.
- Synthetic and TFDS data are made in memory; the ``local`` engine writes
  them as they are.

With ``--item-features FILE.item`` (or a built-in dataset's metadata that
``--features`` names, as ``train`` reads them) the dataset carries the
encoded item features, cold items joining its catalogue
(``data.prepared.item_features``): ``metadata.json`` records the
``.item`` file's SHA-256 and the features' names, and ``train --prepared``
trains with them (``prepared_train_config`` refuses ``--item-features``,
``--min-feature-count`` or ``--features`` that contradict them).
"""

import contextlib
import dataclasses

import numpy as np

from tfrec_tricks.config_fields import field_default
from tfrec_tricks.data.prepared.format import read_metadata
from tfrec_tricks.data.prepared.item_features import ItemFeatureRequest
from tfrec_tricks.data.prepared.writer import write_prepared
from tfrec_tricks.data.sources.encoded_interactions import read_encoded
from tfrec_tricks.data.sources.named_sources import (
    load_source,
    located_files,
    source_files,
)
from tfrec_tricks.data.user_sequences import user_sequences
from tfrec_tricks.errors import DataError
from tfrec_tricks.output_folders import check_target, read_lock, target_lock
from tfrec_tricks.training.feature_selection import (
    ALL_FEATURES,
    select_features,
)
from tfrec_tricks.training.option_choices import ENGINES as ENGINES

# Re-exported: the output's kind and checks live in a module without
# TensorFlow (the command line checks them before it loads).
from tfrec_tricks.training.prepared_output import (
    PREPARED_DATASET as PREPARED_DATASET,
)
from tfrec_tricks.training.prepared_output import refuse_existing
from tfrec_tricks.training.run_directory import data_identity
from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.training.training_data import (
    input_paths,
    item_feature_files,
    item_feature_table,
)


def is_prepared_dataset(folder: str) -> bool:
    """Whether ``folder`` is a prepared dataset by record (``ownership``):
    a folder with someone's notes beside a ``metadata.json`` is not, and
    ``--overwrite`` never replaces it."""
    return PREPARED_DATASET.recognise(folder)


def prepared_read_lock(
    config: TrainConfig,
) -> contextlib.AbstractContextManager:
    """The shared lock of ``config.prepared`` while a run reads it (none
    without a prepared dataset): ``prepare --overwrite`` of it is refused
    meanwhile (``output_folders.read_lock``)."""
    if not config.prepared:
        return contextlib.nullcontext()
    return read_lock(config.prepared, PREPARED_DATASET)


# The TrainConfig fields that say which data to read and how to prepare
# it: recorded in metadata.json, taken from it by ``train --prepared``.
SOURCE_FIELDS = (
    "data",
    "data_path",
    "file_format",
    "tfds_data_dir",
    "tfds_manual_dir",
    "synthetic_users",
    "synthetic_items",
    "item_features",
)
PREPARATION_FIELDS = (
    "min_user_interactions",
    "min_item_interactions",
    "split",
    "max_len",
    "drop_duplicates",
    "min_feature_count",
)
# What a dataset prepared before an option of PREPARATION_FIELDS (or of
# SOURCE_FIELDS) existed was prepared with.
EARLIER_PREPARATION = {"drop_duplicates": False, "min_feature_count": 1}
EARLIER_SOURCE = {"item_features": None}


def preparation_options(config: TrainConfig) -> dict:
    """What ``metadata.json`` records about how a dataset was prepared.

    The source (its name, paths and the data files' sizes and SHA-256s;
    the seed too for synthetic data, which it generates), the item
    attributes' files (``.item``, built-in metadata) with their sizes and
    SHA-256s, and the preparation options.
    """
    source = {name: getattr(config, name) for name in SOURCE_FIELDS}
    if config.data == "synthetic":
        source["seed"] = config.seed
    files = source_files(config.data, config.data_path, config.tfds_manual_dir)
    return {
        **{name: getattr(config, name) for name in PREPARATION_FIELDS},
        "numeric_features": True,
        "source": source,
        "data_files": data_identity(files),
        "item_feature_files": data_identity(item_feature_files(config)),
    }


def item_feature_request(config: TrainConfig) -> ItemFeatureRequest | None:
    """The item attributes ``prepare`` joins, read here (a bad ``.item``
    file is refused before the interactions are read).

    They are picked as ``train`` picks them in memory
    (``select_features``): ``--features`` names item features or
    per-interaction ones (every per-interaction feature is prepared; the
    names are checked once the data is read), or ``all``; without it, every
    column of ``--item-features``.

    Returns:
        An ``ItemFeatureRequest``, or None: no attributes and no
        ``--features`` to check.
    """
    requested = config.model.value("features")
    table = item_feature_table(config)
    if table is None and not requested:
        return None
    items = table.names() if table is not None else []
    by_default = config.item_features is not None

    def select(
        position_names: list[str], token_names: list[str]
    ) -> tuple[str, ...]:
        return select_features(
            requested,
            position_names,
            items,
            items_by_default=by_default,
            token_available=token_names,
            item_source=table.source if table is not None else "",
        ).item

    return ItemFeatureRequest(table, select, config.min_feature_count)


def prepare_dataset(
    config: TrainConfig,
    output: str,
    engine: str = "local",
    num_shards: int | None = None,
    overwrite: bool = False,
    pipeline_args: list[str] | None = None,
    verbose: bool = True,
) -> str:
    """Prepares ``config``'s data into the folder ``output``.

    Args:
        config: a ``TrainConfig``; its data options are used.
        output: str. The prepared dataset's folder (must not exist unless
            ``overwrite``).
        engine: str. "local" or "beam" (see the module docstring).
        num_shards: int or None. TFRecord shards; None picks a default
            (at least 4, one per million interactions).
        overwrite: bool. Replace an existing ``output``.
        pipeline_args: list of str. Beam pipeline options
            (``--runner DataflowRunner ...``), for ``engine="beam"``.
        verbose: bool. Print what was read and written.

    Returns:
        ``output``.
    """
    if engine not in ENGINES:
        raise ValueError(
            f"engine must be one of {ENGINES}. Received: engine={engine!r}"
        )
    if pipeline_args and engine != "beam":
        raise ValueError(
            "Beam pipeline options apply to --engine beam only. Received: "
            f"{pipeline_args}"
        )
    check_target(output, PREPARED_DATASET, input_paths(config))
    with target_lock(output, PREPARED_DATASET):
        refuse_existing(output, overwrite)
        written = _prepare(
            config, output, engine, num_shards, pipeline_args, verbose
        )
    if verbose:
        from tfrec_tricks.data.prepared.on_disk_dataset import OnDiskDataset

        print(f"Prepared: {OnDiskDataset(written).summary()}", flush=True)
    return written


def _prepare(
    config: TrainConfig,
    output: str,
    engine: str,
    num_shards: int | None,
    pipeline_args: list[str] | None,
    verbose: bool = False,
) -> str:
    # ``output`` is checked, locked, and this process's to replace.
    overwrite = True
    # Lines the user should read (the duplicate rows found).
    report = _print_line if verbose else None
    options = preparation_options(config)
    item_features = item_feature_request(config)
    if engine == "beam":
        from tfrec_tricks.data.beam.prepare_with_beam import prepare_with_beam

        paths, file_format = _files_for_beam(config)
        written = prepare_with_beam(
            paths,
            output,
            options,
            file_format=file_format,
            num_shards=num_shards,
            overwrite=overwrite,
            pipeline_args=pipeline_args,
            report=report,
            item_features=item_features,
        )
    else:
        sequences, graph = local_sequences(config, report, all_tokens=True)
        written = write_prepared(
            sequences,
            output,
            options,
            num_shards=num_shards,
            overwrite=overwrite,
            item_graph=graph,
            item_features=item_features,
        )
    return written


def _print_line(line: str) -> None:
    print(line, flush=True)


def local_sequences(
    config: TrainConfig, report=None, all_tokens: bool = False
) -> tuple:
    """``config``'s data as ``prepare`` reads it in memory: the source
    loaded and filtered into ``UserSequences`` (every kept user's whole
    sequence, raw names included), and the item graph or None. Also what
    ``tfrec-tricks recommend`` ranks from.

    The sequences hold the token columns of the files
    (``UserSequences.tokens``, raw values) that ``--features`` selects
    (what the run's model reads), or with ``all_tokens`` (``prepare``)
    every one."""
    common = {
        "min_user_interactions": config.min_user_interactions,
        "min_item_interactions": config.min_item_interactions,
        "split": config.split,
    }
    if config.data == "synthetic" or config.data.startswith("tfds:"):
        source = load_source(
            config.data,
            synthetic_options={
                "num_users": config.synthetic_users,
                "num_items": config.synthetic_items,
                "seed": config.seed,
            },
            tfds_data_dir=config.tfds_data_dir,
            tfds_manual_dir=config.tfds_manual_dir,
        )
        table = source.interactions
        sequences = user_sequences(
            table.users,
            table.items,
            table.timestamps,
            table.numeric,
            source=table.source,
            **common,
        )
        return sequences, source.item_graph
    paths, file_format = located_files(
        config.data, config.data_path, config.file_format
    )
    table = read_encoded(
        paths,
        file_format,
        source=config.data,
        drop_duplicates=config.drop_duplicates,
    )
    if table.duplicates is not None and report is not None:
        report(table.duplicates.message())
    requested = config.model.value("features")
    kept = [
        name
        for name in table.tokens
        if all_tokens or ALL_FEATURES in requested or name in requested
    ]
    sequences = user_sequences(
        table.users,
        table.items,
        table.timestamps,
        table.numeric,
        source=table.source,
        user_names=table.user_names,
        item_names=table.item_names,
        tokens={
            name: np.asarray(values, dtype=str)[codes]
            for name, (codes, values) in table.tokens.items()
            if name in kept
        },
        **common,
    )
    return sequences, None


def _files_for_beam(config: TrainConfig) -> tuple[list[str], str]:
    if config.data == "synthetic" or config.data.startswith("tfds:"):
        raise DataError(
            f"--engine beam reads interaction files (--data file or a named "
            f"dataset); {config.data!r} is made in memory: prepare it with "
            "--engine local. Received: --data " + config.data
        )
    if config.data == "file":
        # Beam matches the pattern itself (also gs://... on a real runner).
        return [config.data_path], config.file_format
    return located_files(config.data, config.data_path, config.file_format)


def prepared_train_config(config: TrainConfig, metadata: dict) -> TrainConfig:
    """``config`` with its data options replaced by a prepared dataset's.

    ``train --prepared DIR`` trains on what ``DIR`` holds: its source and
    preparation options are recorded in the run's config, not the
    defaults of the flags that were not given.

    The item features are the dataset's too: ``--item-features`` and
    ``--min-feature-count`` are data options as the others (the same value
    as prepared, the ``.item`` path as it was given to ``prepare``, is no
    conflict), and ``--features`` may name per-interaction features freely
    but the prepared item features all or none (``check_item_features``).

    Raises:
        ValueError: ``config`` sets a data option (away from its default)
            to another value than the dataset was prepared with, naming
            both, or ``--features`` names some of the prepared item
            features only.
    """
    options = metadata["options"]
    source = options.get("source", {})
    values = {
        name: options[name] if name in options else EARLIER_PREPARATION[name]
        for name in PREPARATION_FIELDS
    }
    values.update(
        {
            name: source[name] if name in source else EARLIER_SOURCE[name]
            for name in SOURCE_FIELDS
            if name in source or name in EARLIER_SOURCE
        }
    )
    conflicts = [
        f"{name}={getattr(config, name)!r} (prepared with {value!r})"
        for name, value in values.items()
        if getattr(config, name) != value
        and getattr(config, name) != field_default(TrainConfig, name)
    ]
    if conflicts:
        raise ValueError(
            f"{config.prepared!r} was prepared with other data options than "
            f"the ones given: {', '.join(conflicts)}. Leave them out (the "
            "prepared dataset's apply) or prepare the data again."
        )
    check_item_features(config, metadata.get("item_feature_names", []))
    return dataclasses.replace(config, **values)


def check_item_features(config: TrainConfig, prepared: list[str]) -> None:
    """Refuses ``--features`` that names some, not all, of the item
    features a dataset was prepared with (``prepared``).

    They were encoded, and the cold items joined the catalogue, at
    ``prepare``: a run of the dataset reads them all. ``--features``
    naming all of them, none of them (per-interaction features only) or
    ``all`` keeps them; a name the dataset does not have at all is refused
    when the data is loaded (``select_features`` lists what it has).

    Raises:
        ValueError: naming the prepared features and those named.
    """
    requested = config.model.value("features")
    named = [name for name in requested if name in prepared]
    if named and set(named) != set(prepared):
        raise ValueError(
            f"{config.prepared!r} was prepared with the item features "
            f"{list(prepared)}; --features names {named} of them. A "
            "prepared dataset's item features are chosen at `prepare "
            "--features` and a run reads them all: name all of them or "
            "none (they apply either way), or prepare the data again. "
            f"Received: --features {' '.join(requested)}"
        )


def resolved_config(config: TrainConfig) -> TrainConfig:
    """``config``, with a prepared dataset's data options when it has one.

    A prepared dataset is checked here (missing, half-written or of
    another version: ``DataError``), before anything else happens.
    """
    if not config.prepared:
        return config
    return prepared_train_config(config, read_metadata(config.prepared))
