"""Small searches with each tuner: every trial COMPLETED, results usable;
and ``parse_choices``, the values of ``tune --choices``."""

import dataclasses
import glob
import json
import os

import pytest
import tensorflow as tf
from tuning_helpers import (
    COMPILE,
    FIXED,
    search_data,
    token_config,
    write_item_file,
)

from tests.run_helpers import tiny_config
from tfrec_tricks.cli import main
from tfrec_tricks.cli.config_file import load_config_file
from tfrec_tricks.training.train_config import TrainConfig
from tfrec_tricks.training.training_data import (
    prepare_in_memory,
    prepare_source,
)
from tfrec_tricks.tuning import (
    SequentialRetrievalHyperModel,
    import_keras_tuner,
    selection,
)
from tfrec_tricks.tuning.search import (
    SearchOptions,
    config_file,
    parse_choices,
    run_search,
)
from tfrec_tricks.tuning.tuners import build_tuner

keras_tuner = import_keras_tuner()


def _search(hypermodel, tmp_path, tuner, **options):
    search_tuner = build_tuner(
        hypermodel,
        tuner,
        directory=str(tmp_path),
        project_name=tuner,
        seed=1,
        **options,
    )
    logs = tmp_path / "tensorboard"
    search_tuner.search(
        **search_data(hypermodel),
        epochs=1,
        verbose=0,
        callbacks=[tf.keras.callbacks.TensorBoard(str(logs))],
    )
    return search_tuner, logs


def _assert_completed(search_tuner, count):
    trials = search_tuner.oracle.trials
    assert len(trials) == count
    statuses = {tid: t.status for tid, t in trials.items()}
    assert set(statuses.values()) == {"COMPLETED"}, statuses
    assert all(t.score is not None for t in trials.values())


def _hparams_logged(logs, trial_id):
    """True when the trial's log folder holds a TensorBoard hparams summary."""
    files = glob.glob(os.path.join(logs, trial_id, "execution0", "events*"))
    for path in files:
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.metadata.plugin_data.plugin_name == "hparams":
                    return True
    return False


@pytest.mark.slow
def test_random_search(hypermodel, tmp_path, capsys):
    search_tuner, logs = _search(hypermodel, tmp_path, "random", max_trials=3)
    _assert_completed(search_tuner, 3)

    best_hp = search_tuner.get_best_hyperparameters(1)[0]
    best_trial = search_tuner.oracle.get_best_trials(1)[0]
    config = hypermodel.model_config(best_hp)
    assert config.embedding_dim == FIXED["embedding_dim"]
    (model,) = search_tuner.get_best_models(1)
    validation = search_data(hypermodel)["validation_data"].batch(512)
    scores = model.evaluate(validation, return_dict=True, verbose=0)
    assert scores["ndcg@10"] == pytest.approx(best_trial.score, abs=1e-5)

    search_tuner.results_summary(3)
    assert "val_ndcg@10" in capsys.readouterr().out
    for trial_id in search_tuner.oracle.trials:
        assert _hparams_logged(str(logs), trial_id)


@pytest.mark.slow
def test_bayesian_optimization(hypermodel, tmp_path):
    pytest.importorskip(
        "scipy",
        reason="KerasTuner's BayesianOptimization needs scipy "
        "(keras-tuner[bayesian]), which is not installed",
    )
    # One random point, then two trials proposed by the Gaussian process.
    search_tuner, _ = _search(
        hypermodel, tmp_path, "bayesian", max_trials=3, num_initial_points=1
    )
    _assert_completed(search_tuner, 3)
    assert search_tuner.get_best_hyperparameters(1)[0].values


