"""The ``models.config`` file of ``tensorflow_model_server``."""

import os
import re
from typing import Any

from tfrec_tricks.atomic_files import write_text_atomic

# A TF Serving model name that is also one path component: it names the
# model's folder of versions and the URL's ``/v1/models/<name>``.
MODEL_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
MODEL_NAME_MAX_LENGTH = 255
# TF Serving reads a version folder's name as an int64.
MAX_VERSION = 2**63 - 1


def check_model_name(name: str) -> str:
    """Checks that ``name`` can name a served model; returns it.

    The name is TF Serving's (``/v1/models/<name>``, the ``name`` of a
    ``models.config`` entry) and the folder of the model's versions, so it
    must be one path component: a letter or digit, then letters, digits,
    ``_``, ``.`` or ``-``, at most 255 characters (so never ``.``, ``..``,
    an absolute path, or anything with ``/`` or ``\\``).

    Args:
        name: str. The model's name.

    Returns:
        ``name``.

    Raises:
        ValueError: ``name`` breaks the rule.

    Example:

    >>> from tfrec_tricks.export import check_model_name
    >>> check_model_name("gru4rec-cpr_v2.1")
    'gru4rec-cpr_v2.1'
    >>> check_model_name("../evil")
    Traceback (most recent call last):
    ...
    ValueError: A model name must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$ ...
    """
    if (
        not isinstance(name, str)
        or len(name) > MODEL_NAME_MAX_LENGTH
        or not MODEL_NAME_PATTERN.fullmatch(name)
    ):
        raise ValueError(
            f"A model name must match ^{MODEL_NAME_PATTERN.pattern}$ (a "
            "letter or digit, then letters, digits, '_', '.' or '-'; one "
            "path component, no '/' or '\\') and have at most "
            f"{MODEL_NAME_MAX_LENGTH} characters. Received: name={name!r}"
        )
    return name


def check_version(version: Any) -> int:
    """Checks that ``version`` can number a served model's version;
    returns it.

    TF Serving loads the folders of a model named by a number and reads
    the number as an int64: a version is an int from 1 to ``MAX_VERSION``
    (2**63 - 1). Larger, it would be written and never served.

    Args:
        version: the version number.

    Returns:
        ``version``.

    Raises:
        ValueError: ``version`` breaks the rule (a bool is no number).

    Example:

    >>> check_version(3)
    3
    >>> check_version(2**63)
    Traceback (most recent call last):
    ...
    ValueError: `version` must be at most 9223372036854775807 (TF Serving ...
    """
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValueError(
            f"`version` must be a positive int. Received: version={version!r}"
        )
    if version < 1:
        raise ValueError(
            f"`version` must be a positive int. Received: version={version}"
        )
    if version > MAX_VERSION:
        raise ValueError(
            f"`version` must be at most {MAX_VERSION} (TF Serving reads "
            f"versions as int64). Received: version={version}"
        )
    return version


def read_models_config(path: str) -> Any:
    """The ``ModelServerConfig`` of a ``models.config`` file.

    Args:
        path: str. The config file; a missing file is an empty config.

    Returns:
        a ``tensorflow_serving.config.model_server_config_pb2.
        ModelServerConfig``.

    Raises:
        ValueError: the file is not a valid text proto (the message names
            the file and the parse error).
    """
    from google.protobuf import text_format
    from tensorflow_serving.config import model_server_config_pb2

    config = model_server_config_pb2.ModelServerConfig()
    if not os.path.exists(path):
        return config
    try:
        with open(path, encoding="utf-8") as handle:
            text_format.Parse(handle.read(), config)
    except (text_format.ParseError, UnicodeDecodeError) as error:
        raise ValueError(
            f"{path}: not a valid model_config_list text proto ({error}); "
            "fix or remove it"
        ) from error
    return config


def update_models_config(path: str, name: str, base_path: str) -> str:
    """Adds or updates one model's entry of a ``model_config_list`` file.

    The file is the text proto ``tensorflow_model_server
    --model_config_file=...`` reads; other models' entries are kept. The
    file is replaced atomically.

    Args:
        path: str. The config file (created if missing).
        name: str. The model's name (the URL's ``/v1/models/<name>``),
            see ``check_model_name``.
        base_path: str. The model's folder of versions *as the server sees
            it*, e.g. ``/models/<name>`` in the Docker image.

    Returns:
        ``path``.

    Raises:
        ValueError: ``name`` is not a valid model name, or the existing
            file cannot be parsed (it is left unchanged).

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

    check_model_name(name)
    config = read_models_config(path)
    entries = config.model_config_list.config
    entry = next((e for e in entries if e.name == name), None)
    if entry is None:
        entry = entries.add()
    entry.name = name
    entry.base_path = base_path
    entry.model_platform = "tensorflow"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    # An existing file keeps its mode (a server may read it as another
    # user); a new one gets the umask's.
    return write_text_atomic(path, text_format.MessageToString(config))
