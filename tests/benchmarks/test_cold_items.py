"""cold_items on a tiny file: the hold-out as the runs prepare it, the
baselines against a hand ranking, the report end to end."""

import json

import numpy as np
import pytest

from benchmarks import cold_baselines, cold_holdout, cold_items
from tfrec_tricks.evaluation.full_ranking import metrics_from_ranks
from tfrec_tricks.training.training_data import load_training_data

NUM_USERS, NUM_ITEMS = 40, 30
GENRES = ("Drama", "Comedy", "War")


@pytest.fixture
def tiny_files(tmp_path):
    """A tiny sasrec file (40 users, 6-10 distinct items of 30 each) and
    its .item file (one or two genres and a year per item)."""
    rng = np.random.default_rng(7)
    lines = []
    for user in range(1, NUM_USERS + 1):
        length = int(rng.integers(6, 11))
        items = rng.choice(np.arange(1, NUM_ITEMS + 1), length, replace=False)
        lines += [f"u{user} i{item}\n" for item in items]
    interactions = tmp_path / "tiny.txt"
    interactions.write_text("".join(lines))
    rows = ["item_id:token\tgenres:token_seq\tyear:float\n"]
    for item in range(1, NUM_ITEMS + 1):
        genres = GENRES[item % 3 : item % 3 + 1 + item % 2]
        rows.append(f"i{item}\t{' '.join(genres)}\t{1990 + item}\n")
    items = tmp_path / "tiny.item"
    items.write_text("".join(rows))
    return interactions, items


def parse(argv):
    return cold_items.build_parser().parse_args(argv)


def tiny_args(tiny_files, tmp_path, *extra):
    interactions, items = tiny_files
    return [
        "--data",
        "file",
        "--data-path",
        str(interactions),
        "--format",
        "sasrec",
        "--item-features",
        str(items),
        "--cold-share",
        "0.2",
        "--work-dir",
        str(tmp_path / "work"),
        "--report-dir",
        str(tmp_path / "report"),
        *extra,
    ]


def read_sequences(path):
    sequences = {}
    for line in open(path):
        user, item = line.split()
        sequences.setdefault(user, []).append(item)
    return sequences


# ------------------------------------------------------- held-out filter


def test_held_out_items_are_only_at_the_last_two_positions(
    tiny_files, tmp_path
):
    args = parse(tiny_args(tiny_files, tmp_path))
    paths, held = cold_holdout.write_work_files(args)
    assert len(held.held) == 6 == round(0.2 * held.num_items)
    original = read_sequences(tiny_files[0])
    written = read_sequences(paths["interactions"])
    held_set = set(held.held)
    # A user left with fewer than 4 items, a held-out one in a training
    # position, is dropped (this draw has one); the others keep their order.
    dropped = [user for user in original if user not in written]
    assert len(dropped) == held.dropped_users == 1
    assert list(written) == [u for u in original if u not in dropped]
    for user in dropped:
        assert cold_holdout.hold_out_sequence(original[user], held_set) is None
    removed = 0
    for user, items in written.items():
        before = original[user]
        # The last two positions are kept as they were.
        assert items[-2:] == before[-2:]
        # Earlier, every non-held-out item is kept in order, and no
        # held-out item is left.
        assert items[:-2] == [i for i in before[:-2] if i not in held_set]
        removed += len(before) - len(items)
    assert removed == held.removed > 0
    # The .item file keeps every item, the held-out ones included.
    item_lines = open(paths["items"]).read().splitlines()
    assert item_lines[0] == "item_id:token\tgenres:token_seq\tyear:float"
    assert len(item_lines) == 1 + NUM_ITEMS
    assert item_lines[1] == "i1\tComedy War\t1991.0"
    # Prepared as the runs prepare it: no held-out item trains, and some
    # test targets are cold.
    training = load_training_data(cold_items.run_config(args, paths, 0))
    targets = cold_holdout.target_counts(training, held.held)
    assert 0 < targets["held out"] <= targets["cold"] < targets["test targets"]
    names = training.vocabulary.items
    assert {
        names[i] for i in np.flatnonzero(training.prepared.trained_items)
    }.isdisjoint(held_set)
    # The same bytes again: the files are not rewritten (runs reused).
    stamp = (tmp_path / "work" / "data").stat().st_mtime_ns
    before = {k: open(p).read() for k, p in paths.items()}
    again, _ = cold_holdout.write_work_files(args)
    assert again == paths
    assert {k: open(p).read() for k, p in again.items()} == before
    assert (tmp_path / "work" / "data").stat().st_mtime_ns == stamp


