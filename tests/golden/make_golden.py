"""Writes the golden artifacts: saved work of every kind, as this version
of tfrec_tricks leaves it, and the identities it computes of each.

``tests/golden/test_golden_identities.py`` checks that later versions keep
those identities and reuse the artifacts: the old runs, search, prepared
dataset and export of a user who upgrades must be reused, resumed or
accepted, never refused.

What it writes, in ``tests/golden/``:

- ``workspace/``: the folder the commands ran in, as they left it.
  ``inputs/`` holds the hand-written data (``shop.item``: attributes of
  the synthetic items, ``shop.inter``: interactions with two token
  columns); ``runs/<name>/`` a run directory per kind of run (``RUNS``:
  each head, objective and encoder, item features, token features, SSE, a
  run on a prepared dataset) and ``runs/interrupted/``, stopped after its
  first of two epochs (resumable); ``prepared/synthetic/`` a prepared
  dataset (local engine); ``searches/random/`` a finished search (random
  tuner, 2 trials, the best retrained); ``served/`` an export of
  ``runs/softmax`` (version 1) and its ``models.config``.
- ``golden.json``: per artifact, the command that made it (its arguments,
  without ``--output-dir``) and what the code computed of it: a run's
  fingerprint (``run.json``), its model's identity and its logits of two
  fixed histories; the search's fingerprint; the prepared dataset's
  metadata; the export's identity record and the ``models.config`` text;
  ``written_in``, the real path the artifacts were written in (a run's
  own ``written_in`` where it was added later), and ``computed_in``, the
  one the identities were computed in (fingerprints record data paths
  resolved: the test moves them to its copy).

When to run it: never, except on purpose. The artifacts stand for what
users already have on disk; written again by a newer version, they would
no longer test that older work is still reused. Two purposes justify it:

- ``--identities``: an identity changed deliberately (a fingerprint field
  added with its compatibility rule, say): recompute ``golden.json``'s
  identities from the existing workspace with the current code, and
  review the diff. The artifacts stay as they are, and still must be
  reused. (The search's fingerprint is its ``search.json``'s, which the
  test compares as ``tune`` does: a training option added since, at the
  value that behaves as before, is no difference.)
- ``--only NAME ...``: a new kind of artifact (a new head, a new
  encoder): add it to ``RUNS`` and write only it, beside the old ones.
- With no argument, everything is written afresh into an empty
  ``workspace/`` (it refuses an existing one: delete it by hand first).

Run it on a clean checkout of a commit (``git archive HEAD | tar -x -C
DIR``), not in a tree with uncommitted edits, from its root, on CPU, then
move ``workspace/`` and ``golden.json`` into the repository::

    TF_USE_LEGACY_KERAS=1 python -m tests.golden.make_golden [--only NAME]

It takes about ten minutes on two cores. Keep the artifacts small (tiny
synthetic data, embedding_dim 8, one epoch; what no identity reads,
TensorBoard logs and finished runs' best-epoch checkpoints, is removed:
``trim``): ``workspace/`` holds about 0.9 MB, 0.35 MB compressed (0.37 MB
of it the export's ``saved_model.pb``).
"""

import argparse
import contextlib
import json
import os
import pathlib
import shutil
import sys
import tempfile

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = pathlib.Path(__file__).resolve().parent
WORKSPACE = HERE / "workspace"
GOLDEN = HERE / "golden.json"

# Every run reads the same tiny synthetic data (or a file as small).
DATA = ["--synthetic-users", "40", "--synthetic-items", "40", "--max-len", "8"]
TINY = ["--epochs", "1", "--embedding-dim", "8"]
SOFTMAX = ["--head", "softmax"]

