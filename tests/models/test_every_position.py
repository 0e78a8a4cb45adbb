"""Training every position of merged-prefix rows in one encoder pass."""

import numpy as np
import pytest
import tensorflow as tf

from tests.models.conftest import DIM, MAX_LEN
from tfrec_tricks.data.prefix_merging import POSITION_TARGETS, merge_prefixes
from tfrec_tricks.data.tf_data_pipeline import make_dataset
from tfrec_tricks.data.train_windows import train_windows
from tfrec_tricks.models import ModelConfig, SequentialRetrievalModel

CONFIGS = {
    "gru4rec_softmax_features": {"features": ("time_gap",)},
    "sasrec_cpr_all_parts": {
        "encoder": "sasrec",
        "head": "cpr",
        "cpr_context": True,
        "cpr_pointer": True,
        "cpr_reranker_ks": (3, 8),
        "cpr_mi": True,
        "cpr_start_as_softmax": False,
    },
    "gru4rec_cpr_add": {
        "head": "cpr",
        "cpr_reranker_ks": (5,),
        "cpr_mi": True,
        "cpr_merge": "add",
        "cpr_start_as_softmax": False,
    },
    "sasrec_mos": {"encoder": "sasrec", "head": "mos"},
    "softmax_no_dup": {"head": "softmax_no_dup"},
    "sampled": {"objective": "sampled", "num_hard_negatives": 5},
}


def merged_and_prefix_batches(data, rows=12, make_rows=merge_prefixes):
    """A batch of merged rows and the same examples as prefix rows.

    ``make_rows``: merged rows of ``data.train`` (``merge_prefixes``, or
    training windows); each trained position is a prefix row whose history
    is the merged row's up to that position.

    The prefix batch lists the examples in the order the model expands the
    rows (row-major over the target positions).
    """
    merged = make_rows(data.train)
    pick = np.linspace(0, len(merged["history"]) - 1, rows).astype(int)
    merged = {name: value[pick] for name, value in merged.items()}
    index = np.argwhere(merged[POSITION_TARGETS] > 0)
    cut = np.arange(MAX_LEN)[None, :] <= index[:, 1:]
    prefix = {
        name: np.where(cut, merged[name][index[:, 0]], 0)
        for name in data.train.features
    }
    prefix["history"] = np.where(cut, merged["history"][index[:, 0]], 0)
    prefix["target"] = merged[POSITION_TARGETS][index[:, 0], index[:, 1]]
    assert len(index) > rows  # some rows hold several examples
    as_tensors = lambda d: {k: tf.constant(v) for k, v in d.items()}  # noqa
    return as_tensors(merged), as_tensors(prefix)


def build(data, overrides):
    tf.keras.utils.set_random_seed(0)
    config = ModelConfig(
        num_items=data.num_items,
        max_len=MAX_LEN,
        embedding_dim=DIM,
        **overrides,
    )
    return SequentialRetrievalModel.from_data(config, data)


def loss_and_gradients(model, batch):
    with tf.GradientTape() as tape:
        loss = model.compute_loss(batch, training=False)
    return loss, tape.gradient(loss, model.trainable_variables)


ROWS = {
    "merged_prefixes": merge_prefixes,
    "windows_stride_4": lambda examples: train_windows(examples, 4),
}


@pytest.mark.parametrize("rows", ROWS.values(), ids=ROWS.keys())
@pytest.mark.parametrize("overrides", CONFIGS.values(), ids=CONFIGS.keys())
def test_merged_rows_give_the_prefix_examples_loss_and_gradients(
    data, overrides, rows
):
    model = build(data, overrides)
    merged, prefix = merged_and_prefix_batches(data, make_rows=rows)
    merged_loss, merged_grads = loss_and_gradients(model, merged)
    prefix_loss, prefix_grads = loss_and_gradients(model, prefix)
    np.testing.assert_allclose(merged_loss, prefix_loss, rtol=1e-5)
    for variable, a, b in zip(
        model.trainable_variables, merged_grads, prefix_grads
    ):
        assert (a is None) == (b is None), variable.name
        if a is not None:
            np.testing.assert_allclose(
                tf.convert_to_tensor(a),
                tf.convert_to_tensor(b),
                atol=1e-6,
                err_msg=variable.name,
            )


def test_training_metrics_count_every_position(data):
    model = build(data, {})
    merged, prefix = merged_and_prefix_batches(data)
    for batch in (merged, prefix):
        for metric in model.ranking_metrics:
            metric.reset_state()
        model.compute_loss(batch, training=False)
        if batch is merged:
            first = [float(m.result()) for m in model.ranking_metrics]
    np.testing.assert_allclose(
        first, [float(m.result()) for m in model.ranking_metrics], rtol=1e-6
    )


def test_inference_ignores_position_targets(data):
    model = build(
        data, {"encoder": "sasrec", "head": "cpr", "cpr_reranker_ks": (5,)}
    )
    merged, _ = merged_and_prefix_batches(data)
    without = {k: v for k, v in merged.items() if k != POSITION_TARGETS}
    np.testing.assert_allclose(model(merged), model(without))


FIT_CONFIGS = {
    "gru4rec_cpr": ("gru4rec", {}),
    "sasrec_cpr": ("sasrec", {}),
    # Training windows with every technique at once: SSE on input and
    # label, the soft one-hot time gap, CPR's pointer and Mi, the sampled
    # objective.
    "sasrec_windows_all": (
        "sasrec",
        {
            "window_stride": 4,
            "cpr_pointer": True,
            "cpr_mi": True,
            "sse_item_probability": 0.05,
            "sse_label_probability": 0.05,
            "features": ("time_gap",),
            "objective": "sampled",
        },
    ),
    "gru4rec_windows_all": (
        "gru4rec",
        {
            "window_stride": MAX_LEN,
            "cpr_pointer": True,
            "cpr_mi": True,
            "sse_item_probability": 0.05,
            "features": ("time_gap",),
        },
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize(
    "encoder, extra", FIT_CONFIGS.values(), ids=FIT_CONFIGS.keys()
)
def test_fit_on_merged_rows_learns(data, encoder, extra):
    extra = dict(extra)
    stride = extra.pop("window_stride", None)
    model = build(
        data,
        {
            "encoder": encoder,
            "head": "cpr",
            "cpr_reranker_ks": (5,),
            "dropout": 0.1,
            **extra,
        },
    )
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-2))
    train = make_dataset(
        data.train,
        32 if stride is None else 8,
        shuffle=True,
        seed=0,
        bucket_by_length=True,
        every_position=stride is None,
        window_stride=stride,
    )
    history = model.fit(train, epochs=3, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < losses[0]
    # The sampled objective computes no training ranking metrics.
    validation = model.evaluate(
        make_dataset(data.validation, 64), return_dict=True, verbose=0
    )
    assert validation["ndcg@10"] > 0