# ------------------------------------------------------- baselines


@pytest.mark.parametrize("exclude_history", [False, True])
def test_baselines_against_a_hand_ranking(
    tiny_files, tmp_path, exclude_history
):
    args = parse(tiny_args(tiny_files, tmp_path))
    paths, held = cold_holdout.write_work_files(args)
    training = load_training_data(cold_items.run_config(args, paths, 0))
    data = training.prepared
    counts = data.statistics.item_counts
    cold = ~data.trained_items
    cold[0] = False
    names = data.vocabulary.items
    real = range(1, len(names))
    # Genre popularity by hand, from the raw .item rows and raw counts.
    raw_genres = {}
    for line in open(paths["items"]).read().splitlines()[1:]:
        item, tokens, _ = line.split("\t")
        raw_genres[item] = set(tokens.split())
    popularity = {
        g: sum(counts[i] for i in real if g in raw_genres[names[i]])
        for g in GENRES
    }

    def key(i):
        held_genres = raw_genres[names[i]]
        mean = sum(popularity[g] for g in held_genres) / len(held_genres)
        return (mean, counts[i])

    def candidates(history):
        if not exclude_history:
            return list(real)
        return [j for j in real if j not in set(history)]

    def pessimistic_rank(i, history, key):
        others = [j for j in candidates(history) if j != i]
        return 1 + sum(1 for j in others if key(j) >= key(i))

    examples = [
        (history, target)
        for history, target in zip(data.test.history, data.test.target)
        if cold[target]
    ]
    assert examples
    by_hand = {
        "popularity within attribute": key,
        "popularity": lambda i: counts[i],
        "new items, by attribute": lambda i: (cold[i], *key(i)),
    }
    results = cold_baselines.baseline_results(
        training, "genres", exclude_history
    )
    for name, score in by_hand.items():
        ranks = [pessimistic_rank(t, h, score) for h, t in examples]
        expected = metrics_from_ranks(ranks, (10, 100))
        expected["median rank"] = np.median(ranks)
        assert results[name]["cold"] == pytest.approx(expected)
    # Random: each example's target equally likely at every rank among
    # its candidates; cold items first, at random: among the cold ones.
    for name, pool in (
        ("random", lambda h: candidates(h)),
        (
            "new items, random order",
            lambda h: [j for j in candidates(h) if cold[j]],
        ),
    ):
        sizes = [len(pool(h)) for h, _ in examples]
        expected = {
            metric: np.mean(
                [
                    metrics_from_ranks(np.arange(1, n + 1), (10, 100))[metric]
                    for n in sizes
                ]
            )
            for metric in metrics_from_ranks([1], (10, 100))
        }
        expected["median rank"] = np.median([(n + 1) / 2 for n in sizes])
        assert results[name]["cold"] == pytest.approx(expected)
    if not exclude_history:
        uniform = metrics_from_ranks(np.arange(1, len(names)), (10, 100))
        assert results["random"]["all"] == pytest.approx(uniform)
    # Popularity: every cold item counts 0, so the cold items all tie and
    # each ranks last (pessimistic).
    assert results["popularity"]["cold"]["hr@10"] == 0


# ------------------------------------------------------- end to end


