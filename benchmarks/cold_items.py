"""Cold items: how well are new items recommended from their attributes?

Holds ``--cold-share`` of the items (10%, drawn at random with ``--seed``)
out of every training sequence and trains on the rest with item features
(``--features``, the default fusion). A held-out item keeps only its
occurrences at a user's last two positions, the validation and test
targets of RecBole's leave-one-out split: it is in no training example,
so the model replaces its id embedding by the mean trained row and ranks
it by its attributes (a cold item). The report gives, over the test
targets that are cold items, the model's NDCG@10 and HR@10 (its
``metrics.json``'s ``test_by_target["cold"]``), HR@100 and the median
rank (from its test scores), mean [min, max] over ``--seeds``, against
baselines scored on the same examples the same way: full ranking over
the whole catalogue, ties pessimistic
(``tfrec_tricks.evaluation.full_ranking``), no seen-item exclusion. The
run's head is train's default (``--head auto``: on MovieLens, without
repeats, ``softmax_no_dup``, which ranks each example's history last);
when it ranks the history last, so do the baselines.

    python -m benchmarks.cold_items --data ml-100k --data-path ../shared/data

    python -m benchmarks.cold_items --data ml-1m --data-path ../shared/data

``--data file --data-path FILE --item-features FILE.item`` reads another
dataset and its RecBole ``.item`` file.

The work files, under ``--work-dir`` (``runs/benchmarks/cold-items``):
``data/<data>-cold<P>-pick<S>.txt``, the interactions without the
held-out items' training occurrences (``user item`` lines, each user's in
time order: ``--format sasrec``), and ``.item``, every item's attributes
(held-out items included), and one run directory per seed.

Baselines (user-independent scores; the same cold targets):

- random: the exact expectation of a uniform random ranking (the mean of
  each metric over ranks 1 .. N - 1), not a draw; its median rank is N / 2;
- popularity: items by their training count; cold items all count 0,
  tie with each other and rank near last;
- popularity within attribute (``--attribute``, genres): a genre's
  popularity is the sum of the training target counts of the items that
  hold it; an item scores the mean of its genres' popularities (0 without
  a genre; the out-of-vocabulary token is one genre), ties broken by its
  own training count (0 for a cold item): what attributes plus
  popularity give without a model;
- references, not baselines: popularity before the hold-out, the
  training counts with the held-out items' interactions kept, which knows
  how popular each new item turns out (whether even that puts them in a
  top 10); and every cold item ranked ahead of every
  trained one, which knows which items are new (the model is not told),
  the cold items in random order (the exact expectation), by the
  popularity within attribute above, or by the model's scores (a cold
  target's rank among the cold items): how well each orders the new
  items among themselves.

The baselines tie items often (the model only ties cold items of equal
attributes): beside the pessimistic numbers (the model's rule) the report
gives the exact expectation with ties broken at random, for the model's
rows too.

Writes ``benchmarks/results/cold-items/cold_items-<data>-<encoder>.md``
(and ``.json``, ``.png``). Finished runs of the same configuration are
reused, so an interrupted benchmark resumes where it stopped.
"""

import argparse
import collections
import dataclasses
import os
import statistics
import sys
import time
from collections.abc import Iterable

import numpy as np

from tfrec_tricks.keras_version import use_legacy_keras

use_legacy_keras()

from benchmarks import common  # noqa: E402
from tfrec_tricks.data.datasets import (  # noqa: E402
    default_data_path,
    load_source,
)
from tfrec_tricks.data.item_feature_file import (  # noqa: E402
    FLOAT_KINDS,
    ItemFeatureTable,
    read_item_features,
)
from tfrec_tricks.data.movielens_item_features import (  # noqa: E402
    MOVIELENS_METADATA,
    movielens_item_features,
)
from tfrec_tricks.data.user_sequences import (  # noqa: E402
    split_positions,
    user_sequences,
)
from tfrec_tricks.evaluation.full_ranking import (  # noqa: E402
    metrics_by_target_kind,
    metrics_from_ranks,
    ndcg_per_example,
    target_ranks,
)
from tfrec_tricks.training.evaluate import (  # noqa: E402
    cold_items,
    eval_batch_size,
    training_minutes,
)
from tfrec_tricks.training.train_config import TrainConfig  # noqa: E402
from tfrec_tricks.training.training import train  # noqa: E402
from tfrec_tricks.training.training_data import (  # noqa: E402
    TrainingData,
    load_training_data,
)

