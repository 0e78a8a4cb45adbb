"""The prepared dataset on disk: its format, writing it, reading it.

``tfrec-tricks prepare --output DIR`` stores each user's sequence once,
in TFRecord shards, beside the vocabulary, the training statistics and
``metadata.json``; ``train --prepared DIR`` streams the same examples the
in-memory path forms.

- ``format``: the folder's files, the user record, ``metadata.json``
  and the checks of a folder read back (no TensorFlow at import);
- ``writer``: writing the folder from user sequences (the local engine;
  the Beam engine, ``data.beam``, writes the shards itself and the
  other files through ``write_dataset_files``);
- ``item_features``: the item attributes of a prepared dataset, encoded
  once at preparation, and their three files;
- ``on_disk_dataset``: ``OnDiskDataset``, the folder streamed with
  ``tf.data`` as training, validation and test examples.

Grouped because they are the one on-disk format and its two ends. Every
preparation engine ends here; the shared steps before it (the user
sequences, the vocabulary, the statistics) stay in ``data`` because the
in-memory path uses them too.
"""