#: Run name -> ``tfrec-tricks train`` arguments (``--output-dir runs``
#: added). One per head (``--head`` takes softmax, cpr, mos,
#: softmax_no_dup and auto, the default), per objective (full, sampled;
#: sampled with drawn negatives), per encoder (gru4rec, the default,
#: sasrec, hstu), and per kind of input or technique.
RUNS = {
    "auto": [*DATA, *TINY, "--name", "auto"],
    "softmax": [*DATA, *TINY, *SOFTMAX, "--name", "softmax"],
    "softmax_no_dup": [
        *DATA,
        *TINY,
        "--head",
        "softmax_no_dup",
        "--name",
        "softmax_no_dup",
    ],
    "cpr": [*DATA, *TINY, "--head", "cpr", "--cpr-rerankers", "10"]
    + ["--name", "cpr"],
    "mos": [*DATA, *TINY, "--head", "mos", "--mos-components", "2"]
    + ["--name", "mos"],
    "sampled": [*DATA, *TINY, *SOFTMAX, "--objective", "sampled"]
    + ["--name", "sampled"],
    "sampled_negatives": [*DATA, *TINY, *SOFTMAX, "--objective", "sampled"]
    + ["--num-sampled-negatives", "5", "--name", "sampled_negatives"],
    "sasrec": [*DATA, *TINY, *SOFTMAX, "--encoder", "sasrec"]
    + ["--name", "sasrec"],
    "hstu": [*DATA, *TINY, *SOFTMAX, "--encoder", "hstu", "--name", "hstu"],
    "item_features": [*DATA, *TINY, *SOFTMAX]
    + ["--item-features", "inputs/shop.item", "--name", "item_features"],
    "token_features": ["--data", "file", "--data-path", "inputs/shop.inter"]
    + ["--max-len", "8", *TINY, *SOFTMAX, "--features", "device", "channel"]
    + ["--name", "token_features"],
    "sse": [*DATA, *TINY, *SOFTMAX, "--sse-item-probability", "0.1"]
    + ["--sse-label-probability", "0.1", "--name", "sse"],
    "prepared": ["--prepared", "prepared/synthetic", *TINY, *SOFTMAX]
    + ["--name", "prepared"],
}
#: Stopped (as by Ctrl-C) after the first of its two epochs.
INTERRUPTED = [*DATA, "--epochs", "2", "--embedding-dim", "8", *SOFTMAX]
INTERRUPTED += ["--name", "interrupted"]
PREPARE = [*DATA, "--output", "prepared/synthetic"]
SEARCH = [*DATA, "--epochs", "1", "--embedding-dim", "8"]
SEARCH += ["--encoder", "gru4rec", "--tuner", "random", "--max-trials", "2"]
SEARCH += ["--retrain-top", "1", "--choices", "dropout=0.1,0.3"]
SEARCH += ["--name", "random"]
EXPORT = ["runs/softmax", "--name", "softmax", "--base-path", "served"]
#: Two histories scored by every run's model (padding 0 at the end).
PROBE = [[1, 2, 3, 4, 0, 0, 0, 0], [5, 3, 7, 9, 2, 11, 0, 0]]


def train_args(name: str) -> list[str]:
    """``tfrec-tricks train`` arguments of run ``name``, without
    ``--output-dir`` (the caller's)."""
    return INTERRUPTED if name == "interrupted" else RUNS[name]


def probe_inputs(model_config) -> dict:
    """``PROBE`` as a model's inputs: each per-position feature 1.0 where
    the history has an item (a token feature: id 2, its first value)."""
    import numpy as np

    history = np.asarray(PROBE, np.int64)
    filled = (history > 0).astype(np.float32)
    inputs = {"history": history}
    for name in model_config.features:
        inputs[name] = filled
    for feature in model_config.token_features:
        inputs[feature["name"]] = 2.0 * filled
    return inputs


def probe_logits(model) -> list:
    """The model's logits of ``PROBE``, as JSON floats."""
    logits = model(probe_inputs(model.config), training=False)
    return [[float(v) for v in row] for row in logits.numpy()]


