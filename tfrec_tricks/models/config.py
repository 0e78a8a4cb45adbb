"""The plain, serialisable configuration of a sequential retrieval model."""

import dataclasses
import json

ENCODERS = ("gru4rec",)


@dataclasses.dataclass
class ModelConfig:
    """What to build; JSON round-trips through ``to_dict`` / ``from_dict``.

    Attributes:
        num_items: int. N, the item vocabulary size including padding id 0.
        max_len: int. History length the model reads.
        embedding_dim: int. d, the item embedding size.
        encoder: str. Sequence encoder; "gru4rec".
        hidden_dim: int. Encoder state size (projected back to d when it
            differs, as the output logits are scored against the d-sized
            item table). Defaults to d.
        num_layers: int. Stacked encoder layers.
        dropout: float. Dropout on item embeddings and encoder outputs.
        learning_rate: float. Adam's learning rate.
        metric_ks: tuple of cut-offs reported by the model's metrics.
    """

    num_items: int
    max_len: int = 50
    embedding_dim: int = 64
    encoder: str = "gru4rec"
    hidden_dim: int | None = None
    num_layers: int = 1
    dropout: float = 0.2
    learning_rate: float = 1e-3
    metric_ks: tuple[int, ...] = (10,)

    def __post_init__(self):
        self.metric_ks = tuple(int(k) for k in self.metric_ks)
        checks = {
            "num_items": self.num_items >= 2,
            "max_len": self.max_len > 0,
            "embedding_dim": self.embedding_dim > 0,
            "num_layers": self.num_layers > 0,
            "learning_rate": self.learning_rate > 0,
            "dropout": 0.0 <= self.dropout < 1.0,
            "hidden_dim": self.hidden_dim is None or self.hidden_dim > 0,
            "metric_ks": all(k > 0 for k in self.metric_ks),
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(
                    f"Invalid model config. Received: {name}="
                    f"{getattr(self, name)!r}"
                )
        if self.encoder not in ENCODERS:
            raise ValueError(
                f"encoder must be one of {ENCODERS}. Received: "
                f"encoder={self.encoder!r}"
            )

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> "ModelConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"Unknown model config keys {unknown}; known: {sorted(known)}"
            )
        return cls(**values)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)
