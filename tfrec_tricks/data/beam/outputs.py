"""What a Beam preparation writes, and how the driver reads it back.

The workers write the TFRecord shards into the staging folder, and small
files into its side folder (``SIDE_FOLDER``): the vocabulary, the summary,
the token columns' specs and, for item features, the trained items, which
this process reads back, then removes, before it writes the prepared
folder's other files (``write_dataset_files``).

Example:

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> with open(os.path.join(folder, "x.tfrecord"), "wb") as handle:
...     for record in (b"ab", b"c"):  # length, its CRC, record, its CRC
...         _ = handle.write(len(record).to_bytes(8, "little") + bytes(4)
...                          + record + bytes(4))
>>> count_records(os.path.join(folder, "x.tfrecord"))
2
"""

import json
import os
import struct

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from tfrec_tricks.data.prepared import format as fmt
from tfrec_tricks.data.user_sequences import PADDING

# The pipeline's small outputs, read back by this process, then removed.
SIDE_FOLDER = "_beam"
VOCABULARY = "vocabulary.json"
SUMMARY = "summary.json"
TRAINED_ITEMS = "trained_items.json"
TOKEN_FEATURES = "token_features.json"
_SHARD_TEMPLATE = "-SSSSS-of-NNNNN"  # what ``fmt.shard_name`` gives


# --- written by the pipeline -------------------------------------------------


def write_shards(
    encoded: beam.PCollection, staging: str, num_shards: int
) -> None:
    """Writes the users' examples to ``num_shards`` TFRecord shards.

    Args:
        encoded: PCollection of ``beam.ranking.encoded_users``' users.
        staging: str. The folder of the shards.
        num_shards: int. Shards, named as ``prepared.format.shard_name``.
    """
    _ = (
        encoded
        | "Examples" >> beam.Map(lambda user: user[0])
        | "WriteShards"
        >> beam.io.WriteToTFRecord(
            os.path.join(staging, "sequences"),
            file_name_suffix=".tfrecord",
            num_shards=num_shards,
            shard_name_template=_SHARD_TEMPLATE,
            compression_type=CompressionTypes.UNCOMPRESSED,
        )
    )


def write_vocabulary(
    one: beam.PCollection, side: str, user_ranking, item_ranking
) -> None:
    """Writes the two rankings as ``vocabulary.json`` into ``side``.

    Args:
        one: a PCollection of one element, to hang the write on.
        side: str. The side folder.
        user_ranking: singleton PCollection of the ranked user names.
        item_ranking: singleton PCollection of the ranked item names.
    """
    _write_single(
        one
        | "VocabularyJson"
        >> beam.Map(
            _vocabulary_json,
            beam.pvalue.AsSingleton(user_ranking),
            beam.pvalue.AsSingleton(item_ranking),
        ),
        os.path.join(side, VOCABULARY),
        "Vocabulary",
    )


def write_summary(
    one: beam.PCollection,
    side: str,
    summary,
    rows_read,
    unsettled_items,
    duplicates,
) -> None:
    """Writes the summary and the pipeline's counts into ``side``.

    Args:
        one: a PCollection of one element, to hang the write on.
        side: str. The side folder.
        summary: singleton PCollection of the ``SummaryFn`` output.
        rows_read: singleton PCollection: the rows read.
        unsettled_items: singleton PCollection: ``k_core``'s count.
        duplicates: singleton PCollection: ``merge_duplicates``' result.
    """
    _write_single(
        one
        | "SummaryJson"
        >> beam.Map(
            _summary_json,
            beam.pvalue.AsSingleton(summary),
            beam.pvalue.AsSingleton(rows_read),
            beam.pvalue.AsSingleton(unsettled_items),
            beam.pvalue.AsSingleton(duplicates),
        ),
        os.path.join(side, SUMMARY),
        "Summary",
    )


def write_trained_items(one: beam.PCollection, side: str, trained) -> None:
    """Writes the trained items' ids as a JSON list into ``side``.

    Args:
        one: a PCollection of one element, to hang the write on.
        side: str. The side folder.
        trained: singleton PCollection of the sorted ids
            (``beam.trained_items.trained_items``).
    """
    _write_json(one, trained, os.path.join(side, TRAINED_ITEMS), "TrainedItems")


def write_token_features(one: beam.PCollection, side: str, specs) -> None:
    """Writes the token columns' specs as a JSON list into ``side``.

    Args:
        one: a PCollection of one element, to hang the write on.
        side: str. The side folder.
        specs: singleton PCollection of the spec dicts
            (``beam.tokens.token_features``).
    """
    _write_json(one, specs, os.path.join(side, TOKEN_FEATURES), "TokenFeatures")


def _write_json(one: beam.PCollection, value, path: str, label: str) -> None:
    """Writes a singleton PCollection's value as JSON to the file ``path``,
    the write hung on ``one`` (a PCollection of one element)."""
    _write_single(
        one
        | f"{label}Json"
        >> beam.Map(
            lambda _, data: json.dumps(data), beam.pvalue.AsSingleton(value)
        ),
        path,
        label,
    )


def _write_single(texts, path: str, label: str) -> None:
    """Writes a PCollection of one string to the file ``path``."""
    _ = texts | f"Write{label}" >> beam.io.WriteToText(
        path, shard_name_template="", num_shards=1
    )


def _vocabulary_json(_, users: list[str], items: list[str]) -> str:
    return json.dumps({"items": [PADDING] + items, "users": users})


def _summary_json(
    _, summary: dict, rows: int, unsettled_items: int, duplicates: tuple
) -> str:
    return json.dumps(
        {
            **summary,
            "rows": rows,
            "unsettled_items": unsettled_items,
            "duplicates": duplicates,
        }
    )


# --- read back by the driver -------------------------------------------------


def read_side_file(side: str, name: str) -> str:
    """The text of the file ``name`` of the side folder ``side``."""
    with FileSystems.open(os.path.join(side, name)) as handle:
        return handle.read().decode("utf-8")


def check_shards(folder: str, num_shards: int) -> list[str]:
    """The shard names; creates those Beam left out (empty), refuses others.

    Args:
        folder: str. The staging folder.
        num_shards: int. The shards asked for.

    Returns:
        The ``num_shards`` shard names, sorted.

    Raises:
        RuntimeError: Beam wrote shards of other names.
    """
    expected = {fmt.shard_name(i, num_shards) for i in range(num_shards)}
    written = {f for f in os.listdir(folder) if f.endswith(".tfrecord")}
    if written - expected:
        raise RuntimeError(
            f"Beam wrote shards named {sorted(written - expected)}; expected "
            f"names like {fmt.shard_name(0, num_shards)!r}."
        )
    for name in expected - written:
        open(os.path.join(folder, name), "wb").close()
    return sorted(expected)


def count_records(path: str) -> int:
    """The records of a TFRecord file, from their length headers."""
    count = 0
    with open(path, "rb") as handle:
        while header := handle.read(8):
            (length,) = struct.unpack("<Q", header)
            # The header's CRC, the record, the record's CRC.
            handle.seek(4 + length + 4, os.SEEK_CUR)
            count += 1
    return count