@pytest.mark.slow
def test_main_trains_and_writes_the_report(tiny_files, tmp_path, monkeypatch):
    argv = tiny_args(
        tiny_files,
        tmp_path,
        "--seeds",
        "0",
        "--epochs",
        "1",
        "--model",
        '{"embedding_dim": 8}',
    )
    assert cold_items.main(argv) == 0
    stem = tmp_path / "report" / "cold_items-tiny-gru4rec-cold20"
    for suffix in (".md", ".json", ".png"):
        assert stem.with_suffix(suffix).is_file()
    numbers = json.loads(stem.with_suffix(".json").read_text())
    model = numbers["model"]
    assert model["cold share"] == numbers["targets"]["cold share"]
    # The script's rescoring of the run's test ranks gives its metrics.
    assert model["rescored ndcg@10"] == pytest.approx(
        model["cold ndcg@10"]["values"], abs=1e-6
    )
    assert 1 <= model["cold median rank"]["mean"] <= NUM_ITEMS
    assert set(numbers["baselines"]) == set(cold_items.BASELINES)
    text = stem.with_suffix(".md").read_text()
    assert "| model |" in text and "| popularity within attribute |" in text
    assert "python -m benchmarks.cold_items --data file" in text
    # New items into the list: offset 0 is the model's own list, scored
    # as the run's ranks are; the chosen offset and slots are reported.
    lists = model["new items into the list"]
    assert lists["model's list"]["cold hr@10"]["values"] == pytest.approx(
        model["cold hr@10"]["values"], abs=1e-6
    )
    assert set(lists["slots"]) == {"1", "2", "3"}
    assert "### New items into the list (test)" in text
    assert "| 2 reserved slots |" in text
    assert (tmp_path / "report" / (stem.name + "-lists.png")).is_file()
    # Run again: the finished run is reused, the report is the same.
    assert cold_items.main(argv) == 0
    assert (
        json.loads(stem.with_suffix(".json").read_text())["model"][
            "cold ndcg@10"
        ]
        == numbers["model"]["cold ndcg@10"]
    )
    # Another machine (no run in its work folder) carries the recorded
    # seed over instead of training it: the same numbers, and said.
    elsewhere = list(argv)
    elsewhere[elsewhere.index("--work-dir") + 1] = str(tmp_path / "elsewhere")
    assert cold_items.main(elsewhere) == 0
    again = json.loads(stem.with_suffix(".json").read_text())
    assert again["model"]["cold ndcg@10"] == numbers["model"]["cold ndcg@10"]
    assert again["runs"][0]["carried over"]
    assert not list((tmp_path / "elsewhere").glob("*-seed0"))
    assert "same settings): seeds 0." in stem.with_suffix(".md").read_text()
    # A record trained with other settings is not carried over: trained.
    again["runs"][0]["settings"]["epochs"] = 99
    stem.with_suffix(".json").write_text(json.dumps(again))

    def trains(config, verbose):
        raise RuntimeError(f"trains {config.name}")

    monkeypatch.setattr(cold_items, "train", trains)
    elsewhere[elsewhere.index("--work-dir") + 1] = str(tmp_path / "third")
    with pytest.raises(RuntimeError, match="trains .*seed0"):
        cold_items.main(elsewhere)


def test_popularity_before_the_hold_out_counts_the_removed_interactions(
    tiny_files, tmp_path
):
    args = parse(tiny_args(tiny_files, tmp_path))
    paths, held = cold_holdout.write_work_files(args)
    # The counts before the hold-out are the item counts of the original
    # file prepared as the runs prepare theirs.
    original = load_training_data(
        cold_items.run_config(
            args, {**paths, "interactions": str(tiny_files[0])}, 0
        )
    ).prepared
    names = original.vocabulary.items
    expected = {
        names[i]: int(c) for i, c in enumerate(original.statistics.item_counts)
    }
    assert held.counts_before == {k: v for k, v in expected.items() if v}
    # Held-out items had training targets before the hold-out, none after.
    assert any(held.counts_before.get(item) for item in held.held)
    training = load_training_data(cold_items.run_config(args, paths, 0))
    scores = cold_baselines.baseline_scores(
        training, "genres", held.counts_before
    )
    before = scores["popularity before the hold-out"]
    vocabulary = training.vocabulary.items
    assert before[0] == 0
    assert [before[i] for i in range(1, len(vocabulary))] == [
        held.counts_before.get(name, 0) for name in vocabulary[1:]
    ]
    results = cold_baselines.baseline_results(
        training, "genres", True, held.counts_before
    )
    # The reference ranks cold targets above plain popularity, which puts
    # every cold item last.
    assert (
        results["popularity before the hold-out"]["cold"]["median rank"]
        < results["popularity"]["cold"]["median rank"]
    )
    assert "popularity before the hold-out" not in (
        cold_baselines.baseline_results(training, "genres", True)
    )
