"""Cold items' data: the items held out of training, and the work files.

``benchmarks.cold_items`` holds ``--cold-share`` of the items out of every
training sequence (``hold_out``): a held-out item keeps only its
occurrences at a user's last two positions, the validation and test
targets of RecBole's leave-one-out split (``SPLIT``). The interactions
left and every item's attributes are written as the runs' input files
(``write_work_files``); ``target_counts`` checks, on the data as the runs
prepare it, that no held-out item trains.
"""

import argparse
import collections
import dataclasses
import os
from collections.abc import Iterable

import numpy as np

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from tfrec_tricks.data.item_features.item_file import (  # noqa: E402
    FLOAT_KINDS,
    ItemFeatureTable,
    read_item_features,
)
from tfrec_tricks.data.item_features.movielens import (  # noqa: E402
    movielens_item_features,
)
from tfrec_tricks.data.sources.named_sources import (  # noqa: E402
    default_data_path,
    load_source,
)
from tfrec_tricks.data.user_sequences import (  # noqa: E402
    split_positions,
    user_sequences,
)
from tfrec_tricks.training.evaluate import cold_items  # noqa: E402
from tfrec_tricks.training.training_data import TrainingData  # noqa: E402

SPLIT = "recbole"


def held_out_items(items: list[str], share: float, seed: int) -> list[str]:
    """``round(share * len(items))`` items drawn at random, sorted.

    >>> held_out_items(list("abcdefghij"), 0.2, seed=0)
    ['g', 'h']
    """
    if not 0 < share < 1:
        raise ValueError(f"share must be in (0, 1). Received: share={share}")
    count = max(1, round(share * len(items)))
    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(items), size=count, replace=False)
    return sorted(items[i] for i in chosen)


def training_length(length: int, split: str = SPLIT) -> int:
    """How many leading positions of a sequence of ``length`` items are in
    a training example (as a target or in a history) under ``split``.

    >>> [training_length(n) for n in (1, 2, 3, 4, 6)]
    [0, 2, 2, 2, 4]
    """
    validation, test = split_positions(np.array([length]), split)
    held = validation[0] if validation[0] >= 0 else test[0]
    train_end = held - 1 if held >= 0 else length - 1
    return int(train_end) + 1 if train_end >= 1 else 0


def hold_out_sequence(items: list[str], held: set) -> list[str] | None:
    """A user's sequence without the held-out items' training occurrences.

    Every occurrence of a held-out item goes except at the last two
    positions (the validation and test targets). None when the shorter
    sequence would still put a held-out item in a training example (a
    user left with fewer than 4 items, who has no validation target):
    that user is dropped.

    >>> hold_out_sequence(list("axbxcdx"), {"x"})
    ['a', 'b', 'c', 'd', 'x']
    >>> hold_out_sequence(list("axx"), {"x"}) is None  # x trains: a -> x
    True
    """
    kept = [item for item in items[:-2] if item not in held] + items[-2:]
    if any(item in held for item in kept[: training_length(len(kept))]):
        return None
    return kept


@dataclasses.dataclass
class HeldOut:
    """The interactions without the held-out items' training occurrences.

    Attributes:
        sequences: ``(user, items)`` per kept user, in file order.
        held: the held-out raw item ids, sorted.
        num_items: distinct items of the source's interactions.
        removed: interactions removed (dropped users' excluded).
        dropped_users: users dropped (``hold_out_sequence``).
        interactions: interactions written.
        counts_before: each item's training-target count in the
            sequences before the hold-out (``training_target_counts``).
    """

    sequences: list[tuple[str, list[str]]]
    held: list[str]
    num_items: int
    removed: int
    dropped_users: int
    interactions: int
    counts_before: dict[str, int]


def training_target_counts(
    sequences: Iterable[tuple[str, list[str]]],
) -> dict[str, int]:
    """How often each item is a training target: at positions 1 to the
    last of ``training_length`` (``TrainingStatistics.item_counts``'
    rule), over every sequence.

    >>> training_target_counts([("u", list("abcbde")), ("v", list("ba"))])
    {'b': 2, 'c': 1, 'a': 1}
    """
    counts = collections.Counter()
    for _, items in sequences:
        counts.update(items[1 : training_length(len(items))])
    return dict(counts)


def hold_out(
    sequences: Iterable[tuple[str, list[str]]], share: float, seed: int
) -> HeldOut:
    """Draws the held-out items and removes their training occurrences."""
    sequences = list(sequences)
    names = sorted({item for _, items in sequences for item in items})
    held = held_out_items(names, share, seed)
    held_set = set(held)
    kept, removed, dropped = [], 0, 0
    for user, items in sequences:
        shorter = hold_out_sequence(items, held_set)
        if shorter is None:
            dropped += 1
            continue
        removed += len(items) - len(shorter)
        kept.append((user, shorter))
    return HeldOut(
        sequences=kept,
        held=held,
        num_items=len(names),
        removed=removed,
        dropped_users=dropped,
        interactions=sum(len(items) for _, items in kept),
        counts_before=training_target_counts(sequences),
    )


