"""The search space, fixing and narrowing it, build and fit (no search)."""

import doctest
import math
from unittest import mock

import numpy as np
import pytest
import tensorflow as tf
from tuning_helpers import COMPILE, FIXED, item_table

from tfrec_tricks.data.prefix_merging import POSITION_TARGETS
from tfrec_tricks.data.tf_data_pipeline import length_boundaries
from tfrec_tricks.models import SequentialRetrievalModel
from tfrec_tricks.tuning import (
    SequentialRetrievalHyperModel,
    import_keras_tuner,
    search_space,
)
from tfrec_tricks.tuning import sequential_retrieval_hypermodel as module
from tfrec_tricks.tuning.item_feature_space import ItemFeatureSpace
from tfrec_tricks.tuning.trial_batches import training_batches

keras_tuner = import_keras_tuner()

TECHNIQUES = {
    "head",
    "cpr_context",
    "cpr_pointer",
    "cpr_reranker_ks",
    "cpr_mi",
    "head_dropout",
    "tie_embeddings",
    "sse_item_probability",
    "sse_label_probability",
    "features",
    "soft_one_hot_buckets",
}
USUAL = {
    "embedding_dim",
    "num_layers",
    "dropout",
    "learning_rate",
    "batch_size",
}


def _space(hypermodel, **values):
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    hp.values.update(values)
    hp.ensure_active_values()
    return hp


def test_default_space_covers_techniques_and_usual(data):
    hypermodel = SequentialRetrievalHyperModel(data)
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    names = {h.name for h in hp.space}
    assert TECHNIQUES | USUAL <= names
    assert hypermodel.objective.name == "val_ndcg@10"
    assert hypermodel.objective.direction == "max"
    # Defaults: the hand-set ModelConfig defaults, softmax head.
    config = hypermodel.model_config(hp)
    assert (config.head, config.embedding_dim, config.dropout) == (
        "softmax",
        64,
        0.2,
    )
    assert hypermodel.batch_size(hp) == 128


def test_cpr_settings_are_conditional_on_the_head(data):
    hypermodel = SequentialRetrievalHyperModel(data)
    hp = _space(hypermodel, head="softmax")
    assert "cpr_mi" not in hp  # registered but inactive
    values = hypermodel.declare(hp)
    assert "cpr_mi" not in values
    hp = _space(hypermodel, head="cpr", cpr_mi=True, cpr_reranker_ks="20")
    config = hypermodel.model_config(hp)
    assert config.head == "cpr" and config.cpr_mi
    assert config.cpr_reranker_ks == (20,)
    assert "head_dropout" not in _space(hypermodel, head="softmax")
    # A Float step of 0.1 gives 0.30000000000000004; the config says 0.3.
    hp = _space(hypermodel, head="mos", head_dropout=0.1 * 3)
    assert hypermodel.model_config(hp).head_dropout == 0.3


def test_reranker_choices_stay_below_the_catalogue(data):
    hypermodel = SequentialRetrievalHyperModel(data)
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    choices = next(h for h in hp.space if h.name == "cpr_reranker_ks").values
    assert data.num_items == 41
    assert choices == ["none", "20"]


def test_fixed_values(data):
    hypermodel = SequentialRetrievalHyperModel(
        data,
        fixed={
            "head": "cpr",
            "cpr_reranker_ks": (20,),
            "batch_size": 32,
            "num_heads": 1,
            "hidden_dim": None,
        },
    )
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    fixed = {
        h.name
        for h in hp.space
        if isinstance(h, keras_tuner.engine.hyperparameters.Fixed)
    }
    assert {"head", "cpr_reranker_ks", "batch_size", "num_heads"} <= fixed
    config = hypermodel.model_config(hp)
    assert (config.head, config.cpr_reranker_ks, config.num_heads) == (
        "cpr",
        (20,),
        1,
    )
    assert hypermodel.batch_size(hp) == 32


@pytest.mark.parametrize("head, rate", [("cpr", 0.3), ("mos", 0.0)])
def test_first_trial_head_dropout_is_the_fixed_heads_default(data, head, rate):
    # train's head dropout is None: 0.3 for cpr, 0 for mos. The first trial
    # (the hyperparameters' defaults) must train the same.
    hypermodel = SequentialRetrievalHyperModel(data, fixed={"head": head})
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    assert hp.get("head_dropout") == rate
    assert hypermodel.model_config(hp).head_dropout_rate() == rate


