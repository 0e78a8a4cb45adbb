"""Item attributes: read, and encoded against a catalogue of item ids.

- ``feature_kind_registry``: the kinds of features (``FeatureKind``, one
  registered spec per ``.item`` header type, ``@register_feature_kind``)
  and their live name views (``FEATURE_KINDS``, ``TOKEN_KINDS``,
  ``FLOAT_KINDS``, ``SEQUENCE_KINDS``) that the Keras layers of
  ``tfrec_tricks.features`` read; ``feature_kind_specs``: the built-in
  kinds, registered when this package is imported;
- ``item_file``: RecBole atomic ``.item`` files, read and checked into an
  ``ItemFeatureTable`` (raw attributes per raw item id), each field read
  by its kind's spec;
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

# Imported for its effect: the built-in kinds register before any module of
# this package is used.
from tfrec_tricks.data.item_features import feature_kind_specs  # noqa: F401