def source_sequences(args: argparse.Namespace) -> list[tuple[str, list[str]]]:
    """Each user's raw item ids in time order, users in file order (the
    order ``prepare`` reads them in: equal times keep file order)."""
    source = load_source(
        args.data, data_path=args.data_path, file_format=args.file_format
    )
    table = source.interactions
    sequences = user_sequences(
        table.users,
        table.items,
        table.timestamps,
        numeric_features=False,
        split=SPLIT,
        source=table.source,
    )
    out = []
    for user, start, length in zip(
        sequences.user_names, sequences.starts, sequences.lengths
    ):
        ids = sequences.items[start : start + length]
        out.append((user, [sequences.item_names[i] for i in ids]))
    return out


def item_table(args: argparse.Namespace) -> ItemFeatureTable:
    """``--item-features``, else the MovieLens dataset's metadata."""
    if args.item_features:
        return read_item_features(args.item_features)
    return movielens_item_features(
        args.data, args.data_path or default_data_path()
    )


# ----------------------------------------------------------- work files


def write_if_changed(path: str, text: str) -> str:
    """Writes ``text`` unless ``path`` holds it already (runs on the same
    bytes are reused); ``path``."""
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as handle:
            if handle.read() == text:
                return path
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(partial, path)
    return path


def interactions_text(sequences: list[tuple[str, list[str]]]) -> str:
    """``user item`` lines, user after user (``--format sasrec``).

    >>> interactions_text([("u1", ["a", "b"]), ("u2", ["c"])])
    'u1 a\\nu1 b\\nu2 c\\n'
    """
    lines = []
    for user, items in sequences:
        for item in [user, *items]:
            if not item or any(c.isspace() for c in item):
                raise ValueError(
                    "Ids of a sasrec file hold no whitespace. Received: "
                    f"{item!r} (user {user!r})"
                )
        lines += [f"{user} {item}\n" for item in items]
    return "".join(lines)


def item_file_text(table: ItemFeatureTable) -> str:
    r"""The table as a RecBole ``.item`` file (every row and feature).

    >>> text = item_file_text(ItemFeatureTable(
    ...     {"genres": "token_seq", "year": "float"},
    ...     {"1": {"genres": ("Drama", "War"), "year": 1995.0}, "2": {}},
    ... ))
    >>> for line in text.splitlines():
    ...     print(line.split("\t"))
    ['item_id:token', 'genres:token_seq', 'year:float']
    ['1', 'Drama War', '1995.0']
    ['2', '', '']
    """
    header = ["item_id:token", *(f"{n}:{k}" for n, k in table.kinds.items())]
    lines = ["\t".join(header) + "\n"]
    for item, row in table.rows.items():
        fields = [item]
        for name, kind in table.kinds.items():
            value = row.get(name)
            if value is None:
                fields.append("")
            elif kind in FLOAT_KINDS:
                values = value if isinstance(value, tuple) else (value,)
                fields.append(" ".join(repr(float(v)) for v in values))
            else:
                values = value if isinstance(value, tuple) else (value,)
                fields.append(" ".join(values))
        lines.append("\t".join(fields) + "\n")
    return "".join(lines)


def data_label(args: argparse.Namespace) -> str:
    """The data's name: the dataset, or the file's stem."""
    if args.data != "file":
        return args.data
    return os.path.splitext(os.path.basename(args.data_path))[0]


def hold_out_label(args: argparse.Namespace) -> str:
    """``<data>-cold<percent>-pick<seed>``: the work files' stem."""
    return f"{data_label(args)}-cold{args.cold_share * 100:g}-pick{args.seed}"


def write_work_files(args: argparse.Namespace) -> tuple[dict, HeldOut]:
    """Writes the interactions and the ``.item`` file; their paths."""
    held = hold_out(source_sequences(args), args.cold_share, args.seed)
    stem = os.path.join(args.work_dir, "data", hold_out_label(args))
    paths = {
        "interactions": write_if_changed(
            stem + ".txt", interactions_text(held.sequences)
        ),
        "items": write_if_changed(
            stem + ".item", item_file_text(item_table(args))
        ),
    }
    return paths, held


def target_counts(training: TrainingData, held: list[str]) -> dict:
    """How many test targets are cold, and how many of those held out.

    Raises:
        RuntimeError: a held-out item is in a training example.
    """
    target = training.prepared.test.target
    cold = cold_items(training)
    names = training.vocabulary.items
    held_set = set(held)
    is_held = np.array([names[i] in held_set for i in range(len(names))])
    trained_held = [names[i] for i in np.flatnonzero(is_held & ~cold)]
    if trained_held:
        raise RuntimeError(
            "Held-out items are in training examples: the hold-out is "
            f"broken. Received: {trained_held[:5]}"
        )
    return {
        "test targets": int(len(target)),
        "cold": int(cold[target].sum()),
        "held out": int(is_held[target].sum()),
        "cold share": float(cold[target].mean()),
        "distinct cold targets": int(len(np.unique(target[cold[target]]))),
        "catalogue": int(training.num_items - 1),
        "cold items": int(cold[1:].sum()),
    }
