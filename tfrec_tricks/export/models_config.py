"""The ``models.config`` file of ``tensorflow_model_server``."""

import os
import tempfile


def update_models_config(path: str, name: str, base_path: str) -> str:
    """Adds or updates one model's entry of a ``model_config_list`` file.

    The file is the text proto ``tensorflow_model_server
    --model_config_file=...`` reads; other models' entries are kept. The
    file is replaced atomically.

    Args:
        path: str. The config file (created if missing).
        name: str. The model's name (the URL's ``/v1/models/<name>``).
        base_path: str. The model's folder of versions *as the server sees
            it*, e.g. ``/models/<name>`` in the Docker image.

    Returns:
        ``path``.

    Example:

    >>> import tempfile
    >>> from tfrec_tricks.export.models_config import update_models_config
    >>> path = os.path.join(tempfile.mkdtemp(), "models.config")
    >>> _ = update_models_config(path, "demo", "/models/demo")
    >>> print(open(path).read().strip())
    model_config_list {
      config {
        name: "demo"
        base_path: "/models/demo"
        model_platform: "tensorflow"
      }
    }
    """
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    if not name or "/" in name:
        raise ValueError(
            f"`name` must be a non-empty name without '/'. Received: {name!r}"
        )
    config = model_server_config_pb2.ModelServerConfig()
    if os.path.exists(path):
        with open(path) as handle:
            text_format.Parse(handle.read(), config)
    entries = config.model_config_list.config
    entry = next((e for e in entries if e.name == name), None)
    if entry is None:
        entry = entries.add()
    entry.name = name
    entry.base_path = base_path
    entry.model_platform = "tensorflow"
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".models.config")
    with os.fdopen(handle, "w") as out:
        out.write(text_format.MessageToString(config))
    os.replace(temporary, path)
    return path