@pytest.mark.slow
def test_hyperband(hypermodel, tmp_path):
    # max_epochs=2, factor=2: two 1-epoch trials, the better one continued
    # for a second epoch from its checkpoint (at most 3 trials).
    search_tuner, _ = _search(
        hypermodel, tmp_path, "hyperband", max_trials=3, max_epochs=2, factor=2
    )
    trials = search_tuner.oracle.trials
    assert 2 <= len(trials) <= 3
    _assert_completed(search_tuner, len(trials))
    assert search_tuner.get_best_models(1)[0] is not None


@pytest.mark.slow
def test_run_search_writes_reports_train_accepts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run_search(
        _tiny_config(),
        SearchOptions(
            tuner="random",
            max_trials=3,
            output_dir="tuning",
            verbose=0,
            compile_options=COMPILE,
            retrain_top=1,
        ),
    )
    assert result.role == "local"
    assert [row["status"] for row in result.trials] == ["COMPLETED"] * 3
    folder = tmp_path / "tuning" / "synthetic"
    table = (folder / "trials.md").read_text()
    assert "| trial | status | val_ndcg@10 | epochs | minutes |" in table
    assert table.count("| COMPLETED |") == 3
    assert (folder / "trials.png").read_bytes()[:4] == b"\x89PNG"
    assert all(row["timing"]["seconds"] > 0 for row in result.trials)
    # The search's time is the oracle's clock: every trial fits in it.
    assert result.seconds >= sum(r["timing"]["seconds"] for r in result.trials)

    # The defaults and the best other trial, retrained; the chosen one
    # is the best on validation, the defaults unless beaten.
    defaults, other = result.selection
    assert defaults["label"] == "defaults" and other["label"] != "defaults"
    assert defaults["search_score"] == result.trials[0]["score"]
    for row in result.selection:
        run = json.loads(
            (folder / "selection" / f"{row['label'].replace(' ', '-')}-seed0"
             / "metrics.json").read_text()
        )  # fmt: skip
        assert row["validation"] == [run["validation"]["ndcg@10"]]
    chosen = max(
        result.selection, key=lambda r: (r["validation_mean"], r is defaults)
    )
    report = (folder / "selection.md").read_text()
    assert f"**{chosen['label']}** (chosen)" in report
    assert result.best_config["train"]["batch_size"] == (
        chosen["config"].batch_size
    )

    best = json.loads((folder / "best_config.json").read_text())
    assert set(best) == {"train", "model"}
    run_config = json.loads(json.dumps(best))  # what train writes
    assert best == run_config
    values = load_config_file(str(folder / "best_config.json"))
    assert values["model"]["embedding_dim"] == FIXED["embedding_dim"]
    status = main(
        [
            "train",
            "--config",
            str(folder / "best_config.json"),
            "--quiet",
            "--output-dir",
            str(tmp_path / "runs"),
        ]
    )
    assert status == 0
    written = json.loads(
        (tmp_path / "runs" / "synthetic-tuned" / "config.json").read_text()
    )
    # The run trained exactly the best configuration.
    assert written["model"] == best["model"]
    assert written["train"]["batch_size"] == best["train"]["batch_size"]