def test_hyperparameters_narrow_and_extend_the_space(data):
    custom = keras_tuner.HyperParameters()
    custom.Choice("embedding_dim", [16, 24])
    custom.Choice("cpr_reranker_ks", ["20"])
    custom.Choice("attention_dropout", [0.0, 0.5])  # not searched by default
    hypermodel = SequentialRetrievalHyperModel(data, hyperparameters=custom)
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    space = {h.name: h for h in hp.space}
    assert space["embedding_dim"].values == [16, 24]
    assert space["attention_dropout"].values == [0.0, 0.5]
    # Still conditional on the head, as in the default space.
    assert space["cpr_reranker_ks"].conditions


def test_unknown_names_and_invalid_values_are_rejected(data):
    with pytest.raises(ValueError, match="embeding_dim"):
        SequentialRetrievalHyperModel(data, fixed={"embeding_dim": 8})
    with pytest.raises(ValueError, match="num_items"):
        SequentialRetrievalHyperModel(data, fixed={"num_items": 8})
    with pytest.raises(ValueError, match="dropout"):
        SequentialRetrievalHyperModel(data, fixed={"dropout": 1.5})


def test_invalid_combination_fails_the_trial_only(data):
    hypermodel = SequentialRetrievalHyperModel(
        data, fixed={"embedding_dim": 8, "num_heads": 3}
    )
    hp = _space(hypermodel, encoder="sasrec")
    with pytest.raises(keras_tuner.errors.FailedTrialError, match="num_heads"):
        hypermodel.build(hp)


def test_build_returns_a_compiled_tfrs_model(hypermodel):
    hp = keras_tuner.HyperParameters()
    model = hypermodel.build(hp)
    assert isinstance(model, SequentialRetrievalModel)
    assert model.built and model.optimizer is not None
    assert model.config.embedding_dim == FIXED["embedding_dim"]


@pytest.mark.parametrize(("requested", "batch_size"), [(16, 256), (2, 8)])
def test_a_trial_runs_one_step_per_call_when_its_epoch_is_shorter(
    data, requested, batch_size
):
    # One step per call when the trial's epoch holds fewer steps than asked
    # (training.compiled_steps), the asked count otherwise.
    hypermodel = SequentialRetrievalHyperModel(
        data,
        fixed={**FIXED, "batch_size": batch_size},
        compile_options={"steps_per_execution": requested},
    )
    hp = keras_tuner.HyperParameters()
    model = hypermodel.build(hp)
    # The batches the trial's fit trains on (bucketed by history length).
    batches, _ = training_batches(data.train.as_dict(), batch_size)
    steps = int(batches.cardinality())
    expected = requested if steps >= requested else 1
    assert int(model._steps_per_execution.numpy()) == expected
    assert (steps >= requested) == (batch_size == 8)


