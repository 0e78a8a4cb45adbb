"""tfrec_tricks.heads.cpr.partitioned_cross_entropy: merged entries and the
loss without them. The loss of SoftmaxCPR's entries: test_loss.py."""

import numpy as np
import tensorflow as tf

from tfrec_tricks.evaluation.full_ranking import tf_target_ranks
from tfrec_tricks.heads.cpr.partitioned_cross_entropy import (
    merge_entries,
    partitioned_cross_entropy,
)


def test_merge_entries_applies_writes_from_last_to_first():
    # Row 0: item 4 replaced by 10 (first), then added to by 1 (ignored:
    # written before the replacement); item 6 added to twice; item 2 once
    # replaced. Row 1: no entry but item 7 added to once.
    ids = tf.constant([[4, 6, 4, 2, 6, -1], [-1, 7, -1, -1, -1, -1]])
    values = tf.constant(
        [[10.0, 1.0, 1.0, 5.0, 2.0, 9.0], [0.0, 3.0, 0.0, 0.0, 0.0, 0.0]]
    )
    replaces = tf.constant(
        [[True, False, False, True, False, True], [True] + [False] * 5]
    )
    base = tf.constant(
        [[0.5, 0.25, 0.5, 0.0, 0.25, 0.0], [0.0, 1.5, 0.0, 0.0, 0.0, 0.0]]
    )
    ids, merged, base, distinct = merge_entries(ids, values, replaces, base)
    got = [
        {int(i): (float(m), float(b)) for i, m, b, d in zip(*row) if d}
        for row in zip(ids.numpy(), merged.numpy(), base.numpy(), distinct)
    ]
    assert got == [
        {2: (5.0, 0.0), 4: (10.0, 0.5), 6: (3.25, 0.25)},
        {7: (4.5, 1.5)},
    ]


def test_without_entries_it_is_the_plain_cross_entropy():
    rng = np.random.default_rng(0)
    logits = tf.constant(rng.normal(size=(3, 7)), tf.float32)
    labels = tf.constant([1, 6, 3])
    none = tf.fill([3, 1], -1)
    loss, base_loss, ranks = partitioned_cross_entropy(
        logits,
        none,
        tf.zeros([3, 1]),
        tf.ones([3, 1], tf.bool),
        tf.zeros([3, 1]),
        labels,
        tf.gather(logits, labels, batch_dims=1),
        mask_padding=False,
    )
    expected = tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    np.testing.assert_allclose(loss, expected, rtol=1e-6)
    np.testing.assert_allclose(base_loss, expected, rtol=1e-6)
    np.testing.assert_array_equal(ranks, tf_target_ranks(logits, labels))
