"""MovieLens through TensorFlow Datasets, offline.

Title: MovieLens-1M from TFDS without a network
Description: `tfds.load("movielens/1m-ratings")` downloads GroupLens' zip.
On a machine without network, tfrec_tricks reads an already prepared TFDS
data directory, or prepares one from the zip you downloaded elsewhere.

Run it:
    python examples/movielens_tfds.py --tfds-data-dir ~/tensorflow_datasets
    python examples/movielens_tfds.py --tfds-manual-dir ~/Downloads  # ml-1m.zip
`--smoke` runs the same code through TFDS's mocking utility, with rows
from the synthetic generator.
"""

# ## Setup

import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"  # TFRS needs tf-keras

import argparse  # noqa: E402
import contextlib  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_datasets as tfds  # noqa: E402

from tfrec_tricks.data import prepare  # noqa: E402
from tfrec_tricks.data.sources import synthetic  # noqa: E402
from tfrec_tricks.data.sources.tfds_movielens import load_tfds_movielens  # noqa: E402
from tfrec_tricks.data.tf_data_pipeline import make_dataset  # noqa: E402
from tfrec_tricks.errors import DataError  # noqa: E402
from tfrec_tricks.models import (  # noqa: E402
    ModelConfig,
    SequentialRetrievalModel,
)

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--name", default="movielens/1m-ratings")
parser.add_argument("--tfds-data-dir")
parser.add_argument("--tfds-manual-dir")
parser.add_argument("--epochs", type=int, default=5)
parser.add_argument(
    "--smoke", action="store_true", help="TFDS mock data, one epoch"
)
args = parser.parse_args()

# ## Loading
#
# With neither a prepared data_dir nor the zip, `load_tfds_movielens` stops
# at once with a message naming both options (no network wait). In smoke
# mode, `tfds.testing.mock_data` stands in for the dataset, serving rows
# from a data_dir that holds only the dataset's metadata.

mock = contextlib.nullcontext()
data_dir = args.tfds_data_dir
if args.smoke:
    # Rows with MovieLens' columns, drawn from the synthetic generator so
    # that users have sequences (TFDS's random mock ids never repeat).
    rows = synthetic.generate(num_users=100, num_items=80).interactions
    table = {
        "user_id": rows.users.astype(bytes),
        "movie_id": rows.items.astype(bytes),
        "timestamp": rows.timestamps.astype("int64"),
        "user_rating": np.ones(len(rows), "float32"),
    }

    def as_dataset(self, *unused_args, **unused_kwargs):
        return tf.data.Dataset.from_tensor_slices(table)

    data_dir = tempfile.mkdtemp()
    builder = tfds.builder(args.name, data_dir=data_dir)
    os.makedirs(builder.data_dir)
    builder.info.write_to_directory(builder.data_dir)  # metadata only
    mock = tfds.testing.mock_data(data_dir=data_dir, as_dataset_fn=as_dataset)
try:
    with mock:
        interactions = load_tfds_movielens(
            args.name, data_dir, args.tfds_manual_dir
        )
except DataError as error:
    sys.exit(str(error))
print(interactions.summary())

# ## Training
#
# Ratings become per-position features; here we add the time gap and the
# rating through soft one-hot encoding.

data = prepare(interactions, max_len=50)
print(data.summary())
config = ModelConfig(
    num_items=data.num_items, features=tuple(data.feature_names)
)
model = SequentialRetrievalModel.from_data(config, data)
model.compile(optimizer=tf.keras.optimizers.Adam(1e-3))
model.fit(
    make_dataset(data.train, 128, shuffle=True, seed=0),
    validation_data=make_dataset(data.validation, 512),
    epochs=1 if args.smoke else args.epochs,
    verbose=2,
)
print(model.evaluate(make_dataset(data.test, 512), return_dict=True, verbose=0))
