"""A ``ServingModule`` written as a SavedModel, through the Keras in use.

Both Kerases write the same signatures (``serving_default``,
``recommend_filtered``, ``score_candidates``: names, inputs, outputs and
dtypes), the same catalogue variable (``raw_item_ids``) and the same
graph code (``ServingModule``'s), so plain TensorFlow and TF Serving read
either alike:

- under tf-keras, ``tf.saved_model.save`` of the module with its
  ``signatures``, as before Keras 3 exports existed;
- under Keras 3, Keras 3's own export API, ``keras.export.ExportArchive``
  (``write_export_archive``).
"""

from collections.abc import Callable
from typing import Any

import tensorflow as tf

from tfrec_tricks.keras_version import keras_3_in_use

# The root attribute of an export that holds the catalogue (raw ids by
# contiguous id): ``recommendation.beam_model_handler`` reads it.
CATALOGUE = "raw_item_ids"


def serving_writer(module: Any) -> Callable[[str], None]:
    """The function that writes ``module`` as a SavedModel into a folder.

    Args:
        module: a ``tfrec_tricks.export.ServingModule``.

    Returns:
        ``write(folder)``. Under tf-keras the signatures are traced now, so
        that a model that cannot be served fails before a folder exists.
    """
    if keras_3_in_use():
        return lambda folder: write_export_archive(module, folder)
    signatures = module.signatures()

    def write(folder: str) -> None:
        tf.saved_model.save(module, folder, signatures=signatures)

    return write


def write_export_archive(module: Any, folder: str) -> None:
    """Writes ``module``'s signatures with ``keras.export.ExportArchive``.

    Under Keras 3 only. Each signature is an endpoint of the archive,
    traced with the signature's input specs (one dict argument whose
    keys and ``TensorSpec`` names are the signature's input names). What
    the archive tracks, and why:

    - the module, so that its lookup tables (raw id -> contiguous id,
      token values) are saved: the archive collects every
      ``tf.lookup`` resource under what it tracks;
    - the model's weights are the variables the endpoints use, which the
      archive saves without being told. Tracking the model itself would
      save each weight twice (the Keras variable and the ``tf.Variable``
      it wraps: a tiny CPR model's variables file 19.7 KB instead of
      10.0 KB, its ``saved_model.pb`` 605 KB instead of 534 KB);
    - ``raw_item_ids`` as a variable collection: the archive saves
      endpoints and collections only, so the catalogue is a list of one
      variable at the root, where a tf-keras export holds the variable
      itself (``beam_model_handler.saved_model_info`` reads both).

    Args:
        module: a ``tfrec_tricks.export.ServingModule``.
        folder: str. Where to write the SavedModel (created).

    Raises:
        ValueError: called under tf-keras (whose layers ExportArchive
            cannot export).
    """
    if not keras_3_in_use():
        raise ValueError(
            "write_export_archive needs Keras 3 (keras.export.ExportArchive); "
            "under tf-keras the module is saved with tf.saved_model.save "
            "(serving_writer). Received: tf.keras is tf-keras"
        )
    import keras

    archive = keras.export.ExportArchive()
    archive.track(module)
    for name, (method, specs) in module.endpoints().items():
        archive.add_endpoint(
            name,
            _dict_function(method),
            input_signature=[specs],
        )
    archive.add_variable_collection(CATALOGUE, [getattr(module, CATALOGUE)])
    archive.write_out(folder, verbose=False)


def _dict_function(method: Any) -> Callable[[dict], Any]:
    """``method`` of keyword arguments as a function of one dict: an
    endpoint's single argument."""
    return lambda inputs: method(**inputs)
