"""Whether a training run fits in memory, checked before it starts.

A run whose tables or logits cannot be allocated fails inside TensorFlow
(``ResourceExhaustedError``) minutes into the run, or the kernel kills it.
``check_memory`` compares a lower bound of what training needs
(``training_bytes``) with the memory the machine has free and refuses the
run before its run directory is written, naming the estimate and the
options that drive it.

The estimate is a lower bound, not a forecast: it counts the parameters
(with their gradients and the optimizer's slots), the training logits and
SASRec's attention weights, and leaves out TensorFlow's own overhead, the
data and every smaller activation. A run it refuses cannot fit; a run it
lets through may still run out of memory (``train`` then records the run
as failed).
"""

import os

from tfrec_tricks.errors import InsufficientMemoryError
from tfrec_tricks.heads.registry import head_spec
from tfrec_tricks.models.config import ModelConfig
from tfrec_tricks.models.encoder_registry import encoder_spec
from tfrec_tricks.objectives.objective_registry import objective_spec
from tfrec_tricks.training.train_config import TrainConfig

FLOAT_BYTES = 4
# Slots each optimizer keeps per weight (Adam: m and v; Adagrad: one
# accumulator).
OPTIMIZER_SLOTS = {"adam": 2, "adagrad": 1}


def parameter_count(model: ModelConfig) -> dict[str, int]:
    """A lower bound of the model's parameters, by part.

    Example:

    >>> config = ModelConfig(num_items=1001, embedding_dim=64)
    >>> parameter_count(config)["item tables"]
    65065
    """
    d = model.embedding_dim
    width = model.hidden_dim or d
    tables = model.num_items * d * (1 if model.tie_embeddings else 2)
    tables += model.num_items if model.output_bias else 0
    encoder = encoder_spec(model.encoder).parameters(model, width)
    head = head_spec(model.head).parameters(model, width)
    return {"item tables": tables, "encoder": encoder, "head": head}


def training_bytes(
    model: ModelConfig,
    batch_size: int,
    optimizer: str = "adam",
    rows_per_example: int = 1,
) -> dict[str, int]:
    """A lower bound of the bytes a training step needs, by part.

    Args:
        model: the run's resolved ``ModelConfig``.
        batch_size: int. Examples (rows) per step on this process.
        optimizer: str. A key of ``OPTIMIZER_SLOTS``. Defaults to "adam".
        rows_per_example: int. Targets per row (``max_len`` for training
            windows: each window scores every position). Defaults to 1.

    Returns:
        dict: "parameters" (weights, gradients and optimizer slots),
        "logits" (the training logits and their gradient), "attention"
        (SASRec's attention weights of every layer, kept for the backward
        pass) and "total".

    Example:

    >>> config = ModelConfig(num_items=1001, embedding_dim=100_000)
    >>> needed = training_bytes(config, batch_size=128)
    >>> round(needed["total"] / 2**30)  # mostly the GRU's d x d kernels
    896
    """
    params = sum(parameter_count(model).values())
    copies = 2 + OPTIMIZER_SLOTS.get(optimizer, 0)  # weights, gradients
    rows = batch_size * rows_per_example
    columns = objective_spec(model.objective).logit_columns(model, rows)
    logits = rows * columns * 2 * head_spec(model.head).logit_copies(model)
    # Attention scores and their softmax, of every layer.
    attention = encoder_spec(model.encoder).attention_elements(
        model, batch_size
    )
    parts = {
        "parameters": params * copies * FLOAT_BYTES,
        "logits": logits * FLOAT_BYTES,
        "attention": attention * FLOAT_BYTES,
    }
    parts["total"] = sum(parts.values())
    return parts


def available_bytes() -> int | None:
    """The memory the machine has free: ``MemAvailable`` of
    ``/proc/meminfo``, else free pages (``os.sysconf``); None if neither
    is known."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def describe_bytes(count: float) -> str:
    """``3 * 2**30`` -> ``"3.0 GiB"``.

    >>> describe_bytes(3 * 2**30), describe_bytes(5 * 2**20)
    ('3.0 GiB', '5.0 MiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if count < 1024 or unit == "TiB":
            return f"{count:.1f} {unit}" if unit != "B" else f"{count} B"
        count /= 1024
    return f"{count:.1f} TiB"


# The part of the estimate -> the options that shrink it.
REMEDIES = {
    "parameters": "--embedding-dim (the item table is items x d; the "
    "encoder grows with d^2)",
    "logits": "--batch-size (the logits are targets x items), or "
    "--objective sampled --num-sampled-negatives K (targets x (1 + K) "
    "scores; the in-batch candidates alone are targets x targets)",
    "attention": "--max-len or --batch-size (attention is batch x heads x "
    "L x L)",
}


def check_memory(
    model: ModelConfig,
    batch_size: int,
    optimizer: str = "adam",
    rows_per_example: int = 1,
    available: int | None = None,
) -> None:
    """Refuses a run whose lower-bound estimate exceeds the free memory.

    Args:
        model, batch_size, optimizer, rows_per_example: see
            ``training_bytes``.
        available: bytes free; None reads them (``available_bytes``). No
            check when they are unknown.

    Raises:
        InsufficientMemoryError: naming the estimate, the free memory and the
            option to lower first (the largest part's).

    Example:

    >>> config = ModelConfig(num_items=1001, embedding_dim=100_000)
    >>> check_memory(config, 128, available=8 * 2**30)
    Traceback (most recent call last):
    ...
    tfrec_tricks.errors.InsufficientMemoryError: This run needs at least ...
    """
    if available is None:
        available = available_bytes()
    if available is None:
        return
    parts = training_bytes(model, batch_size, optimizer, rows_per_example)
    if parts["total"] <= available:
        return
    largest = max(REMEDIES, key=lambda name: parts[name])
    shown = ", ".join(
        f"{name} {describe_bytes(parts[name])}"
        for name in REMEDIES
        if parts[name]
    )
    raise InsufficientMemoryError(
        f"This run needs at least {describe_bytes(parts['total'])} of "
        f"memory ({shown}), but only {describe_bytes(available)} is "
        f"available; nothing was written. Lower {REMEDIES[largest]}. "
        f"Received: embedding_dim={model.embedding_dim}, "
        f"batch_size={batch_size}, max_len={model.max_len}, "
        f"num_items={model.num_items}"
    )


def check_training_memory(
    config: TrainConfig, model: ModelConfig, replicas: int = 1
) -> None:
    """``check_memory`` for a training run, before it writes anything.

    Each of ``replicas`` replicas trains ``batch_size / replicas`` rows;
    with training windows a row scores ``max_len`` targets. On a GPU the
    limit is the device's memory, which TensorFlow reports only once it
    allocates: there a run that does not fit fails while training instead
    (and is recorded as failed).

    Raises:
        InsufficientMemoryError: see ``check_memory``.
    """
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        return
    check_memory(
        model,
        max(1, config.batch_size // max(1, replicas)),
        config.optimizer,
        rows_per_example=config.max_len if config.train_windows else 1,
    )