def run_identity(run_dir: str, config) -> dict:
    """What the code computes of a run directory: its fingerprint (as
    ``train`` computes it for these arguments), its model's identity and,
    finished, the logits of ``PROBE``."""
    from tfrec_tricks.export.model_identity import ModelIdentity
    from tfrec_tricks.training.persistence import load_model
    from tfrec_tricks.training.prepare_dataset import resolved_config
    from tfrec_tricks.training.resumption import (
        fingerprint,
        with_recorded_head,
    )
    from tfrec_tricks.training.run_directory import read_run_file

    run = read_run_file(run_dir)
    num_items = run["fingerprint"]["model"]["num_items"]
    config = with_recorded_head(resolved_config(config), run_dir)
    identity = {
        "status": run["status"],
        "fingerprint": fingerprint(config, num_items),
    }
    if run["status"] == "finished":
        identity["model_sha256"] = ModelIdentity.of_run(run_dir, run).sha256
        identity["logits"] = probe_logits(load_model(run_dir))
    return identity


def prepared_identity(folder: str) -> dict:
    """The prepared dataset's ``metadata.json``, as ``train --prepared``
    reads it."""
    from tfrec_tricks.data.prepared.format import read_metadata

    return read_metadata(folder)


def export_identity(version: str, run_dir: str) -> dict:
    """The export's record of its model, and the run's identity now."""
    from tfrec_tricks.export.model_identity import (
        ModelIdentity,
        read_identity,
    )
    from tfrec_tricks.training.run_directory import check_finished_run

    recorded = read_identity(version)
    run = ModelIdentity.of_run(run_dir, check_finished_run(run_dir))
    return {"sha256": recorded.sha256, "seed": recorded.seed, "run": run.sha256}


def search_identity(search_dir: str) -> dict:
    """The search's fingerprint, as ``search.json`` records it."""
    from tfrec_tricks.tuning.search_directory import read_search_file

    document = read_search_file(search_dir)
    return {
        "status": document["status"],
        "fingerprint": document["fingerprint"],
        "fingerprint_sha256": document["fingerprint_sha256"],
    }


def identities(written_in: str, runs_written_in: dict) -> dict:
    """``golden.json``: every artifact's command and identities, computed
    by the current code in the working directory, the workspace; the
    artifacts were written in ``written_in``, but for the runs of
    ``runs_written_in`` (name -> where)."""
    from tests.run_helpers import parsed_train_config

    golden = {
        "written_in": written_in,
        "computed_in": os.path.realpath("."),
        "runs": {},
    }
    for name in [*RUNS, "interrupted"]:
        argv = train_args(name)
        config = parsed_train_config("train", *argv, "--output-dir", "runs")
        golden["runs"][name] = {
            "argv": argv,
            "written_in": runs_written_in.get(name, written_in),
            **run_identity(os.path.join("runs", name), config),
        }
    golden["prepared"] = {
        "argv": PREPARE,
        "metadata": prepared_identity("prepared/synthetic"),
    }
    golden["search"] = {
        "argv": SEARCH,
        **search_identity("searches/random"),
    }
    with open("served/models.config", encoding="utf-8") as handle:
        models_config = handle.read()
    golden["export"] = {
        "argv": EXPORT,
        "version": "served/softmax/1",
        "models_config": models_config,
        **export_identity("served/softmax/1", "runs/softmax"),
    }
    return golden


def write_inputs() -> None:
    """The hand-written data: ``inputs/shop.item`` (a genre list and a
    year for items i0..i44: i0 and i41..i44 are not among the synthetic
    items i1..i40, so they join as cold items) and
    ``inputs/shop.inter`` (12 users, 8 clicks each, ``device`` and
    ``channel`` token columns)."""
    from tests.run_helpers import write_token_interactions
    from tests.tuning.tuning_helpers import write_item_file

    os.makedirs("inputs")
    write_item_file(pathlib.Path("inputs/shop.item"))
    write_token_interactions("inputs/shop.inter")