SPLIT = "recbole"
WORK_DIR = os.path.join(common.OUTPUT_DIR, "cold-items")
REPORT_DIR = os.path.join(common.RESULTS, "cold-items")
#: Cut-offs: 10, the model's metrics.json's, and 100, where the cold
#: targets' ranks still tell rankers apart.
KS = (10, 100)
#: What the table and the chart show of the cold targets.
METRICS = ("ndcg@10", "hr@10", "hr@100")
BASELINES = {
    "random": "uniform random ranking (exact expectation)",
    "popularity": "training count (cold items all 0)",
    "popularity within attribute": "mean genre popularity, then own count",
    "popularity before the hold-out": "reference: training count with the "
    "held-out items' interactions kept (how popular the new items turn "
    "out; no ranker can know it)",
    "new items, random order": "reference: cold items first, at random "
    "(exact expectation)",
    "new items, by attribute": "reference: cold items first, then by "
    "popularity within attribute",
}
#: The baselines whose order is random: every column is the expectation.
RANDOM_ORDER = ("random", "new items, random order")
#: The row of the model's scores with the cold items first.
MODEL_NEW_FIRST = "new items, by the model"
#: The rows that know what the model cannot: which items are new, or how
#: popular they turn out. The first of them starts the references.
REFERENCES = (
    "popularity before the hold-out",
    "new items, random order",
    "new items, by attribute",
    MODEL_NEW_FIRST,
)


# ----------------------------------------------------------- held-out items


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


# ----------------------------------------------------------- runs


def run_config(args: argparse.Namespace, paths: dict, seed: int) -> TrainConfig:
    """One seed's run on the held-out data, with item features."""
    model = {"encoder": args.encoder, **args.model}
    model["features"] = list(args.features)
    return TrainConfig(
        data="file",
        data_path=paths["interactions"],
        file_format="sasrec",
        item_features=paths["items"],
        split=SPLIT,
        epochs=args.epochs,
        patience=args.patience,
        train_windows=args.train_windows,
        seed=seed,
        output_dir=args.work_dir,
        name=f"{hold_out_label(args)}-{args.encoder}-seed{seed}",
        model=model,
    )


def summarise(values: list[float]) -> dict:
    return {
        "mean": statistics.fmean(values),
        "min": min(values),
        "max": max(values),
        "values": values,
    }


def cold_metrics(
    ranks: np.ndarray,
    targets: np.ndarray,
    cold: np.ndarray,
    ties: np.ndarray | None = None,
) -> dict[str, float]:
    """Metrics at ``KS`` and the median rank of the cold targets' ranks.

    With ``ties`` (the items scoring as each target does, itself
    included), also ``"ndcg@10 ties at random"``: its expectation with the
    ties broken at random (``expected_metrics``).

    >>> cold_metrics(np.array([1, 4, 50]), np.array([1, 2, 3]),
    ...              np.array([False, False, True, True]))["median rank"]
    27.0
    """
    is_cold = np.asarray(cold, bool)[np.asarray(targets)]
    ranks = np.asarray(ranks)[is_cold]
    results = {
        **metrics_from_ranks(ranks, KS),
        "median rank": float(np.median(ranks)),
    }
    if ties is not None:
        ties = np.asarray(ties)[is_cold]
        results["ndcg@10 ties at random"] = expected_metrics(
            ranks - ties, ties, len(cold) - 1, (10,)
        )["ndcg@10"]
    return results


def model_ranks(
    model, training: TrainingData, config: TrainConfig, cold: np.ndarray
) -> dict[str, np.ndarray]:
    """A trained model's test ranks, batched as its evaluation batches
    them: ``"ranks"`` over the whole catalogue (as its head scores it), ``"cold
    first"`` with every cold item ahead of every trained one (for a cold
    target: its rank among the cold items), and their ``"targets"``."""
    out: dict[str, list] = {
        key: [] for key in ("ranks", "ties", "cold first", "cold first ties")
    }
    out["targets"] = []
    for batch in training.batches(
        "test",
        eval_batch_size(training.num_items),
        bucket_by_length=config.bucket_by_length,
    ):
        target = batch["target"].numpy().reshape(-1)
        scores = model(batch, training=False).numpy()
        out["ranks"].append(target_ranks(scores, target))
        out["ties"].append(row_ties(scores, target))
        scores[:, ~cold] = -np.inf
        out["cold first"].append(target_ranks(scores, target))
        out["cold first ties"].append(row_ties(scores, target))
        out["targets"].append(target)
    return {key: np.concatenate(parts) for key, parts in out.items()}