@pytest.mark.slow
def test_a_search_with_item_features_trains_them_and_train_takes_its_best(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    config = tiny_config(
        ".",
        epochs=1,
        name=None,
        model=dict(FIXED),
        item_features=write_item_file(tmp_path / "items.item"),
    )
    result = run_search(
        config,
        SearchOptions(
            tuner="random",
            max_trials=2,
            output_dir="tuning",
            verbose=0,
            compile_options=COMPILE,
            retrain_top=0,
        ),
    )
    assert [row["status"] for row in result.trials] == ["COMPLETED"] * 2
    hypermodel = result.hypermodel
    folder = tmp_path / "tuning" / "synthetic"
    search_file = json.loads((folder / "search.json").read_text())
    assert search_file["fingerprint"]["item_features"]["names"] == [
        "genre",
        "year",
    ]
    trials = sorted(
        result.tuner.oracle.trials.values(), key=lambda t: t.trial_id
    )
    # The first trial is the defaults: every attribute, as train fuses
    # them with --item-features.
    first = hypermodel.model_config(trials[0].hyperparameters)
    assert trials[0].hyperparameters.get("item_feature_set") == "genre,year"
    assert [f["name"] for f in first.item_features] == ["genre", "year"]
    # Every trial's configuration is one train takes (id-only included).
    for trial in trials:
        hp = trial.hyperparameters
        winner = selection.trial_config(hp, hypermodel, config)
        path = tmp_path / f"trial-{trial.trial_id}.json"
        path.write_text(json.dumps(config_file(winner, config, 46)))
        values = load_config_file(str(path))
        TrainConfig(**values["train"], model=values["model"])

    best_hp = result.tuner.get_best_hyperparameters(1)[0]
    best_model = hypermodel.model_config(best_hp)
    status = main(
        [
            "train",
            "--config",
            str(folder / "best_config.json"),
            "--quiet",
            "--output-dir",
            str(tmp_path / "runs"),
        ]
    )
    assert status == 0
    written = json.loads(
        (tmp_path / "runs" / "synthetic-tuned" / "config.json").read_text()
    )["model"]
    # The run trained the best trial's features, fusion and catalogue.
    for name in ("features", "item_features", "feature_fusion", "num_items"):
        assert written[name] == json.loads(
            json.dumps(getattr(best_model, name))
        ), name
    best = json.loads((folder / "best_config.json").read_text())
    assert best["model"]["num_items"] == written["num_items"]


@pytest.mark.slow
def test_tune_takes_an_item_file_and_choices_of_item_features(tmp_path):
    item_file = write_item_file(tmp_path / "items.item")
    status = main(
        ["tune", "--synthetic-users", "60", "--synthetic-items", "40",
         "--max-len", "10", "--embedding-dim", "8", "--encoder", "gru4rec",
         "--item-features", item_file, "--min-feature-count", "2",
         "--choices", "item_feature_set=year;genre,year",
         "--choices", "feature_fusion=concat",
         "--tuner", "random", "--max-trials", "1", "--epochs", "1",
         "--retrain-top", "0", "--output-dir", str(tmp_path / "tuning"),
         "--quiet"]
    )  # fmt: skip
    assert status == 0
    folder = tmp_path / "tuning" / "synthetic"
    fingerprint = json.loads((folder / "search.json").read_text())[
        "fingerprint"
    ]
    assert fingerprint["train"]["min_feature_count"] == 2
    assert fingerprint["space"]["item_feature_set"]["values"] == [
        "year",
        "genre,year",
    ]
    best = json.loads((folder / "best_config.json").read_text())
    # The first (and only) trial: the narrowed choice's first value.
    assert best["train"]["model"]["features"] == ["year"]
    assert best["train"]["model"]["feature_fusion"] == "concat"
    assert best["train"]["item_features"] == item_file


def _movielens_folder(tmp_path):
    """A tiny ml-1m-timed (GroupLens ratings): 30 users, 8 ratings each
    over 20 movies; its metadata is written by the test."""
    folder = tmp_path / "data" / "ml-1m"
    folder.mkdir(parents=True)
    (folder / "ratings_users1-2999.dat").write_text(
        "".join(
            f"{user}::{1 + (user * 3 + k) % 20}::4::{1000 * user + k}\n"
            for user in range(1, 31)
            for k in range(8)
        )
    )
    return folder


@pytest.mark.slow
def test_a_search_started_before_the_metadata_was_searched_resumes(
    tmp_path,
):
    folder = _movielens_folder(tmp_path)
    config = TrainConfig(
        data="ml-1m-timed",
        data_path=str(tmp_path / "data"),
        max_len=5,
        epochs=1,
        model=dict(FIXED),
    )

    def search(**options):
        return run_search(
            config,
            SearchOptions(
                tuner="random",
                max_trials=1,
                output_dir=str(tmp_path / "tuning"),
                verbose=0,
                compile_options=COMPILE,
                retrain_top=0,
                **options,
            ),
        )

    # Without the metadata the search has no item features: its
    # fingerprint records none, as searches before they existed.
    assert search().hypermodel.item_feature_space is None
    (folder / "movies.dat").write_text(
        "".join(
            f"{movie}::Movie {movie} ({1980 + movie})::Drama|Comedy\n"
            for movie in range(1, 25)
        )
    )
    resumed = search()  # not refused: the space it started with
    assert resumed.hypermodel.item_feature_space is None
    assert [row["status"] for row in resumed.trials] == ["COMPLETED"]
    fresh = search(overwrite=True)
    space = fresh.hypermodel.item_feature_space
    assert space.names() == ["genres", "year"]
    (trial,) = fresh.tuner.oracle.trials.values()
    # train reads the metadata only when --features names it: the first
    # trial is id-only.
    assert trial.hyperparameters.get("item_feature_set") == "none"
    assert "item_feature_set" in fresh.hypermodel.searched_names()


def _tiny_config():
    # Named after the data (no name), one epoch per trial.
    return tiny_config(".", epochs=1, name=None, model=dict(FIXED))


@pytest.mark.parametrize(
    "options, message",
    [
        ({"tuner": "hyperband"}, "max_epochs=1 \\(--epochs\\) below 3"),
        (
            {"tuner": "random", "fixed": {"batch_size": 64,
                                          "learning_rate": 1e-3},
             "hyperparameters": "everything"},
            "Nothing to search",
        ),
        pytest.param(  # times a few training steps to estimate an epoch
            {"tuner": "random", "max_minutes": 1e-6},
            "shorter than one epoch",
            marks=pytest.mark.slow,
        ),
        ({"tuner": "random", "seeds": 0}, "seeds at least 1"),
    ],
)  # fmt: skip
def test_bad_budgets_are_refused_before_any_trial(
    tmp_path, options, message, data
):
    if options.get("hyperparameters") == "everything":
        # One value for every setting the space has.
        hp = keras_tuner.HyperParameters()
        SequentialRetrievalHyperModel(data, fixed=FIXED).declare(hp)
        narrow = keras_tuner.HyperParameters()
        for h in hp.space:
            if h.name not in FIXED and h.name not in options["fixed"]:
                narrow.Fixed(h.name, h.default)
        options = dict(options, hyperparameters=narrow)
    with pytest.raises(ValueError, match=message):
        run_search(
            _tiny_config(),
            SearchOptions(
                output_dir=str(tmp_path),
                verbose=0,
                compile_options=COMPILE,
                **options,
            ),
        )
    assert not list(tmp_path.glob("*/search/trial_*"))


def test_cli_refuses_a_budget_with_a_clear_message(tmp_path, capsys):
    status = main(
        ["tune", "--synthetic-users", "60", "--synthetic-items", "40",
         "--epochs", "2", "--output-dir", str(tmp_path)]
    )  # fmt: skip
    assert status == 1
    error = capsys.readouterr().err
    assert "max_epochs=2 (--epochs) below 3" in error
    assert "--tuner random or bayesian" in error
    assert not list(tmp_path.iterdir())


def test_parse_choices():
    hp = parse_choices(
        [
            "embedding_dim=16,32",
            "dropout=0.1,0.3",
            "cpr_mi=true,false",
            "head=softmax,cpr",
            "cpr_reranker_ks=none;20;20,100",
        ]
    )
    space = {h.name: h.values for h in hp.space}
    assert space == {
        "embedding_dim": [16, 32],
        "dropout": [0.1, 0.3],
        "cpr_mi": [True, False],
        "head": ["softmax", "cpr"],
        "cpr_reranker_ks": ["none", "20", "20,100"],
    }
    assert parse_choices(None) is None
    with pytest.raises(ValueError, match="NAME=V1,V2"):
        parse_choices(["embedding_dim"])


@pytest.mark.parametrize(
    "item, message",
    [
        ("learning_rate=0.001,inf", "learning_rate=inf"),
        ("learning_rate=Infinity,0.1", "learning_rate=inf"),
        ("learning_rate=1e39,0.1", "learning_rate=1e+39"),
        ("dropout=NaN,0.1", "dropout=nan"),
        ("cpr_reranker_ks=none;20,1e39", "cpr_reranker_ks=1e+39"),
    ],
)
def test_parse_choices_refuses_non_finite_values(item, message):
    with pytest.raises(ValueError, match="finite number") as error:
        parse_choices([item])
    assert message in str(error.value) and repr(item) in str(error.value)


def test_parse_choices_of_item_features_separate_sets_with_semicolons():
    hp = parse_choices(["item_feature_set=none;genres;genres,year"])
    assert [h.values for h in hp.space] == [["none", "genres", "genres,year"]]


def test_parse_choices_reads_numbers_and_refuses_a_name_twice():
    hp = parse_choices(["dropout=.5,0.1", "head=softmax,cpr"])
    assert [h.values for h in hp.space] == [[0.5, 0.1], ["softmax", "cpr"]]
    with pytest.raises(ValueError, match="dropout is given twice"):
        parse_choices(["dropout=0.1,0.2", "dropout=0.3,0.4"])


# Every setting fixed but ``features``: a random search draws distinct
# values of it.
ONLY_FEATURES = {
    **FIXED,
    "dropout": 0.0,
    "learning_rate": 1e-3,
    "batch_size": 64,
    "tie_embeddings": True,
    "sse": False,
    "head": "softmax",
    "soft_one_hot_buckets": 10,
}


@pytest.mark.slow
def test_a_search_offers_the_token_features_and_trains_each_trials_choice(
    token_data, tmp_path
):
    hypermodel = SequentialRetrievalHyperModel(
        token_data, fixed=ONLY_FEATURES, compile_options=COMPILE
    )
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    active = [h.name for h in hp.space if hp.is_active(h)]
    assert [n for n in hypermodel.searched_names() if n in active] == [
        "features"
    ]
    built = []
    build = hypermodel.build

    def recording_build(hp):
        model = build(hp)
        built.append((hp.get("features"), model.config))
        return model

    hypermodel.build = recording_build
    search_tuner, _ = _search(hypermodel, tmp_path, "random", max_trials=3)
    _assert_completed(search_tuner, 3)
    trials = sorted(
        search_tuner.oracle.trials.values(), key=lambda t: t.trial_id
    )
    values = [trial.hyperparameters.get("features") for trial in trials]
    # The defaults first (no feature read), then two other choices: at
    # least one of them reads the token feature.
    assert values[0] == "none" and len(set(values)) == 3
    assert any("device" in value.split(",") for value in values)
    # Each trial's model (KerasTuner also builds one to read the space).
    assert set(values) <= {value for value, _ in built}
    for value, config in built:
        names = value.split(",")
        tokens = [f["name"] for f in config.token_features]
        assert tokens == (["device"] if "device" in names else []), value
        assert config.features == (("rating",) if "rating" in names else ())


@pytest.mark.slow
def test_a_search_with_a_fixed_token_feature_trains_it_as_its_best_config(
    token_file, tmp_path
):
    config = token_config(
        token_file,
        epochs=1,
        output_dir=str(tmp_path / "runs"),
        name="shop",
        model={**FIXED, "features": ("device",)},
    )
    result = run_search(
        config,
        SearchOptions(
            tuner="random",
            max_trials=2,
            output_dir=str(tmp_path / "tuning"),
            verbose=0,
            compile_options=COMPILE,
            retrain_top=1,
        ),
    )
    assert [row["status"] for row in result.trials] == ["COMPLETED"] * 2
    for trial in result.tuner.oracle.trials.values():
        trained = result.hypermodel.model_config(trial.hyperparameters)
        assert [f["name"] for f in trained.token_features] == ["device"]
        assert trained.features == ()
    # The retrained runs (train's own data preparation) embedded it too.
    for row in result.selection:
        assert row["techniques"].endswith("; token features device")
    path = os.path.join(result.output_dir, "best_config.json")
    with open(path) as handle:
        best = json.load(handle)
    assert best["train"]["model"]["features"] == ["device"]
    values = load_config_file(path)
    winner = TrainConfig(**values["train"], model=values["model"])
    _, data = prepare_in_memory(winner)
    assert data.token_feature_names == ["device"]


@pytest.mark.slow
def test_a_search_records_its_token_features_and_resumes_only_with_them(
    token_file, tmp_path
):
    from tfrec_tricks.errors import RunDirectoryError
    from tfrec_tricks.tuning.search_directory import fingerprint_hash

    config = token_config(token_file, epochs=1, model=FIXED)
    options = SearchOptions(
        tuner="random",
        max_trials=1,
        output_dir=str(tmp_path / "tuning"),
        verbose=0,
        compile_options=COMPILE,
        retrain_top=0,
    )
    first = run_search(config, options)
    path = os.path.join(first.output_dir, "search.json")
    with open(path) as handle:
        document = json.load(handle)
    assert document["fingerprint"]["token_features"] == ["device"]
    # The same search again: resumed, nothing trained twice.
    again = run_search(config, options)
    assert [row["status"] for row in again.trials] == ["COMPLETED"]
    # A search recorded before token features were searched: its
    # `features` "all" meant the float features only. Refused, named.
    del document["fingerprint"]["token_features"]
    document["fingerprint_sha256"] = fingerprint_hash(document["fingerprint"])
    with open(path, "w") as handle:
        json.dump(document, handle)
    with pytest.raises(
        RunDirectoryError,
        match=r"offered the token features none; the data's are now "
        r"\['device'\].*--overwrite",
    ):
        run_search(config, options)
    # --overwrite starts afresh, the token features recorded.
    run_search(config, dataclasses.replace(options, overwrite=True))
    with open(path) as handle:
        assert json.load(handle)["fingerprint"]["token_features"] == ["device"]


def test_a_search_refuses_an_unknown_feature_naming_the_token_features(
    token_file, tmp_path
):
    config = token_config(
        token_file, epochs=1, model={**FIXED, "features": ("devize",)}
    )
    with pytest.raises(
        ValueError, match=r"'devize'.*per interaction: rating, device \(token\)"
    ):
        run_search(
            config,
            SearchOptions(
                tuner="random",
                max_trials=2,
                output_dir=str(tmp_path / "tuning"),
                verbose=0,
            ),
        )


def test_the_search_keeps_every_token_feature_and_no_item_attribute(
    token_file, tmp_path
):
    # --features and --item-features are the trials' to choose: the
    # search's data has every per-interaction feature and no attribute.
    config = token_config(
        token_file,
        item_features=write_item_file(tmp_path / "items.item"),
        model={"features": ("rating", "year")},
    )
    _, data = prepare_source(config)
    assert data.feature_names == ["rating"]
    assert data.token_feature_names == ["device"]
    assert sorted(data.train.tokens) == ["device"]
    assert data.item_features is None
    # train's data of the same options: the token feature dropped, the
    # attributes joined; the same examples otherwise.
    _, trained = prepare_in_memory(config)
    assert trained.token_feature_names == []
    assert trained.item_features.names() == ["year"]
    for split in ("train", "validation", "test"):
        assert len(getattr(data, split)) == len(getattr(trained, split))
    # With the token feature named, train keeps the search's encoding.
    named = token_config(token_file, model={"features": ("device",)})
    _, trained = prepare_in_memory(named)
    assert trained.token_features == data.token_features
    assert (trained.train.tokens["device"] == data.train.tokens["device"]).all()