def cli(*args: str) -> None:
    """``tfrec-tricks ARGS`` in this process; raises on a failure."""
    from tfrec_tricks import cli as command_line

    code = command_line.main(list(args))
    if code != 0:
        raise SystemExit(f"tfrec-tricks {' '.join(args)}: exit {code}")


def train_interrupted() -> None:
    """``runs/interrupted``, stopped after its first epoch (as Ctrl-C)."""
    from tests.run_helpers import Interrupt, parsed_train_config
    from tfrec_tricks.training.run_training import train

    config = parsed_train_config("train", *INTERRUPTED, "--output-dir", "runs")
    try:
        train(config, verbose=0, callbacks=[Interrupt(after_epoch=0)])
    except KeyboardInterrupt:
        return
    raise SystemExit("runs/interrupted was not interrupted")


def trim(folder: str) -> None:
    """Removes from ``folder`` what no identity reads and a user may
    delete: every ``tensorboard/`` (a search's is ~0.9 MB of graphs) and
    the best-epoch ``checkpoints/`` of finished runs (their ``model/``
    holds the same weights; an interrupted run keeps its own, which it
    resumes from); then the empty folders."""
    from tfrec_tricks.training.run_directory import run_state

    for root, dirs, _ in os.walk(folder):
        for name in list(dirs):
            finished = run_state(root) == "finished"
            if name == "tensorboard" or (name == "checkpoints" and finished):
                shutil.rmtree(os.path.join(root, name))
                dirs.remove(name)
    # Git keeps no empty folder (a finished run's backup/, an export's
    # assets/): the test reads what a checkout holds.
    for root, _, _ in os.walk(folder, topdown=False):
        if not os.listdir(root):
            os.rmdir(root)


def write_artifacts(names: list[str], everything: bool = False) -> None:
    """Writes the runs ``names`` (``everything``: every artifact) in the
    working directory, in the order they depend on each other."""
    if everything:
        write_inputs()
        cli("prepare", *PREPARE)
    for name in RUNS:
        if everything or name in names:
            cli("train", *RUNS[name], "--output-dir", "runs", "--quiet")
    if everything or "interrupted" in names:
        train_interrupted()
    if everything:
        cli("export", *EXPORT)
        cli("tune", *SEARCH, "--output-dir", "searches", "--quiet")
    trim(".")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--identities",
        action="store_true",
        help="recompute golden.json from the existing workspace",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        default=[],
        metavar="NAME",
        help="write only these runs (RUNS, or 'interrupted') into the "
        "existing workspace",
    )
    args = parser.parse_args(argv)
    if args.identities or args.only:
        unknown = set(args.only) - {*RUNS, "interrupted"}
        if unknown:
            parser.error(f"unknown runs {sorted(unknown)}")
        with contextlib.chdir(WORKSPACE):
            for name in args.only:
                if os.path.exists(os.path.join("runs", name)):
                    parser.error(f"runs/{name} exists: it is never rewritten")
            if args.only:
                write_artifacts(args.only)
            before = json.loads(GOLDEN.read_text())
            where = {
                name: before["runs"].get(name, {}).get("written_in")
                or os.path.realpath(".")
                for name in [*RUNS, "interrupted"]
            }
            golden = identities(before["written_in"], where)
    else:
        if WORKSPACE.exists():
            parser.error(
                f"{WORKSPACE} exists: the artifacts are written once (see "
                "the docstring); delete it by hand to write them afresh"
            )
        # Written aside, then moved in: an interrupted generation leaves
        # nothing behind in tests/.
        scratch = pathlib.Path(tempfile.mkdtemp(prefix="golden-"))
        with contextlib.chdir(scratch):
            write_artifacts([], everything=True)
            golden = identities(os.path.realpath("."), {})
        shutil.move(str(scratch), WORKSPACE)
    GOLDEN.write_text(json.dumps(golden, indent=1) + "\n", encoding="utf-8")
    print(f"Wrote {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
