"""The genres of TFDS MovieLens as item features.

TFDS' MovieLens ratings carry each movie's genres on every rating
(``movie_genres``, a sequence of ``ClassLabel`` ids). ``item_genres``
reads them once per movie into an ``ItemFeatureTable`` of one
``genres`` ``token_seq`` feature, keyed by the raw ``movie_id`` the
ratings loader (``load_tfds_movielens``) gives the items.
"""

from collections.abc import Sequence

import tensorflow as tf

from tfrec_tricks.data.item_features.item_file import ItemFeatureTable
from tfrec_tricks.errors import DataError

#: The item feature the TFDS MovieLens datasets offer.
TFDS_ITEM_FEATURES = {"genres": "token_seq"}


def item_genres(
    dataset: tf.data.Dataset, genre_names: Sequence[str], source: str
) -> ItemFeatureTable:
    """Each movie's genres, from TFDS MovieLens ratings.

    Args:
        dataset: the ratings (``movie_id`` and ``movie_genres`` of each).
        genre_names: the ``ClassLabel`` names of ``movie_genres``.
        source: the dataset's name, for messages.

    Returns:
        An ``ItemFeatureTable`` with ``genres`` (``token_seq``; a name's
        spaces become ``_``, as tokens are space-separated); a movie's
        first rating gives its genres.

    Example:

    >>> data = tf.data.Dataset.from_generator(
    ...     lambda: iter([(b"50", [0, 2]), (b"1", [1]), (b"50", [0, 2])]),
    ...     output_signature=(tf.TensorSpec([], tf.string),
    ...                       tf.TensorSpec([None], tf.int64)),
    ... ).map(lambda m, g: {"movie_id": m, "movie_genres": g})
    >>> table = item_genres(data, ["Action", "Film-Noir", "Sci Fi"], "tfds")
    >>> table.rows["50"], table.rows["1"]
    ({'genres': ('Action', 'Sci_Fi')}, {'genres': ('Film-Noir',)})
    """
    names = [str(n).replace(" ", "_") for n in genre_names]
    rows: dict[str, dict] = {}
    pairs = dataset.map(lambda x: (x["movie_id"], x["movie_genres"]))
    for movies, genres in pairs.ragged_batch(65536).as_numpy_iterator():
        for movie, labels in zip(movies, genres):
            movie = movie.decode("utf-8")
            if movie not in rows:
                rows[movie] = {"genres": tuple(names[int(i)] for i in labels)}
    if not rows:
        raise DataError(f"{source} has no rows.")
    for row in rows.values():
        if not row["genres"]:
            del row["genres"]  # no value: the coverage counts it
    return ItemFeatureTable(dict(TFDS_ITEM_FEATURES), rows, source)


def load_tfds_item_features(
    name: str, data_dir: str | None = None
) -> ItemFeatureTable:
    """The genres of TFDS MovieLens ``name``, from its prepared ratings
    (``load_tfds_movielens`` prepares the dataset first, or says why it
    cannot).

    Args:
        name: str, "movielens/1m-ratings" or "movielens/100k-ratings".
        data_dir: str or None. TFDS data directory.
    """
    import tensorflow_datasets as tfds

    builder = tfds.builder(name, data_dir=data_dir)
    genres = builder.info.features["movie_genres"].feature.names
    dataset = builder.as_dataset(split="train")
    return item_genres(dataset, genres, f"tfds:{name}")