def row_ties(scores: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per row of ``scores`` [B, N], the real items scoring as the target
    does, the target included (at least 1: a NaN target ties nothing).

    >>> row_ties(np.array([[9.0, 1.0, 2.0, 1.0]]), np.array([3]))
    array([2])
    """
    target_scores = scores[np.arange(len(targets)), targets][:, None]
    return np.maximum((scores[:, 1:] == target_scores).sum(axis=1), 1)


def model_results(runs: list[dict]) -> dict:
    """The runs' cold-target and overall test metrics, over the seeds.

    NDCG@10 and HR@10 are the runs' ``test_by_target["cold"]``; HR@100
    and the median rank come from the runs' test ranks (``model_ranks``),
    whose NDCG@10 must agree (``"rescored ndcg@10"``).
    """
    out = {}
    for metric in METRICS:
        official = [
            r["metrics"]["test_by_target"]["cold"].get(metric) for r in runs
        ]
        rescored = [r["rescored"][metric] for r in runs]
        out[f"cold {metric}"] = summarise(
            rescored if None in official else official
        )
    out["cold median rank"] = summarise(
        [r["rescored"]["median rank"] for r in runs]
    )
    out["rescored ndcg@10"] = [r["rescored"]["ndcg@10"] for r in runs]
    tied = "ndcg@10 ties at random"
    out[MODEL_NEW_FIRST] = {
        name: summarise([r["cold first"][name] for r in runs])
        for name in (*METRICS, "median rank", tied)
    }
    out[f"cold {tied}"] = summarise([r["rescored"][tied] for r in runs])
    for metric in ("ndcg@10", "hr@10"):
        out[f"test {metric}"] = summarise(
            [r["metrics"]["test"][metric] for r in runs]
        )
    out["cold share"] = runs[0]["metrics"]["test_by_target"]["cold"]["share"]
    out["epochs"] = [r["metrics"]["epochs_run"] for r in runs]
    out["training minutes"] = [training_minutes(r["metrics"]) for r in runs]
    out["wall seconds"] = [r["wall_seconds"] for r in runs]
    return out


# ----------------------------------------------------------- baselines


def attribute_popularity(tokens: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Each item's mean, over its tokens, of the tokens' popularity.

    A token's popularity is the sum of the training counts of the items
    holding it; an item holding a token twice counts once. Token id 0 is
    padding (no token); an item without a token scores 0.

    Args:
        tokens: int [N, W], the encoded ``token_seq`` feature.
        counts: int [N], the items' training target counts.

    Returns:
        float64 [N].

    >>> tokens = np.array([[0, 0], [2, 3], [2, 0], [3, 0]])
    >>> attribute_popularity(tokens, np.array([0, 5, 1, 0])).tolist()
    [0.0, 5.5, 6.0, 5.0]
    """
    tokens = np.asarray(tokens, np.int64).reshape(len(tokens), -1)
    member = np.zeros((len(tokens), int(tokens.max(initial=0)) + 1), bool)
    member[np.arange(len(tokens))[:, None], tokens] = True
    member[:, 0] = False
    popularity = np.asarray(counts, np.float64) @ member
    held = member.sum(axis=1)
    total = (member * popularity).sum(axis=1)
    return np.divide(total, held, out=np.zeros(len(tokens)), where=held > 0)


def lexicographic(*keys: np.ndarray) -> np.ndarray:
    """Dense ranks of the tuples ``(keys[0][i], keys[1][i], ...)``: a score
    ordering items by the first key, then the next, with exact ties.

    >>> lexicographic(np.array([1.0, 2.0, 1.0, 1.0]), np.array([3, 0, 3, 4]))
    array([0, 2, 0, 1])
    """
    _, inverse = np.unique(
        np.stack([np.asarray(k, np.float64) for k in keys], axis=1),
        axis=0,
        return_inverse=True,
    )
    return inverse.reshape(-1)


def baseline_scores(
    training: TrainingData,
    attribute: str,
    counts_before: dict[str, int] | None = None,
) -> dict[str, np.ndarray]:
    """Each baseline's item scores [N] (``RANDOM_ORDER``'s: ties broken
    at random); with ``counts_before`` (raw id -> training-target count
    before the hold-out), the "popularity before the hold-out" reference
    too."""
    data = training.prepared
    counts = np.asarray(data.statistics.item_counts, np.float64)
    cold = cold_items(training)
    values = data.item_features.values
    if attribute not in values:
        raise ValueError(
            f"--attribute must be a token feature of the run: one of "
            f"{sorted(values)}. Received: {attribute!r}"
        )
    by_attribute = attribute_popularity(values[attribute], counts)
    scores = {
        "random": np.zeros(len(counts)),
        "popularity": counts,
        "popularity within attribute": lexicographic(by_attribute, counts),
    }
    if counts_before is not None:
        names = training.vocabulary.items
        scores["popularity before the hold-out"] = np.array(
            [0.0] + [counts_before.get(name, 0) for name in names[1:]]
        )
    return {
        **scores,
        "new items, random order": cold.astype(np.float64),
        "new items, by attribute": lexicographic(cold, by_attribute, counts),
    }


def expected_metrics(
    higher: np.ndarray,
    ties: np.ndarray,
    num_real: int,
    ks: Iterable[int] = KS,
) -> dict[str, float]:
    """Each metric's mean over examples of its mean over the ranks
    ``higher + 1 .. higher + ties`` (ties broken uniformly at random),
    ranks up to ``num_real``.

    >>> metrics = expected_metrics(
    ...     np.array([0, 10]), np.array([2, 1]), 20, [10])
    >>> {name: round(value, 4) for name, value in metrics.items()}
    {'ndcg@10': 0.4077, 'hr@10': 0.5, 'mrr@10': 0.375}
    """
    higher = np.asarray(higher, np.int64)
    ties = np.asarray(ties, np.int64)
    ranks = np.arange(1, num_real + 1, dtype=np.float64)
    results = {}
    for k in ks:
        gains = {
            f"ndcg@{k}": ndcg_per_example(ranks, k),
            f"hr@{k}": (ranks <= k).astype(np.float64),
            f"mrr@{k}": (ranks <= k) / ranks,
        }
        for name, gain in gains.items():
            cumulative = np.r_[0.0, np.cumsum(gain)]
            expected = (cumulative[higher + ties] - cumulative[higher]) / ties
            results[name] = float(np.mean(expected))
    return results


#: The score the history-excluding heads give the history's items
#: (``SequentialRetrievalModel``'s): below every real score, all tied.
HISTORY_SCORE = -1e9


def baseline_ranks(
    scores: np.ndarray,
    history: np.ndarray,
    targets: np.ndarray,
    exclude_history: bool,
    batch_size: int = 512,
) -> tuple[np.ndarray, np.ndarray]:
    """Pessimistic ranks (``target_ranks``) and ties (``row_ties``) of the
    targets under user-independent ``scores`` [N], with each example's
    history items scored ``HISTORY_SCORE`` when ``exclude_history`` (as
    the run's head does).

    >>> baseline_ranks(np.array([0.0, 3.0, 2.0, 2.0, 1.0]),
    ...                np.array([[1], [0]]), np.array([4, 2]), True)
    (array([3, 3]), array([1, 2]))
    """
    ranks, ties = [], []
    for start in range(0, len(targets), batch_size):
        target = np.asarray(targets[start : start + batch_size])
        rows = np.repeat(
            np.asarray(scores, np.float64)[None, :], len(target), axis=0
        )
        if exclude_history:
            block = np.asarray(history[start : start + batch_size])
            rows[np.arange(len(target))[:, None], block] = HISTORY_SCORE
        ranks.append(target_ranks(rows, target))
        ties.append(row_ties(rows, target))
    return np.concatenate(ranks), np.concatenate(ties)


def baseline_results(
    training: TrainingData,
    attribute: str,
    exclude_history: bool,
    counts_before: dict[str, int] | None = None,
) -> dict:
    """The baselines' metrics on the test examples: over the cold targets
    (those of the model's ``test_by_target["cold"]``, ``cold_items``) and
    over all; pessimistic ties (the model's rule) and ties at random
    (``RANDOM_ORDER``'s: every column is the expectation, the median rank
    that of the tie ranges' midpoints). ``exclude_history``: rank each
    example's history last, as the run's head does. ``counts_before``:
    see ``baseline_scores``."""
    test = training.prepared.test
    cold = cold_items(training)
    num_real = training.num_items - 1
    is_cold = cold[test.target]
    results = {}
    all_scores = baseline_scores(training, attribute, counts_before)
    for name, scores in all_scores.items():
        ranks, ties = baseline_ranks(
            scores, test.history, test.target, exclude_history
        )
        higher = ranks - ties
        tied = expected_metrics(higher[is_cold], ties[is_cold], num_real)
        if name in RANDOM_ORDER:
            middle = higher[is_cold] + (ties[is_cold] + 1) / 2
            results[name] = {
                "cold": {**tied, "median rank": float(np.median(middle))},
                "all": expected_metrics(higher, ties, num_real),
                "cold ties at random": dict(tied),
            }
            continue
        by_kind = metrics_by_target_kind(
            ranks, test.history, test.target, KS, cold
        )
        results[name] = {
            "cold": {
                **{k: v for k, v in by_kind["cold"].items() if k != "share"},
                "median rank": float(np.median(ranks[is_cold])),
            },
            "all": metrics_from_ranks(ranks, KS),
            "cold ties at random": tied,
        }
    return results


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


# ----------------------------------------------------------- report


def cell(row: dict, digits: int = 4) -> str:
    """``mean [min, max]``, or the one value of a baseline."""
    if isinstance(row, dict):
        return (
            f"{row['mean']:.{digits}f} [{row['min']:.{digits}f}, "
            f"{row['max']:.{digits}f}]"
        )
    return f"{row:.{digits}f}"


def report_text(args, numbers: dict, command: str) -> str:
    """The markdown report: what was held out, the table, the command."""
    held, targets, model = (
        numbers["held out"],
        numbers["targets"],
        numbers["model"],
    )
    lines = [
        f"# Cold items on {numbers['data']} ({numbers['encoder']})",
        "",
        f"{len(held['items'])} of {held['num_items']:,} items "
        f"({args.cold_share:.0%}, drawn with seed {args.seed}) held out of "
        f"every training sequence: {held['removed']:,} interactions "
        f"removed, {held['dropped_users']} user(s) dropped, "
        f"{held['interactions']:,} kept. Test targets: "
        f"{targets['test targets']:,}, of which {targets['cold']:,} "
        f"({targets['cold share']:.1%}) are cold items "
        f"({targets['held out']:,} held out, "
        f"{targets['cold'] - targets['held out']:,} never trained anyway; "
        f"{targets['distinct cold targets']} distinct items). Catalogue: "
        f"{targets['catalogue']:,} items, {targets['cold items']:,} cold.",
        "",
        f"Model: {numbers['encoder']}, item features "
        f"{' + '.join(args.features)} (default fusion), training windows "
        f"{'on' if args.train_windows else 'off'}, at most {args.epochs} "
        f"epochs, patience {args.patience}; seeds "
        f"{', '.join(map(str, args.seeds))}. Full ranking over the "
        "catalogue, ties pessimistic"
        + (
            ", each example's history ranked last (the run's head does; "
            "the baselines too)"
            if numbers["history ranked last"]
            else ", nothing excluded"
        )
        + "; mean [min, max] over the seeds.",
        "",
        "| ranker | cold NDCG@10 | cold HR@10 | cold HR@100 | cold median "
        f"rank (of {targets['catalogue']:,}) | cold NDCG@10, ties at random "
        "| test NDCG@10 (all targets) |",
        "|---|---|---|---|---|---|---|",
        f"| model | {cell(model['cold ndcg@10'])} | "
        f"{cell(model['cold hr@10'])} | {cell(model['cold hr@100'])} | "
        f"{cell(model['cold median rank'], 0)} | "
        f"{cell(model['cold ndcg@10 ties at random'])} | "
        f"{cell(model['test ndcg@10'])} |",
    ]
    for name, row in numbers["baselines"].items():
        lines.append(
            f"| {name} | {cell(row['cold']['ndcg@10'])} | "
            f"{cell(row['cold']['hr@10'])} | {cell(row['cold']['hr@100'])} | "
            f"{cell(row['cold']['median rank'], 0)} | "
            f"{cell(row['cold ties at random']['ndcg@10'])} | "
            f"{cell(row['all']['ndcg@10'])} |"
        )
    first = model[MODEL_NEW_FIRST]
    lines.append(
        f"| {MODEL_NEW_FIRST} | {cell(first['ndcg@10'])} | "
        f"{cell(first['hr@10'])} | {cell(first['hr@100'])} | "
        f"{cell(first['median rank'], 0)} | "
        f"{cell(first['ndcg@10 ties at random'])} | |"
    )
    minutes = model["training minutes"]
    lines += [
        "",
        "Baselines: "
        + "; ".join(f"{k}: {v}" for k, v in BASELINES.items())
        + ". Random is the exact expectation, not a draw.",
        "",
        f"Epochs per seed: {', '.join(map(str, model['epochs']))}; training "
        f"minutes (epochs x median epoch): "
        f"{', '.join(f'{m:.1f}' for m in minutes)}.",
        "",
        "```",
        command,
        "```",
    ]
    return "\n".join(lines)


def draw_chart(numbers: dict, path: str) -> None:
    """Horizontal bars per ranker, one panel per metric of ``METRICS``;
    the model's seeds as dots, the references below a dashed line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["model", *numbers["baselines"], MODEL_NEW_FIRST]
    model = numbers["model"]
    figure, axes = plt.subplots(1, len(METRICS), figsize=(12, 3.8), sharey=True)
    for axis, metric in zip(axes, METRICS):
        for i, name in enumerate(names):
            if name in ("model", MODEL_NEW_FIRST):
                row = (
                    model[f"cold {metric}"]
                    if name == "model"
                    else model[MODEL_NEW_FIRST][metric]
                )
                axis.barh(i, row["mean"], color="#4c72b0")
                axis.plot(row["values"], [i] * len(row["values"]), "k.", ms=6)
            else:
                value = numbers["baselines"][name]["cold"][metric]
                axis.barh(i, value, color="#999999")
        # The references know which items are new, or how popular.
        axis.axhline(
            min(names.index(name) for name in REFERENCES if name in names)
            - 0.5,
            color="k",
            ls="--",
            lw=0.8,
        )
        axis.set_xlabel(f"cold-target {metric.upper()}")
    axes[0].set_yticks(range(len(names)), names)
    axes[0].invert_yaxis()
    figure.suptitle(
        f"Cold items: {numbers['data']}, {numbers['encoder']} "
        f"({numbers['targets']['cold']} cold test targets; below the "
        "line: references that know which items are new, or how popular)"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


# ----------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = common.build_parser(__doc__)
    common.add_data_options(
        parser,
        "ml-1m",
        f"{', '.join(MOVIELENS_METADATA)} (their metadata) or file "
        "(with --item-features). Default: ml-1m",
    )
    common.add_format_option(parser)
    parser.add_argument(
        "--item-features",
        default=None,
        metavar="FILE",
        help="RecBole .item file of --data file. Default: the MovieLens "
        "dataset's metadata",
    )
    parser.add_argument(
        "--features",
        nargs="+",
        default=["genres", "year"],
        help="item features the model reads. Default: genres year",
    )
    parser.add_argument(
        "--attribute",
        default="genres",
        help="token feature of the popularity-within-attribute baseline. "
        "Default: genres",
    )
    parser.add_argument(
        "--cold-share",
        type=float,
        default=0.1,
        help="share of the items held out. Default: 0.1",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the held-out items' draw. Default: 0",
    )
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[0, 1, 2],
        help="one run per seed (weights, shuffling). Default: 0 1 2",
    )
    parser.add_argument(
        "--encoder", choices=("gru4rec", "sasrec", "hstu"), default="gru4rec"
    )
    parser.add_argument(
        "--train-windows",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="train on windows (see tfrec-tricks train --help). Default: on",
    )
    parser.add_argument(
        "--model",
        type=common.json_object,
        default={},
        help="other model settings, a JSON object. Default: {}",
    )
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--patience", type=int, default=5)
    parser.add_argument(
        "--work-dir",
        default=WORK_DIR,
        help=f"the work files and runs. Default: {WORK_DIR}",
    )
    parser.add_argument(
        "--report-dir",
        default=REPORT_DIR,
        help="where the report goes. Default: benchmarks/results/cold-items",
    )
    return parser


def train_runs(
    args: argparse.Namespace, paths: dict, training: TrainingData
) -> list[dict]:
    """One run per seed (reused when finished): its metrics, wall seconds,
    whether its head ranks the history last, and the cold targets'
    metrics from its test scores (``model_ranks``), as they are and with
    the cold items first."""
    cold = cold_items(training)
    runs = []
    for seed in args.seeds:
        config = run_config(args, paths, seed)
        print(f"== {config.name}", flush=True)
        start = time.perf_counter()
        result = train(config, verbose=2)
        seconds = time.perf_counter() - start
        ranks = model_ranks(result.model, training, config, cold)
        runs.append(
            {
                "metrics": result.metrics,
                "wall_seconds": seconds,
                "excludes_history": bool(
                    result.model.head.excludes_history(False)
                ),
                "rescored": cold_metrics(
                    ranks["ranks"], ranks["targets"], cold, ranks["ties"]
                ),
                "cold first": cold_metrics(
                    ranks["cold first"],
                    ranks["targets"],
                    cold,
                    ranks["cold first ties"],
                ),
            }
        )
        del result
    return runs


def check_runs(runs: list[dict], model: dict, targets: dict) -> bool:
    """Whether the runs' heads rank the history last; refuses runs whose
    cold targets are not the baselines' or whose heads differ, and warns
    when the rescored cold NDCG@10 is not the runs' own."""
    if abs(model["cold share"] - targets["cold share"]) > 1e-9:
        raise RuntimeError(
            "The runs' cold test targets are not the baselines': shares "
            f"{model['cold share']} and {targets['cold share']}"
        )
    heads = {run["excludes_history"] for run in runs}
    if len(heads) != 1:
        raise RuntimeError(
            "Some runs rank the history last and others do not: the "
            "baselines cannot follow both. Pin --model '{\"head\": ...}'."
        )
    official = [
        r["metrics"]["test_by_target"]["cold"].get("ndcg@10") for r in runs
    ]
    if None not in official and not np.allclose(
        official, model["rescored ndcg@10"], atol=1e-4
    ):
        print(
            "Warning: the runs' cold NDCG@10 and this script's rescoring "
            f"differ: {official} and {model['rescored ndcg@10']}",
            flush=True,
        )
    return heads.pop()


def report_parts(args: argparse.Namespace) -> list[str]:
    """What the report is named after: the data, the encoder, and the
    share and draw when not the defaults."""
    parts = [data_label(args), args.encoder]
    if args.cold_share != 0.1:
        parts.append(f"cold{args.cold_share * 100:g}")
    if args.seed != 0:
        parts.append(f"pick{args.seed}")
    return parts


def main(argv: list[str] | None = None) -> int:
    """Writes the work files, trains (or reuses) the runs, scores the
    baselines on the same test examples, writes the report."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.data == "file" and not (args.data_path and args.item_features):
        parser.error("--data file needs --data-path FILE and --item-features")
    if args.data != "file" and args.data not in MOVIELENS_METADATA:
        parser.error(
            f"--data takes {', '.join(MOVIELENS_METADATA)} or file. "
            f"Received: {args.data!r}"
        )
    if not 0 < args.cold_share < 1:
        parser.error(f"--cold-share is in (0, 1). Received: {args.cold_share}")
    started = time.perf_counter()
    paths, held = write_work_files(args)
    training = load_training_data(run_config(args, paths, args.seeds[0]))
    targets = target_counts(training, held.held)
    runs = train_runs(args, paths, training)
    model = model_results(runs)
    excludes_history = check_runs(runs, model, targets)
    numbers = {
        "data": data_label(args),
        "encoder": args.encoder,
        "features": list(args.features),
        "history ranked last": excludes_history,
        "held out": {
            "items": held.held,
            "num_items": held.num_items,
            "removed": held.removed,
            "dropped_users": held.dropped_users,
            "interactions": held.interactions,
            "files": paths,
        },
        "targets": targets,
        "model": model,
        "baselines": baseline_results(
            training, args.attribute, excludes_history, held.counts_before
        ),
    }
    stem = common.report_stem(
        args.report_dir, "cold_items", *report_parts(args)
    )
    command = common.command_line("cold_items", argv)
    report = write_report_files(stem, args, numbers, command)
    print(report)
    print(f"wall time: {time.perf_counter() - started:.0f} s", flush=True)
    return 0


def write_report_files(stem: str, args, numbers: dict, command: str) -> str:
    """Writes the report's markdown, JSON and chart; the markdown."""
    text = report_text(args, numbers, command)
    common.write_report(
        stem, text, numbers, lambda path: draw_chart(numbers, path)
    )
    return text


if __name__ == "__main__":
    sys.exit(main())
