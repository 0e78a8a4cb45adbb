"""Choosing among retrained candidates (the retraining itself: test_search)."""

import types

from tuning_helpers import FIXED, item_table, token_config

from tfrec_tricks.models.config import ModelConfig
from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.training.training_data import prepare_in_memory
from tfrec_tricks.tuning import (
    SequentialRetrievalHyperModel,
    import_keras_tuner,
    selection,
)
from tfrec_tricks.tuning.item_feature_space import ItemFeatureSpace

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


def _item_search(data):
    """A search with --item-features: its hypermodel and its config."""
    space = ItemFeatureSpace(item_table(), by_default=True)
    hypermodel = SequentialRetrievalHyperModel(
        data, fixed=FIXED, item_feature_space=space
    )
    config = TrainConfig(item_features="items.item", model=dict(FIXED))
    return hypermodel, config


def _values(hypermodel, **values):
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    hp.values.update(values)
    hp.ensure_active_values()
    return hp


def test_trial_configs_read_the_trials_item_features_as_train(data):
    hypermodel, config = _item_search(data)
    every = selection.trial_config(_values(hypermodel), hypermodel, config)
    # The defaults' attributes: written as the search's own options, so
    # that the selection sees the defaults.
    assert (every.model["features"], every.item_features) == (
        (),
        "items.item",
    )
    assert selection.settings(every, 41) == selection.settings(config, 41)
    year = selection.trial_config(
        _values(hypermodel, item_feature_set="year", features="time_gap"),
        hypermodel,
        config,
    )
    assert (year.model["features"], year.item_features) == (
        ("time_gap", "year"),
        "items.item",
    )
    # Id-only: without the file (with it, train would fuse every one).
    none = selection.trial_config(
        _values(hypermodel, item_feature_set="none"), hypermodel, config
    )
    assert (none.model["features"], none.item_features) == ((), None)
    assert selection.settings(none, 41) != selection.settings(config, 41)


def test_candidates_tell_the_defaults_from_id_only(data):
    hypermodel, config = _item_search(data)
    trials = [
        _trial("0", 0.30),  # the defaults: every attribute
        _trial("1", 0.35, item_feature_set="none"),
        _trial("2", 0.32, item_feature_set="genre,year"),  # the defaults
    ]
    tuner = types.SimpleNamespace(
        oracle=types.SimpleNamespace(trials={t.trial_id: t for t in trials})
    )
    chosen = selection.candidates(tuner, hypermodel, config, top=3)
    assert [c.label for c in chosen] == ["defaults", "trial 1"]
    assert chosen[0].search_score == 0.32
    assert chosen[1].config.item_features is None


def test_one_change_candidates_change_the_item_features_together():
    defaults = TrainConfig(item_features="items.item")
    chosen = TrainConfig(
        model={"features": ("genre",), "feature_fusion": "concat"},
        item_features="items.item",
    )
    (change,) = selection.one_change_candidates(defaults, chosen, 500)
    assert change.label == "defaults + features"
    assert change.config.model == {
        "features": ("genre",),
        "feature_fusion": "concat",
    }
    id_only = TrainConfig()
    (change,) = selection.one_change_candidates(defaults, id_only, 500)
    assert (change.label, change.config.item_features) == (
        "defaults + features",
        None,
    )


def test_technique_summary_names_the_trained_item_features():
    config = TrainConfig(model={"features": ("time_gap", "genre")})
    trained = ModelConfig(
        num_items=50,
        features=("time_gap",),
        item_features=(
            {"name": "genre", "kind": "token_seq", "width": 2,
             "vocabulary_size": 6, "mean": 0.0, "variance": 1.0},
        ),
        feature_fusion="concat",
    )  # fmt: skip
    assert selection.technique_summary(config, 50, trained) == (
        "softmax; tied; soft one-hot time_gap (10 buckets); item features "
        "genre (concat)"
    )


def test_a_trials_token_features_are_the_ones_train_reads(
    token_data, token_file
):
    # A searched token feature: the trial's TrainConfig names it, so that
    # train (retraining the trial) keeps it, and only it.
    hypermodel = SequentialRetrievalHyperModel(token_data, fixed=FIXED)
    config = token_config(token_file, model=dict(FIXED))
    for value, features in (
        ("device", ("device",)),
        ("rating,device", ("rating", "device")),
        ("rating", ("rating",)),
    ):
        hp = _values(hypermodel, features=value)
        trial = selection.trial_config(hp, hypermodel, config)
        assert trial.model["features"] == features
        _, data = prepare_in_memory(trial)
        resolved = trial.model_config(data.num_items, data)
        assert resolved == hypermodel.model_config(hp), value
    # The defaults (none read) are written as the search's own options.
    defaults = selection.trial_config(_values(hypermodel), hypermodel, config)
    assert defaults.model["features"] == ()
    assert selection.settings(defaults, 21) == selection.settings(config, 21)


def test_the_searchs_own_features_are_kept_when_a_trial_reads_them(
    token_data, token_file
):
    # --features all: the defaults' trial is written as the defaults, not
    # as a second configuration with the names spelled out.
    fixed = {**FIXED, "features": ("all",)}
    hypermodel = SequentialRetrievalHyperModel(token_data, fixed=fixed)
    config = token_config(token_file, model=fixed)
    trial = selection.trial_config(_values(hypermodel), hypermodel, config)
    assert trial.model["features"] == ("all",)
    assert selection.settings(trial, 21) == selection.settings(config, 21)
    summary = selection.technique_summary(
        trial, 21, hypermodel.model_config(_values(hypermodel))
    )
    assert summary.endswith(
        "soft one-hot rating (10 buckets); token features device"
    )
