"""ResumableCSVLogger: appended rows line up with the history's header."""

import csv

import numpy as np
import tensorflow as tf

from tfrec_tricks.callbacks import ResumableCSVLogger, monitor_history


def fit_one_epoch(callback, metrics=()):
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile(loss="mse", metrics=list(metrics))
    x, y = np.ones((4, 2)), np.ones(4)
    model.fit(
        x, y, epochs=1, verbose=0, validation_data=(x, y), callbacks=[callback]
    )


def read_rows(path):
    with open(path) as handle:
        return list(csv.DictReader(handle))


def test_appended_rows_keep_the_header_when_the_logs_have_other_keys(
    tmp_path,
):
    # An interrupted run logged a metric the resumed run no longer logs:
    # Keras' logger would write 3 fields under a 5-field header.
    path = tmp_path / "history.csv"
    path.write_text("epoch,aaa,loss,val_aaa,val_loss\n0,0.5,2.0,0.4,2.5\n")
    fit_one_epoch(ResumableCSVLogger(str(path), append=True))
    rows = read_rows(path)
    assert list(rows[1]) == ["epoch", "aaa", "loss", "val_aaa", "val_loss"]
    assert rows[1]["aaa"] == rows[1]["val_aaa"] == "NA"
    assert float(rows[1]["loss"]) > 0 and float(rows[1]["val_loss"]) > 0
    assert len(monitor_history(str(path), "val_loss")) == 2


def test_a_new_file_is_keras_csv_logger(tmp_path):
    ours, keras = tmp_path / "ours.csv", tmp_path / "keras.csv"
    fit_one_epoch(ResumableCSVLogger(str(ours)), metrics=["mae"])
    fit_one_epoch(tf.keras.callbacks.CSVLogger(str(keras)), metrics=["mae"])
    assert list(read_rows(ours)[0]) == list(read_rows(keras)[0])
    # Appending to a missing or empty file writes the header too.
    for name in ("missing.csv", "empty.csv"):
        path = tmp_path / name
        if name == "empty.csv":
            path.write_text("")
        fit_one_epoch(ResumableCSVLogger(str(path), append=True))
        assert list(read_rows(path)[0]) == ["epoch", "loss", "val_loss"]


def test_docstring_example():
    import doctest

    import tfrec_tricks.callbacks.resumable_csv_logger as module

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
