"""ResumableEarlyStopping: the state it starts from, and bad histories."""

import pytest

from tfrec_tricks.callbacks.resumable_early_stopping import (
    ResumableEarlyStopping,
    monitor_history,
)


def test_history_column_is_read_and_a_missing_file_is_empty(tmp_path):
    path = tmp_path / "history.csv"
    assert monitor_history(str(path), "val_ndcg@10") == []
    path.write_text("epoch,loss,val_ndcg@10\n0,5.0,0.25\n1,4.0,0.5\n")
    assert monitor_history(str(path), "val_ndcg@10") == [0.25, 0.5]


def test_bad_history_names_the_file_line_and_column(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text("epoch,val_ndcg@10\n0,0.25\n1,oops\n")
    with pytest.raises(ValueError, match=r"history.csv, line 3: .*'oops'"):
        monitor_history(str(path), "val_ndcg@10")
    with pytest.raises(ValueError, match=r"no column 'val_hr@10'"):
        monitor_history(str(path), "val_hr@10")


@pytest.mark.parametrize(
    "mode, values, best, best_epoch, wait",
    [
        ("max", [0.3, 0.5, 0.5, 0.4], 0.5, 1, 2),  # ties keep the first
        ("min", [3.0, 2.0, 2.5], 2.0, 1, 1),
        ("max", [], None, 0, 0),  # a new run: as Keras' own starts
    ],
)
def test_state_continues_from_the_epochs_already_run(
    mode, values, best, best_epoch, wait
):
    import tensorflow as tf

    stopping = ResumableEarlyStopping(
        values, "unused", monitor="m", mode=mode, restore_best_weights=True
    )
    stopping.on_train_begin()
    if best is None:
        # tf-keras starts from -inf, Keras 3 from None ("no best yet").
        plain = tf.keras.callbacks.EarlyStopping(monitor="m", mode=mode)
        plain.on_train_begin()
        best = plain.best
    assert (stopping.best, stopping.best_epoch, stopping.wait) == (
        best,
        best_epoch,
        wait,
    )
    # Before the interruption: the weights are in the checkpoint.
    assert (stopping.best_weights is None) == (not values)


def test_mode_must_be_given():
    with pytest.raises(ValueError, match="Received: mode='auto'"):
        ResumableEarlyStopping([], "best", monitor="m", mode="auto")
