"""``ResumableCSVLogger``: a resumed run's rows under its history's header."""

import csv

import tensorflow as tf


class ResumableCSVLogger(tf.keras.callbacks.CSVLogger):
    """``CSVLogger`` whose appended rows keep the existing file's columns.

    Keras' logger names its columns after the first epoch's logs and, when
    appending, writes no header: a resumed run whose logs have other keys
    (a newer version that logs fewer metrics, say) would write rows that no
    longer line up with the header, and a reader by column name
    (``monitor_history``, pandas) would read the wrong values. Appending to
    a file that has a header, this logger writes that header's columns, in
    its order: a column the logs lack is ``NA``, a log the header lacks is
    left out.

    Args:
        filename: str. The CSV file.
        separator: str. The column separator. Defaults to ``","``.
        append: bool. Append to an existing file. Defaults to ``False``.

    Example:

    >>> import os, tempfile
    >>> import numpy as np
    >>> path = os.path.join(tempfile.mkdtemp(), "history.csv")
    >>> with open(path, "w") as handle:
    ...     _ = handle.write("epoch,acc,loss\\n0,0.5,1.0\\n")
    >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    >>> model.compile(loss="mse")
    >>> _ = model.fit(np.ones((4, 2)), np.ones(4), epochs=1, verbose=0,
    ...               callbacks=[ResumableCSVLogger(path, append=True)])
    >>> open(path).read().splitlines()[-1].split(",")[:2]
    ['0', 'NA']
    """

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        if self.append and not self.append_header:
            # The file exists and has a header (Keras found a first line).
            with tf.io.gfile.GFile(self.filename, "r") as handle:
                header = next(csv.reader(handle, delimiter=self.sep))
            self.keys = [key for key in header if key != "epoch"]
