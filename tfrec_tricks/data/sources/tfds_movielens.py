"""MovieLens through TensorFlow Datasets, with an offline path.

``tfds.load`` would try to download GroupLens' zip. Offline, either point
``data_dir`` at a TFDS data directory where the dataset is already prepared,
or put GroupLens' genuine zip (``ml-1m.zip`` / ``ml-100k.zip``; TFDS checks its
checksum) in ``manual_dir``. Without either, ``load_tfds_movielens`` raises a
``DataError`` that says so instead of waiting on the network.
"""

import os

import numpy as np

from tfrec_tricks.data.sources.interactions import Interactions
from tfrec_tricks.errors import DataError

TFDS_DATASETS = {
    "movielens/1m-ratings": "ml-1m.zip",
    "movielens/100k-ratings": "ml-100k.zip",
}


def load_tfds_movielens(
    name: str = "movielens/1m-ratings",
    data_dir: str | None = None,
    manual_dir: str | None = None,
) -> Interactions:
    """Loads MovieLens ratings from TFDS as an ``Interactions`` table.

    Args:
        name: str. "movielens/1m-ratings" or "movielens/100k-ratings".
        data_dir: str. TFDS data directory (defaults to TFDS's own,
            ``~/tensorflow_datasets``).
        manual_dir: str. Folder holding GroupLens' zip, used to prepare the
            dataset when ``data_dir`` does not have it yet.

    Returns:
        Interactions with user, item, timestamp and a "rating" column.
    """
    if name not in TFDS_DATASETS:
        raise DataError(
            f"Unknown TFDS dataset. Expected one of {sorted(TFDS_DATASETS)}. "
            f"Received: name={name!r}"
        )
    import tensorflow_datasets as tfds

    builder = tfds.builder(name, data_dir=data_dir)
    if not builder.is_prepared():
        zip_name = TFDS_DATASETS[name]
        if manual_dir is None or not os.path.isfile(
            os.path.join(manual_dir, zip_name)
        ):
            raise DataError(
                f"TFDS dataset {name!r} is not prepared in "
                f"{builder.data_dir!r} and this machine cannot download it. "
                f"Provide either --tfds-data-dir pointing at a TFDS data_dir "
                f"where it is prepared, or --tfds-manual-dir pointing at a "
                f"folder containing GroupLens' {zip_name}. Received: "
                f"data_dir={data_dir!r}, manual_dir={manual_dir!r}"
            )
        builder.download_and_prepare(
            download_config=tfds.download.DownloadConfig(manual_dir=manual_dir)
        )
    dataset = builder.as_dataset(split="train")
    return interactions_from_tfds(dataset, source=f"tfds:{name}")


def interactions_from_tfds(dataset, source: str) -> Interactions:
    """Converts a TFDS MovieLens ratings ``tf.data.Dataset`` to Interactions."""
    users, items, times, ratings = [], [], [], []
    # Select the columns before batching: movie_genres has one length per
    # movie and cannot be batched.
    batched = dataset.map(
        lambda x: (
            x["user_id"],
            x["movie_id"],
            x["timestamp"],
            x["user_rating"],
        )
    ).batch(65536)
    for user, item, time, rating in batched.as_numpy_iterator():
        users.append(user)
        items.append(item)
        times.append(time)
        ratings.append(rating)
    if not users:
        raise DataError(f"{source} has no rows.")

    def text(parts):
        return np.char.decode(np.concatenate(parts).astype(bytes), "utf-8")

    return Interactions(
        users=text(users),
        items=text(items),
        timestamps=np.concatenate(times).astype(np.float64),
        numeric={"rating": np.concatenate(ratings).astype(np.float32)},
        source=source,
    )
