"""cold_items: the held-out filter, the baselines' formulas, the report."""

import itertools
import json
import math

import numpy as np
import pytest

from benchmarks import cold_items
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
    paths, held = cold_items.write_work_files(args)
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
        assert cold_items.hold_out_sequence(original[user], held_set) is None
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
    targets = cold_items.target_counts(training, held.held)
    assert 0 < targets["held out"] <= targets["cold"] < targets["test targets"]
    names = training.vocabulary.items
    assert {
        names[i] for i in np.flatnonzero(training.prepared.trained_items)
    }.isdisjoint(held_set)
    # The same bytes again: the files are not rewritten (runs reused).
    stamp = (tmp_path / "work" / "data").stat().st_mtime_ns
    before = {k: open(p).read() for k, p in paths.items()}
    again, _ = cold_items.write_work_files(args)
    assert again == paths
    assert {k: open(p).read() for k, p in again.items()} == before
    assert (tmp_path / "work" / "data").stat().st_mtime_ns == stamp


def test_a_user_whose_held_out_item_would_train_is_dropped():
    held = {"x"}
    # 5 items left: training positions 0..2 hold no x.
    assert cold_items.hold_out_sequence(list("axbcdx"), held) == list("abcdx")
    # Left with a x x: no validation target (fewer than 4 items), so the
    # x at position 1 is a training target.
    assert cold_items.hold_out_sequence(list("axx"), held) is None
    assert cold_items.hold_out_sequence(list("ab"), {"b"}) is None
    assert cold_items.hold_out_sequence(list("a"), {"a"}) == ["a"]
    result = cold_items.hold_out(
        [("u1", list("abcdef")), ("u2", list("ab"))], share=0.5, seed=0
    )
    assert len(result.held) == 3
    assert result.dropped_users + len(result.sequences) == 2


# ------------------------------------------------------- baselines


def test_attribute_popularity_by_hand():
    # Items 1..4 (0 padding). Tokens: 2 = Drama, 3 = War, 1 = OOV.
    tokens = np.array([[0, 0], [2, 3], [2, 0], [3, 3], [1, 0]])
    counts = np.array([0, 4, 6, 0, 0])
    # Drama: items 1, 2 -> 4 + 6 = 10; War: items 1, 3 -> 4; OOV: 0.
    # Item 1: (10 + 4) / 2; item 2: 10; item 3 (War twice): 4; item 4: 0.
    np.testing.assert_allclose(
        cold_items.attribute_popularity(tokens, counts),
        [0.0, 7.0, 10.0, 4.0, 0.0],
    )


def test_lexicographic_orders_by_the_first_key_then_the_next():
    primary = np.array([0.0, 7.0, 7.0, 4.0, 7.0])
    secondary = np.array([0, 4, 0, 0, 4])
    scores = cold_items.lexicographic(primary, secondary)
    assert scores[1] == scores[4] > scores[2] > scores[3] > scores[0]


def test_random_expectation_by_hand():
    # 25 real items: every rank 1..25 equally likely.
    expected = metrics_from_ranks(np.arange(1, 26))
    ndcg = sum(1 / math.log2(r + 1) for r in range(1, 11)) / 25
    assert expected["ndcg@10"] == pytest.approx(ndcg)
    assert expected["hr@10"] == pytest.approx(10 / 25)


@pytest.mark.parametrize("exclude_history", [False, True])
def test_ties_at_random_average_every_tie_order(exclude_history):
    scores = np.array([9.0, 1.0, 3.0, 3.0, 3.0, 0.0, 3.0])
    history = np.array([[2, 0], [6, 1]])
    targets = np.array([3, 5])
    ranks, ties = cold_items.baseline_ranks(
        scores, history, targets, exclude_history
    )
    # Brute force: every order of the real items (the history's left out
    # when excluded: they rank below) that keeps the scores sorted,
    # equally likely; the mean of each metric over them.
    brute = []
    for row, target in zip(history, targets):
        real = [i for i in range(1, 7) if not (exclude_history and i in row)]
        orders = [
            order
            for order in itertools.permutations(real)
            if all(scores[a] >= scores[b] for a, b in zip(order, order[1:]))
        ]
        brute.append([order.index(target) + 1 for order in orders])
    # Pessimistic: the last of its ties.
    assert ranks.tolist() == [max(r) for r in brute]
    exact = cold_items.expected_metrics(ranks - ties, ties, 6, (1, 10))
    for name, value in exact.items():
        by_order = np.mean(
            [metrics_from_ranks(r, (1, 10))[name] for r in brute]
        )
        assert value == pytest.approx(by_order)


@pytest.mark.parametrize("exclude_history", [False, True])
def test_baselines_against_a_hand_ranking(
    tiny_files, tmp_path, exclude_history
):
    args = parse(tiny_args(tiny_files, tmp_path))
    paths, held = cold_items.write_work_files(args)
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
    results = cold_items.baseline_results(training, "genres", exclude_history)
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
def test_main_trains_and_writes_the_report(tiny_files, tmp_path):
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
    # Run again: the finished run is reused, the report is the same.
    assert cold_items.main(argv) == 0
    assert (
        json.loads(stem.with_suffix(".json").read_text())["model"][
            "cold ndcg@10"
        ]
        == numbers["model"]["cold ndcg@10"]
    )


def test_popularity_before_the_hold_out_counts_the_removed_interactions(
    tiny_files, tmp_path
):
    args = parse(tiny_args(tiny_files, tmp_path))
    paths, held = cold_items.write_work_files(args)
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
    scores = cold_items.baseline_scores(training, "genres", held.counts_before)
    before = scores["popularity before the hold-out"]
    vocabulary = training.vocabulary.items
    assert before[0] == 0
    assert [before[i] for i in range(1, len(vocabulary))] == [
        held.counts_before.get(name, 0) for name in vocabulary[1:]
    ]
    results = cold_items.baseline_results(
        training, "genres", True, held.counts_before
    )
    # The reference ranks cold targets above plain popularity, which puts
    # every cold item last.
    assert (
        results["popularity before the hold-out"]["cold"]["median rank"]
        < results["popularity"]["cold"]["median rank"]
    )
    assert "popularity before the hold-out" not in (
        cold_items.baseline_results(training, "genres", True)
    )
