"""Times RecBole training epochs on request, for ``epoch_speed.py``.

Runs under an interpreter that has RecBole 1.2.1 and PyTorch (not
TensorFlow), so that ``epoch_speed.py`` can take RecBole's epochs in turns
with its own models and report ratios from one run. It is started by
``epoch_speed.py --recbole-python PYTHON``; it is not a user-facing tool.

Protocol (one JSON object per line on stdout, commands on stdin):

- start: ``recbole_worker.py DATA_DIR DATASET MODEL [MODEL ...]`` builds
  each model with RecBole's default config for it and the RecBole
  protocol (leave-one-out by time, every prefix a training example,
  max_len 50, batch 128, Adam 1e-3, full softmax), then prints
  ``{"ready": {MODEL: training examples per epoch}}``;
- each line ``MODEL`` on stdin trains that model one epoch and prints
  ``{"model": MODEL, "seconds": S, "loss": L}``; seconds are RecBole's own
  training epoch (``Trainer._train_epoch``), as its log reports it;
- end of stdin ends the worker.

``recbole_worker.py --fit EPOCHS DATA_DIR DATASET MODEL`` instead trains
one model the way ``run_recbole`` does (validation every epoch, RecBole's
early stopping on MRR@10, the best epoch's weights for the test) and
prints ``{"model": MODEL, "best_valid": {...}, "test": {...}}`` with
NDCG@10, HR@10 and MRR@10 (``recbole_reference.py`` runs it).

Errors are printed as ``{"error": "..."}`` and exit non-zero.
"""

import json
import sys
import tempfile
import time
import traceback


def protocol_config(data_dir: str, dataset: str, checkpoint_dir: str) -> dict:
    """RecBole settings shared by every model: the paper's protocol."""
    return {
        "data_path": data_dir,
        "dataset": dataset,
        "checkpoint_dir": checkpoint_dir,
        "USER_ID_FIELD": "session_id",
        "ITEM_ID_FIELD": "item_id",
        "TIME_FIELD": "timestamp",
        "load_col": {"inter": ["session_id", "item_id", "timestamp"]},
        "MAX_ITEM_LIST_LENGTH": 50,
        "train_batch_size": 128,
        "learning_rate": 1e-3,
        "train_neg_sample_args": None,
        "loss_type": "CE",
        "eval_args": {
            "split": {"LS": "valid_and_test"},
            "order": "TO",
            "mode": "full",
        },
        "use_gpu": False,
        "show_progress": False,
        "state": "ERROR",
        "seed": 0,
    }


def build(model_name: str, settings: dict, splits: bool = False):
    """Returns (trainer, train_data) for one RecBole model.

    With ``splits``, returns (trainer, train_data, valid_data, test_data).
    """
    from recbole.config import Config
    from recbole.data import create_dataset, data_preparation
    from recbole.utils import get_model, get_trainer, init_seed

    config = Config(model=model_name, config_dict=dict(settings))
    init_seed(config["seed"], config["reproducibility"])
    dataset = create_dataset(config)
    train_data, valid_data, test_data = data_preparation(config, dataset)
    model = get_model(config["model"])(config, train_data._dataset)
    trainer = get_trainer(config["MODEL_TYPE"], config["model"])(config, model)
    if splits:
        return trainer, train_data, valid_data, test_data
    return trainer, train_data


def fit(epochs: int, data_dir: str, dataset: str, model_name: str) -> dict:
    """Trains and tests one model as RecBole's ``run_recbole`` does."""
    import torch

    # RecBole 1.2.1 saves its config object in the checkpoint, which
    # PyTorch >= 2.6 refuses to unpickle by default (weights_only=True).
    plain_load = torch.load
    torch.load = lambda *a, **k: plain_load(*a, **{"weights_only": False, **k})
    with tempfile.TemporaryDirectory() as checkpoints:
        settings = {
            **protocol_config(data_dir, dataset, checkpoints),
            "epochs": epochs,
            "metrics": ["NDCG", "Hit", "MRR"],
            "topk": [10],
            "valid_metric": "MRR@10",
        }
        trainer, train_data, valid_data, test_data = build(
            model_name, settings, splits=True
        )
        _, best_valid = trainer.fit(train_data, valid_data, saved=True)
        test = trainer.evaluate(test_data, load_best_model=True)
    return {
        "model": model_name,
        "best_valid": {k: float(v) for k, v in best_valid.items()},
        "test": {k: float(v) for k, v in test.items()},
    }


def reply(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--fit"]:
        if len(argv) != 5:
            reply({"error": "usage: --fit EPOCHS DATA_DIR DATASET MODEL"})
            return 2
        try:
            reply(fit(int(argv[1]), *argv[2:]))
        except Exception:  # noqa: BLE001 - reported to the parent
            reply({"error": traceback.format_exc()})
            return 1
        return 0
    if len(argv) < 3:
        reply({"error": "usage: recbole_worker.py DATA_DIR DATASET MODEL..."})
        return 2
    data_dir, dataset, *model_names = argv
    try:
        with tempfile.TemporaryDirectory() as checkpoints:
            settings = protocol_config(data_dir, dataset, checkpoints)
            built = {name: build(name, settings) for name in model_names}
            reply(
                {
                    "ready": {
                        name: len(train_data.dataset)
                        for name, (_, train_data) in built.items()
                    }
                }
            )
            epochs = {name: 0 for name in built}
            for line in sys.stdin:
                name = line.strip()
                if name not in built:
                    reply({"error": f"unknown model {name!r}"})
                    return 2
                trainer, train_data = built[name]
                start = time.perf_counter()
                loss = trainer._train_epoch(train_data, epochs[name])
                seconds = time.perf_counter() - start
                epochs[name] += 1
                reply({"model": name, "seconds": seconds, "loss": float(loss)})
    except Exception:  # noqa: BLE001 - reported to the parent, then exit 1
        reply({"error": traceback.format_exc()})
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
