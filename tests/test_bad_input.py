"""Bad input through the real CLI: a clear message, an exit code, no harm.

Each case sets up a workspace (a finished run, an interrupted run, data
files, an export folder), runs ``tfrec-tricks`` (``cli.main``, in this
process: the process boundary is not what is tested, and a subprocess
would import TensorFlow again for each case that reaches it), and asserts
the exit code, the message, no traceback, and that every file and folder
of the workspace is as it was: nothing replaced, mixed or left behind.
The runs themselves are written by a ``tfrec-tricks train`` process.
docs/run-directories.md ("Bad input") lists the same cases.
"""

import json
import shutil

import pytest

from tests.run_helpers import (
    TINY_FLAGS,
    Case,
    assert_refused,
    run_cli,
    run_cli_here,
)

pytestmark = pytest.mark.slow

TINY = TINY_FLAGS
FINISHED = ["--epochs", "1", "--name", "run"]
INTERRUPTED = ["--epochs", "3", "--name", "running"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``runs/run``, finished; ``runs/running``, interrupted after epoch 1."""
    from tests.run_helpers import Interrupt
    from tfrec_tricks.training.run_training import train
    from tfrec_tricks.training.train_config import TrainConfig

    root = tmp_path_factory.mktemp("bad-input") / "runs"
    result = run_cli(
        "train", *TINY, *FINISHED, "--output-dir", str(root), cwd=root.parent
    )
    assert result.returncode == 0, result.stderr[-2000:]

    # What `train TINY INTERRUPTED` would write before a Ctrl-C.
    config = TrainConfig(
        synthetic_users=60,
        synthetic_items=40,
        max_len=10,
        epochs=3,
        output_dir=str(root),
        name="running",
        model={"embedding_dim": 8},
    )
    with pytest.raises(KeyboardInterrupt):
        train(config, verbose=0, callbacks=[Interrupt()])
    return root


def _write(name, text, encoding="utf-8"):
    def setup(workspace):
        (workspace / name).write_bytes(text.encode(encoding))

    return setup


def _broken_models_config(workspace):
    (workspace / "saved_models").mkdir()
    (workspace / "saved_models" / "models.config").write_text("garbage {{{")


def _remove_weights(workspace):
    (workspace / "runs" / "run" / "model" / "weights.index").unlink()


def _other_vocabulary(workspace):
    path = workspace / "runs" / "run" / "vocabulary.json"
    vocabulary = json.loads(path.read_text())
    vocabulary["items"][1:3] = vocabulary["items"][2:0:-1]
    path.write_text(json.dumps(vocabulary))


def _prepared(workspace, change=None):
    from tfrec_tricks.training.prepare_dataset import prepare_dataset
    from tfrec_tricks.training.train_config import TrainConfig

    config = TrainConfig(synthetic_users=60, synthetic_items=40, max_len=10)
    path = workspace / "prepared"
    prepare_dataset(config, str(path), num_shards=2, verbose=False)
    if change:
        change(path)


def _without_metadata(path):
    (path / "metadata.json").unlink()


def _changed_shard(path):
    shard = sorted(path.glob("*.tfrecord"))[0]
    data = bytearray(shard.read_bytes())
    data[-1] ^= 1
    shard.write_bytes(bytes(data))


UDATA_NAN = "1\t10\t3\t100\n1\t11\t4\t200\n1\t12\t5\tnan\n"
SESSIONS_INF = "SessionId\tItemId\tTime\n1\t10\t100\n1\t11\tinf\n"
EXPORT = ["export", "runs/run", "--base-path", "saved_models"]

CASES = [
    # A run directory is one consistent thing.
    Case(
        "finished-run-other-options",
        ["train", *TINY, *FINISHED, "--embedding-dim", "16", "--epochs", "2"],
        1,
        [
            "holds a finished run with other settings",
            "model.embedding_dim: 8 -> 16",
        ],
    ),
    Case(
        "finished-run-other-seed",
        ["train", *TINY, *FINISHED, "--seed", "1"],
        1,
        ["holds a finished run with other settings", "train.seed: 0 -> 1"],
    ),
    Case(
        "interrupted-run-other-seed",
        ["train", *TINY, *INTERRUPTED, "--seed", "1"],
        1,
        ["holds an interrupted run with other settings", "train.seed: 0 -> 1"],
    ),
    Case(
        "interrupted-run-other-model",
        ["train", *TINY, *INTERRUPTED, "--encoder", "sasrec"],
        1,
        ['model.encoder: "gru4rec" -> "sasrec"'],
    ),
    Case(
        "export-interrupted-run",
        ["export", "runs/running", "--name", "m"],
        1,
        ["has not finished"],
    ),
    Case(
        "export-run-without-weights",
        [*EXPORT, "--name", "m"],
        1,
        ["model/weights.index is missing"],
        _remove_weights,
    ),
    Case(
        "export-run-with-another-vocabulary",
        [*EXPORT, "--name", "m"],
        1,
        ["vocabulary.json changed after the run finished"],
        _other_vocabulary,
    ),
    Case(
        "export-not-a-run",
        ["export", "runs", "--name", "m"],
        1,
        ["not a training run directory"],
    ),
    # Names are names.
    Case(
        "train-name-parent",
        ["train", *TINY, "--name", "../../x"],
        2,
        ["--name", "single folder name", "'../../x'"],
    ),
    Case(
        "train-name-absolute",
        ["train", *TINY, "--name", "/tmp/x"],
        2,
        ["single folder name"],
    ),
    Case(
        "export-name-parent",
        [*EXPORT, "--name", "../evil"],
        2,
        ["--name", "'../evil'"],
    ),
    Case("export-name-nested", [*EXPORT, "--name", "a/b"], 2, ["'a/b'"]),
    Case("export-name-dot", [*EXPORT, "--name", "."], 2, ["'.'"]),
    # Loaders.
    Case(
        "nan-timestamp",
        ["train", "--data", "file", "--data-path", "u.data"],
        1,
        ["u.data:3:", "timestamp 'nan' is not a finite number"],
        _write("u.data", UDATA_NAN),
    ),
    Case(
        "inf-timestamp",
        ["train", "--data", "file", "--data-path", "clicks.tsv"],
        1,
        ["clicks.tsv:3:", "'inf' is not a finite number"],
        _write("clicks.tsv", SESSIONS_INF),
    ),
    Case(
        "latin-1-file",
        ["train", "--data", "file", "--data-path", "u.data"],
        1,
        ["u.data:2: not valid UTF-8 at byte offset 16"],
        _write("u.data", "1\t10\t3\t100\n1\tcafé\t4\t200\n", "latin-1"),
    ),
    # Config files get the checks flags get.
    Case(
        "config-unknown-model-key",
        ["train", "--config", "c.json"],
        1,
        ["c.json: unknown model options ['bogus']", "embedding_dim"],
        _write("c.json", '{"model": {"bogus": 3}}'),
    ),
    Case(
        "config-wrong-type",
        ["train", "--config", "c.json"],
        1,
        ["c.json: model.embedding_dim must be int", "'big'"],
        _write("c.json", '{"model": {"embedding_dim": "big"}}'),
    ),
    Case(
        "config-train-model-not-object",
        ["train", "--config", "c.json"],
        1,
        ["c.json: 'train.model' must be an object"],
        _write("c.json", '{"train": {"model": 5}}'),
    ),
    Case(
        "config-train-not-object",
        ["train", "--config", "c.json"],
        1,
        ["c.json: 'train' must be an object"],
        _write("c.json", '{"train": [1]}'),
    ),
    Case(
        "config-out-of-range",
        ["train", "--config", "c.json"],
        1,
        ["c.json: epochs must be positive. Received: epochs=0"],
        _write("c.json", '{"train": {"epochs": 0}}'),
    ),
    # A value outside a flag's choices: refused before the run directory
    # is written (an optimizer was refused after it).
    Case(
        "config-not-a-choice",
        ["train", "--config", "c.json"],
        1,
        [
            "c.json: optimizer must be one of ('adam', 'adagrad'). "
            "Received: optimizer='sgd'"
        ],
        _write("c.json", '{"train": {"optimizer": "sgd"}}'),
    ),
    Case(
        "config-binary",
        ["train", "--config", "c.json"],
        1,
        ["c.json: not a JSON text file (byte 1 is 0xff"],
        _write("c.json", "\x00\xff\xfe", "latin-1"),
    ),
    # Clear limits.
    Case(
        "cpr-reranker-above-catalogue",
        ["train", *TINY, "--head", "cpr"],
        1,
        ["CPR reranker size k must be at most the number of real items"],
    ),
    # Prepared datasets: checked before anything is written.
    Case(
        "prepare-into-existing-folder",
        ["prepare", *TINY[:4], "--output", "prepared"],
        1,
        ["'prepared' already exists; pass --overwrite"],
        _prepared,
    ),
    Case(
        "prepare-beam-synthetic",
        ["prepare", "--engine", "beam", "--output", "new"],
        1,
        ["--engine beam reads interaction files"],
    ),
    Case(
        "prepare-local-with-beam-options",
        ["prepare", "--output", "new", "--runner", "DataflowRunner"],
        2,
        ["unrecognized arguments: --runner DataflowRunner"],
    ),
    Case(
        "prepare-local-with-beam-runner",
        ["prepare", "--output", "new", "--beam-runner", "FlinkRunner"],
        1,
        ["--beam-runner applies to --engine beam only"],
    ),
    Case(
        "train-prepared-missing",
        ["train", "--prepared", "nowhere"],
        1,
        ["'nowhere' is not a folder"],
    ),
    Case(
        "train-prepared-half-written",
        ["train", "--prepared", "prepared"],
        1,
        ["metadata.json is missing"],
        lambda workspace: _prepared(workspace, _without_metadata),
    ),
    Case(
        "train-prepared-changed-shard",
        ["train", "--prepared", "prepared"],
        1,
        ["SHA-256 differs from metadata.json's"],
        lambda workspace: _prepared(workspace, _changed_shard),
    ),
    Case(
        "train-prepared-other-max-len",
        ["train", "--prepared", "prepared", "--max-len", "20"],
        1,
        ["max_len=20 (prepared with 10)"],
        _prepared,
    ),
    # Training protocols that contradict each other or the history length.
    Case(
        "window-stride-above-max-len",
        ["train", *TINY, "--train-windows", "--window-stride", "60"],
        1,
        ["window_stride must be in 0..max_len=", "window_stride=60"],
    ),
    Case(
        "windows-and-every-position",
        ["train", *TINY, "--train-windows", "--every-position"],
        1,
        ["two training protocols; choose one"],
    ),
    Case(
        "window-stride-without-windows",
        ["train", *TINY, "--window-stride", "3"],
        1,
        ["window_stride applies to train_windows only"],
    ),
    # Serving's model list is read before a version is published.
    Case(
        "unreadable-models-config",
        [*EXPORT, "--name", "m"],
        1,
        ["models.config"],
        _broken_models_config,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_refused_and_harms_nothing(case, runs, tmp_path):
    shutil.copytree(runs, tmp_path / "runs")
    assert_refused(case, tmp_path, run=run_cli_here)
