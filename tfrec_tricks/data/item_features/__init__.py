"""Item attributes: read, and encoded against a catalogue of item ids.

- ``item_file``: RecBole atomic ``.item`` files, read and checked into an
  ``ItemFeatureTable`` (raw attributes per raw item id); it owns the
  feature kinds (``FEATURE_KINDS``, ``TOKEN_KINDS``, ``FLOAT_KINDS``,
  ``SEQUENCE_KINDS``) that the Keras layers of ``tfrec_tricks.features``
  import;
- ``movielens``: the built-in MovieLens datasets' GroupLens metadata
  (genres, year) as such a table;
- ``tfds_genres``: the genres TFDS' MovieLens ratings carry, as such a
  table;
- ``encoding``: a table encoded against contiguous item ids
  (``encode_item_features``: token ids, standardised numbers, one
  ``ItemFeatureSpec`` per feature) and the vocabulary rules
  (``kept_vocabulary``, the padding and out-of-vocabulary ids) that the
  interactions' token columns (``data.interaction_tokens``) share;
- ``ragged_rows``: rows of different lengths (an item's genres), stored
  as flat values and row offsets.

Grouped because they are the item side of the data, independent of how
the interactions are prepared. Joining the encoded attributes to a
dataset is not here: the in-memory join
(``data.in_memory_item_features``) and the prepared dataset's files
(``data.prepared.item_features``) need the examples' vocabulary, which
is built with ``encoding``'s vocabulary rules, so they sit above both
(here, they would make an import cycle between this package and the
examples' modules).
"""