class _CountBatches(tf.keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.sizes = []

    def on_train_batch_end(self, batch, logs=None):
        self.sizes.append(batch)


@pytest.mark.slow
@pytest.mark.parametrize("bucket", [False, True])
@pytest.mark.parametrize("batched", [False, True])
def test_fit_batches_with_the_trials_batch_size(data, batched, bucket):
    hypermodel = SequentialRetrievalHyperModel(
        data,
        fixed={**FIXED, "batch_size": 64},
        compile_options=COMPILE,
        bucket_by_length=bucket,
    )
    hp = keras_tuner.HyperParameters()
    model = hypermodel.build(hp)
    values = hypermodel.search_data()
    x = values["x"].take(200)
    if batched:
        x = x.batch(7)  # re-batched with 64
    counter = _CountBatches()
    history = hypermodel.fit(
        hp,
        model,
        x,
        validation_data=values["validation_data"],
        epochs=1,
        verbose=0,
        callbacks=[counter],
    )
    expected = math.ceil(200 / 64)
    if bucket:  # one partial batch per band of history lengths
        lengths = (data.train.history[:200] > 0).sum(axis=1)
        bands = np.searchsorted(
            length_boundaries(data.max_len), lengths, side="right"
        )
        expected = sum(math.ceil(n / 64) for n in np.bincount(bands) if n)
    assert len(counter.sizes) == expected
    assert "val_ndcg@10" in history.history


@pytest.mark.slow
@pytest.mark.parametrize("every_position", [False, True])
def test_fit_can_train_every_position_in_one_pass(data, every_position):
    hypermodel = SequentialRetrievalHyperModel(
        data,
        fixed={**FIXED, "batch_size": 32},
        compile_options=COMPILE,
        every_position=every_position,
    )
    hp = keras_tuner.HyperParameters()
    model = hypermodel.build(hp)
    values = hypermodel.search_data()
    with mock.patch.object(model, "fit", wraps=model.fit) as fit:
        history = hypermodel.fit(hp, model, values["x"], epochs=1, verbose=0)
    train = fit.call_args.args[0]
    assert (POSITION_TARGETS in train.element_spec) == every_position
    if every_position:
        targets = sum(
            int((batch[POSITION_TARGETS] > 0).numpy().sum()) for batch in train
        )
        assert targets == len(data.train)  # each example once per epoch
    assert np.isfinite(history.history["loss"]).all()


def test_docstring_examples():
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 0
    assert result.failed == 0


def test_sse_and_attention_heads_are_conditional_on_their_switch(data):
    hypermodel = SequentialRetrievalHyperModel(data)
    hp = _space(hypermodel)
    assert "sse_item_probability" not in hp and "num_heads" not in hp
    config = hypermodel.model_config(hp)
    assert config.sse_item_probability == config.sse_label_probability == 0
    hp = _space(
        hypermodel, sse=True, sse_item_probability=0, sse_label_probability=0.1
    )
    config = hypermodel.model_config(hp)
    assert (config.sse_item_probability, config.sse_label_probability) == (
        0.0,
        0.1,
    )
    hp = _space(hypermodel, encoder="sasrec", num_heads=4)
    assert hypermodel.model_config(hp).num_heads == 4


def test_fixing_an_sse_probability_switches_sse_on(data):
    hypermodel = SequentialRetrievalHyperModel(
        data, fixed={"sse_item_probability": 0.05}
    )
    config = hypermodel.model_config(keras_tuner.HyperParameters())
    assert config.sse_item_probability == 0.05
    assert "sse" not in hypermodel.searched_names()
    off = SequentialRetrievalHyperModel(
        data, fixed={"sse_item_probability": 0.0, "sse_label_probability": 0}
    )
    assert (
        off.model_config(keras_tuner.HyperParameters()).sse_item_probability
        == 0
    )


def test_searched_names(data):
    hypermodel = SequentialRetrievalHyperModel(data, fixed={"head": "cpr"})
    names = hypermodel.searched_names()
    assert "head" not in names
    assert {"encoder", "cpr_mi", "dropout", "learning_rate", "sse"} <= set(
        names
    )
    narrow = keras_tuner.HyperParameters()
    narrow.Choice("dropout", [0.1])
    narrow.Int("num_layers", 2, 2)
    narrowed = SequentialRetrievalHyperModel(data, hyperparameters=narrow)
    assert not {"dropout", "num_layers"} & set(narrowed.searched_names())


@pytest.mark.slow
def test_estimate_epoch_seconds(hypermodel):
    seconds = hypermodel.estimate_epoch_seconds(steps=2)
    assert 0 < seconds < 600


@pytest.mark.parametrize("window_stride, rate", [(None, 1e-3), (0, 5e-3)])
def test_first_trial_learning_rate_is_the_protocols(data, window_stride, rate):
    # train's learning rate depends on the protocol: 5e-3 with windows.
    hypermodel = SequentialRetrievalHyperModel(
        data, window_stride=window_stride
    )
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    assert hypermodel.model_config(hp).learning_rate == rate


def _sequences_data(repeat: bool):
    """40 users of 12 items over a catalogue of 200: all distinct, or
    every other one repeats the item before."""
    from tfrec_tricks.data import Interactions, prepare

    users, items, times = [], [], []
    for user in range(40):
        for t in range(12):
            item = (
                user * 5 + t if not repeat or t % 2 == 0 else user * 5 + t - 1
            )
            users.append(f"u{user}")
            items.append(f"i{item % 200}")
            times.append(t)
    interactions = Interactions(
        np.array(users), np.array(items), np.array(times, np.float64)
    )
    return prepare(interactions, max_len=10)


@pytest.mark.parametrize(
    "repeat, fixed, head",
    [
        (False, {}, "softmax_no_dup"),
        (True, {}, "cpr"),
        (True, {"encoder": "sasrec"}, "softmax"),
        (True, {"cpr_reranker_ks": (500,)}, "softmax"),  # 500 > 200 items
    ],
)
def test_first_trial_head_is_the_one_train_chooses_from_the_data(
    repeat, fixed, head
):
    data = _sequences_data(repeat)
    hypermodel = SequentialRetrievalHyperModel(data, fixed=fixed)
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    assert hp.get("head") == head
    assert hypermodel.model_config(hp).head == head
    assert "head" in hypermodel.searched_names()  # still searched


@pytest.mark.parametrize(
    "repeat, head", [(False, "softmax_no_dup"), (True, "cpr")]
)
def test_fixed_head_auto_is_fixed_to_the_datas_choice(repeat, head):
    hypermodel = SequentialRetrievalHyperModel(
        _sequences_data(repeat), fixed={"head": "auto"}
    )
    assert hypermodel.fixed["head"] == head
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    assert hypermodel.model_config(hp).head == head
    assert "head" not in hypermodel.searched_names()


@pytest.mark.parametrize(
    "repeat, first", [(False, "softmax_no_dup"), (True, "softmax")]
)
def test_sampled_negatives_search_the_softmax_heads_only(repeat, first):
    hypermodel = SequentialRetrievalHyperModel(
        _sequences_data(repeat),
        fixed={"objective": "sampled", "num_sampled_negatives": 16},
    )
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    assert {h.name: h for h in hp.space}["head"].values == [
        "softmax",
        "softmax_no_dup",
    ]
    config = hypermodel.model_config(hp)
    assert (config.head, config.num_sampled_negatives) == (first, 16)


@pytest.mark.parametrize(
    "repeat, first", [(False, "softmax_no_dup"), (True, "softmax")]
)
def test_cosine_scores_search_the_softmax_heads_only(repeat, first):
    data = _sequences_data(repeat)
    hypermodel = SequentialRetrievalHyperModel(
        data, fixed={"cosine_temperature": 0.05}
    )
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    space = {h.name: h for h in hp.space}
    assert space["head"].values == ["softmax", "softmax_no_dup"]
    # No CPR or MoS setting: KerasTuner would set the head to CPR to
    # activate one.
    assert not {"cpr_mi", "mos_components", "head_dropout"} & set(space)
    # On repeat data --head auto would take CPR: the first trial takes the
    # plain softmax instead.
    config = hypermodel.model_config(hp)
    assert (config.head, config.cosine_temperature) == (first, 0.05)
    # A searched temperature narrows the heads alike.
    custom = keras_tuner.HyperParameters()
    custom.Choice("cosine_temperature", [0.05, 0.1])
    searched = SequentialRetrievalHyperModel(data, hyperparameters=custom)
    hp = keras_tuner.HyperParameters()
    searched.declare(hp)
    assert {h.name: h for h in hp.space}["head"].values == [
        "softmax",
        "softmax_no_dup",
    ]
    # Fixing CPR (or auto's CPR) with cosine scores is refused at once.
    with pytest.raises(ValueError, match="cosine_temperature applies"):
        SequentialRetrievalHyperModel(
            data, fixed={"cosine_temperature": 0.05, "head": "cpr"}
        )


# ---------------------------------------------------------- item features

ITEM_SETTINGS = {"item_feature_set", "feature_fusion"}


def _item_hypermodel(data, by_default=True, **options):
    space = ItemFeatureSpace(item_table(), by_default=by_default)
    return SequentialRetrievalHyperModel(
        data, item_feature_space=space, **options
    )


def _item_names(config):
    return [f["name"] for f in config.item_features]


def test_without_item_features_the_space_is_as_before(data):
    hypermodel = SequentialRetrievalHyperModel(data)
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    names = [h.name for h in hp.space]
    assert names == [
        row[0] for row in search_space.default_space(data.feature_names, 41)
    ]
    assert not ITEM_SETTINGS & set(names)
    config = hypermodel.model_config(hp)
    assert (config.num_items, config.item_features) == (41, ())


def test_item_features_add_which_attributes_and_how(data):
    hypermodel = _item_hypermodel(data)
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    space = {h.name: h for h in hp.space}
    assert space["item_feature_set"].values == [
        "none",
        "genre",
        "year",
        "genre,year",
    ]
    assert space["feature_fusion"].values == ["concat", "sum"]
    (condition,) = space["feature_fusion"].conditions
    assert (condition.name, condition.values) == (
        "item_feature_set",
        ["genre", "year", "genre,year"],
    )
    assert ITEM_SETTINGS <= set(hypermodel.searched_names())
    # The first trial: what train fuses with --item-features (every
    # attribute, ModelConfig's fusion), on the catalogue with the 5
    # cold-start items.
    config = hypermodel.model_config(hp)
    assert _item_names(config) == ["genre", "year"]
    assert (config.feature_fusion, config.num_items) == ("sum", 46)
    # Id-only: no fusion to choose, the catalogue without them.
    hp = _space(hypermodel, item_feature_set="none")
    assert "feature_fusion" not in hp
    config = hypermodel.model_config(hp)
    assert (config.item_features, config.num_items) == ((), 41)
    hp = _space(hypermodel, item_feature_set="year", feature_fusion="concat")
    config = hypermodel.model_config(hp)
    assert (_item_names(config), config.feature_fusion) == (["year"], "concat")
    # Every other setting as without item features.
    plain = keras_tuner.HyperParameters()
    SequentialRetrievalHyperModel(data).declare(plain)
    assert [h.name for h in plain.space] == [
        name for name in space if name not in ITEM_SETTINGS
    ]


def test_a_built_in_datasets_metadata_starts_id_only(data):
    hypermodel = _item_hypermodel(data, by_default=False)
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    assert hp.get("item_feature_set") == "none"
    assert "feature_fusion" not in hp
    assert hypermodel.model_config(hp).num_items == 41
    assert "item_feature_set" in hypermodel.searched_names()


def test_build_fuses_the_trials_attributes(data):
    hypermodel = _item_hypermodel(data, fixed=FIXED, compile_options=COMPILE)
    model = hypermodel.build(_space(hypermodel, item_feature_set="genre"))
    assert model.item_features is not None
    assert _item_names(model.config) == ["genre"]
    model = hypermodel.build(_space(hypermodel, item_feature_set="none"))
    assert model.item_features is None


@pytest.mark.parametrize(
    "features, position, item",
    [
        (("time_gap", "genre"), "time_gap", "genre"),
        (("time_gap",), "time_gap", "none"),  # named: no attribute
        ((), "none", "genre,year"),  # train's default with the file
        (("all",), "time_gap", "genre,year"),
    ],
)
def test_fixed_features_name_both_kinds(data, features, position, item):
    # As --features: a name of either kind, or all.
    hypermodel = _item_hypermodel(data, fixed={"features": features})
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    space = {h.name: h for h in hp.space}
    assert (space["features"].value, space["item_feature_set"].value) == (
        position,
        item,
    )
    assert ("feature_fusion" in space) == (item != "none")
    config = hypermodel.model_config(hp)
    assert config.features == tuple(n for n in [position] if n != "none")
    expected = [] if item == "none" else item.split(",")
    assert _item_names(config) == expected


def test_item_settings_that_cannot_train_are_refused(data):
    with pytest.raises(ValueError, match="'colour'"):
        _item_hypermodel(data, fixed={"features": ("colour",)})
    with pytest.raises(ValueError, match="fix it or item_feature_set"):
        _item_hypermodel(
            data, fixed={"features": ("genre",), "item_feature_set": "year"}
        )
    custom = keras_tuner.HyperParameters()
    custom.Choice("item_feature_set", ["year", "colour"])
    with pytest.raises(ValueError, match="--choices item_feature_set"):
        _item_hypermodel(data, hyperparameters=custom)
    # Without item attributes there is no such setting.
    with pytest.raises(ValueError, match="unknown settings"):
        SequentialRetrievalHyperModel(data, fixed={"item_feature_set": "year"})
    joined = ItemFeatureSpace(item_table()).join(data, ("year",))
    with pytest.raises(ValueError, match="already has item features"):
        _item_hypermodel(joined)


def test_custom_item_feature_choices_keep_the_fusion_conditional(data):
    custom = keras_tuner.HyperParameters()
    custom.Choice("item_feature_set", ["genre,year", "year"])
    hypermodel = _item_hypermodel(data, hyperparameters=custom)
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    space = {h.name: h for h in hp.space}
    assert space["item_feature_set"].values == ["genre,year", "year"]
    (condition,) = space["feature_fusion"].conditions
    assert condition.values == ["genre,year", "year"]
    assert _item_names(hypermodel.model_config(hp)) == ["genre", "year"]


def _token_names(config):
    return [f["name"] for f in config.token_features]


def test_features_offer_the_token_features_and_each_value_keeps_its_own(
    token_data,
):
    hypermodel = SequentialRetrievalHyperModel(
        token_data, fixed=FIXED, compile_options=COMPILE
    )
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    space = {h.name: h for h in hp.space}
    assert space["features"].values == [
        "none",
        "rating",
        "device",
        "rating,device",
    ]
    assert hp.get("features") == "none"  # train's default: none read
    (condition,) = space["soft_one_hot_buckets"].conditions
    assert condition.values == ["rating", "rating,device"]
    expected = {
        "none": ((), []),
        "rating": (("rating",), []),
        "device": ((), ["device"]),
        "rating,device": (("rating",), ["device"]),
    }
    for value, (floats, tokens) in expected.items():
        trial = _space(hypermodel, features=value)
        assert trial.is_active("soft_one_hot_buckets") == bool(floats)
        config = hypermodel.model_config(trial)
        assert (config.features, _token_names(config)) == (floats, tokens)
    model = hypermodel.build(_space(hypermodel, features="device"))
    assert _token_names(model.config) == ["device"]
    assert model.config.token_features == tuple(
        spec.model_dict() for spec in token_data.token_features
    )


@pytest.mark.parametrize(
    "features, value, buckets",
    [
        (("device",), "device", False),
        (("device", "rating"), "rating,device", True),
        (("all",), "rating,device", True),
    ],
)
def test_fixed_features_take_token_features(
    token_data, features, value, buckets
):
    hypermodel = SequentialRetrievalHyperModel(
        token_data, fixed={**FIXED, "features": features}
    )
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    assert hp.get("features") == value
    assert ("soft_one_hot_buckets" in hypermodel.searched_names()) == buckets
    assert _token_names(hypermodel.model_config(hp)) == ["device"]


def test_unknown_feature_names_are_refused_naming_the_token_features(
    token_data,
):
    what_it_has = r"It has, per interaction: rating, device \(token\)"
    with pytest.raises(ValueError, match=f"'devize'.*{what_it_has}"):
        SequentialRetrievalHyperModel(
            token_data, fixed={"features": ("devize",)}
        )
    custom = keras_tuner.HyperParameters()
    custom.Choice("features", ["device", "rating,devize"])
    with pytest.raises(
        ValueError, match=f"--choices features.*'devize'.*{what_it_has}"
    ):
        SequentialRetrievalHyperModel(token_data, hyperparameters=custom)


def test_with_item_attributes_features_name_token_features_too(token_data):
    hypermodel = _item_hypermodel(
        token_data, fixed={**FIXED, "features": ("year", "device")}
    )
    hp = keras_tuner.HyperParameters()
    hypermodel.declare(hp)
    assert (hp.get("features"), hp.get("item_feature_set")) == (
        "device",
        "year",
    )
    config = hypermodel.model_config(hp)
    assert (_token_names(config), _item_names(config)) == (["device"], ["year"])
    # features chooses per-interaction features; item_feature_set fuses
    # the attributes.
    custom = keras_tuner.HyperParameters()
    custom.Choice("features", ["device", "genre"])
    with pytest.raises(ValueError, match="fuses those with item_feature_set"):
        _item_hypermodel(token_data, hyperparameters=custom)
