"""Choosing among retrained candidates (the retraining itself: test_search)."""

import types

from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.tuning import import_keras_tuner, selection

keras_tuner = import_keras_tuner()


def _trial(trial_id, score, **values):
    hp = keras_tuner.HyperParameters()
    hp.values.update(values)
    return types.SimpleNamespace(
        trial_id=trial_id,
        status="COMPLETED" if score is not None else "FAILED",
        score=score,
        hyperparameters=hp,
    )


def test_candidates_are_the_defaults_and_the_best_distinct_trials(hypermodel):
    config = TrainConfig(model=dict(hypermodel.fixed))
    trials = [
        _trial("0", 0.30),  # the defaults
        _trial("1", 0.35, dropout=0.1),
        _trial("2", 0.34, dropout=0.1),  # the same configuration again
        _trial("3", 0.33, batch_size=64),
        _trial("4", 0.40, dropout=0.3, head="cpr"),
        _trial("5", None, dropout=0.4),
    ]
    tuner = types.SimpleNamespace(
        oracle=types.SimpleNamespace(trials={t.trial_id: t for t in trials})
    )
    chosen = selection.candidates(tuner, hypermodel, config, top=2)
    assert [c.label for c in chosen] == ["defaults", "trial 4", "trial 1"]
    assert [c.search_score for c in chosen] == [0.30, 0.40, 0.35]
    assert chosen[0].config is config
    assert chosen[1].config.model["head"] == "cpr"
    assert chosen[2].config.model["dropout"] == 0.1
    assert chosen[2].config.batch_size == 128
    more = selection.candidates(tuner, hypermodel, config, top=5)
    assert [c.label for c in more][3:] == ["trial 3"]
    assert more[3].config.batch_size == 64


def test_technique_summary():
    cpr = TrainConfig(
        model={
            "head": "cpr",
            "cpr_mi": True,
            "tie_embeddings": False,
            "sse_item_probability": 0.1,
            "features": ("time_gap",),
        }
    )
    assert selection.technique_summary(cpr, 500) == (
        "CPR (context, pointer, 100, Mi, base loss 1); untied; "
        "SSE item 0.1 / label 0; soft one-hot time_gap (10 buckets)"
    )
    assert selection.technique_summary(TrainConfig(), 500) == "softmax; tied"


def _row(label, validation, test):
    return {
        "label": label,
        "search_score": None if label == "defaults" else 0.3,
        "validation": [validation],
        "test": [test],
        "validation_mean": validation,
        "test_mean": test,
        "training_minutes": 1.5,
        "techniques": "softmax; tied",
        "differs": [] if label == "defaults" else ["dropout: 0.2 -> 0.1"],
    }


def test_pick_keeps_the_defaults_unless_beaten(tmp_path):
    defaults = _row("defaults", 0.30, 0.31)
    tie = _row("trial 1", 0.30, 0.40)
    assert selection.pick([defaults, tie]) is defaults
    better = _row("trial 2", 0.32, 0.33)
    assert selection.pick([defaults, tie, better]) is better

    text = selection.write_report(
        [defaults, better], better, str(tmp_path / "selection.md")
    )
    assert (
        "| **trial 2** (chosen) | 0.3000 | 0.3200 | 0.3300 | +6.7% / +6.5% | "
        "1.5 |"
    ) in text
    assert "dropout: 0.2 -> 0.1" in text
    assert "keep them" not in text
    text = selection.write_report(
        [defaults, tie], defaults, str(tmp_path / "selection.md")
    )
    assert "| **defaults** (chosen) | – |" in text
    assert "No trial beat the defaults on validation: keep them." in text


def test_one_change_candidates_change_one_switch_at_a_time():
    defaults = TrainConfig(model={"embedding_dim": 8})
    chosen = TrainConfig(
        batch_size=64,
        learning_rate=0.003,
        model={
            "embedding_dim": 8,
            "head": "cpr",
            "cpr_mi": True,
            "head_dropout": 0.3,
            "dropout": 0.1,
        },
    )
    found = {
        c.label: c.config
        for c in selection.one_change_candidates(defaults, chosen, 500)
    }
    assert sorted(found) == [
        "defaults + batch_size",
        "defaults + dropout",
        "defaults + head",
        "defaults + learning_rate",
    ]
    head = found["defaults + head"]
    assert head.model == {
        "embedding_dim": 8,
        "head": "cpr",
        "cpr_mi": True,
        "head_dropout": 0.3,
    }
    assert (head.batch_size, head.training_learning_rate()) == (128, 1e-3)
    rate = found["defaults + learning_rate"]
    assert (rate.learning_rate, rate.model) == (0.003, {"embedding_dim": 8})
    assert found["defaults + batch_size"].batch_size == 64
    assert selection.one_change_candidates(defaults, defaults, 500) == []


def test_settings_compare_the_effective_head_dropout():
    # train's None is the head's default: the same model as 0.3 given.
    default = TrainConfig(model={"head": "cpr"})
    explicit = TrainConfig(model={"head": "cpr", "head_dropout": 0.3})
    other = TrainConfig(model={"head": "cpr", "head_dropout": 0.1})
    assert selection.settings(default, 500) == selection.settings(explicit, 500)
    assert selection.settings(default, 500) != selection.settings(other, 500)
    assert selection.one_change_candidates(default, explicit, 500) == []
