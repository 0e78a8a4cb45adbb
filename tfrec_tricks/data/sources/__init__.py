"""Where interactions come from: files, TFDS, the synthetic default.

Every module here ends in an interaction table (``interactions``: raw
user and item ids, timestamps, numeric and token columns) and knows
nothing of what is done with it after: ids are not yet contiguous, no
split is made.

- ``loaders``: the interaction file formats (RecBole ``.inter``,
  GroupLens, SASRec, sessions), read as strict UTF-8, line by line
  (``read_records``, which every engine reads through);
- ``encoded_interactions``: the same files streamed into compact columns
  (an int32 code per raw id), for tables too large for ``load_file``;
- ``synthetic``: the built-in synthetic dataset;
- ``tfds_movielens``: MovieLens through TensorFlow Datasets;
- ``named_sources``: the sources a run names (``--data``: ``synthetic``,
  the real datasets, TFDS, ``file``), resolved to one of the above.

Grouped because they are the readers: the modules that turn a table into
examples (``data.user_sequences``, ``data.in_memory_dataset``, the
prepared format) import them, never the other way round. The item
attributes a source may carry beside its interactions are read by
``data.item_features.encoding``.
"""
