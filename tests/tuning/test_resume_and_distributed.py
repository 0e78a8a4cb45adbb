"""A killed search resumes; chief/worker distributed search (processes)."""

import glob
import json
import os
import time

import pytest
from tuning_helpers import TINY_CLI, cli, free_port


def _trials(search_dir):
    """{trial_id: (status, score)} from KerasTuner's trial files."""
    result = {}
    pattern = os.path.join(search_dir, "search", "trial_*", "trial.json")
    for path in glob.glob(pattern):
        try:
            with open(path) as handle:
                trial = json.load(handle)
        except (OSError, json.JSONDecodeError):  # being written
            continue
        result[trial["trial_id"]] = (trial["status"], trial["score"])
    return result


def _finish(process, timeout):
    try:
        output, _ = process.communicate(timeout=timeout)
    except Exception:
        process.kill()
        output, _ = process.communicate()
        raise AssertionError(
            f"did not finish in {timeout} s:\n{output[-3000:]}"
        )
    return output


@pytest.mark.slow
def test_killed_search_resumes_without_redoing_trials(tmp_path):
    args = [*TINY_CLI, "--output-dir", str(tmp_path)]
    search_dir = tmp_path / "synthetic"
    first = cli(args, cwd=tmp_path)
    deadline = time.monotonic() + 240
    # KerasTuner writes a trial's COMPLETED status, then the tuner's own
    # file that a rerun reloads: killed between the two, there is nothing
    # to reload yet. Wait for both.
    tuner_file = search_dir / "search" / "tuner0.json"
    while time.monotonic() < deadline:
        statuses = {s for s, _ in _trials(search_dir).values()}
        if "COMPLETED" in statuses and tuner_file.exists():
            break
        if first.poll() is not None:
            break
        time.sleep(0.2)
    first.kill()
    output, _ = first.communicate()
    done = {t: v for t, v in _trials(search_dir).items() if v[0] == "COMPLETED"}
    assert done, output[-3000:]
    assert len(done) < 4, "the search finished before it could be killed"
    stamps = {
        t: os.path.getmtime(search_dir / "search" / f"trial_{t}" / "trial.json")
        for t in done
    }

    second = cli(args, cwd=tmp_path)
    output = _finish(second, 400)
    assert second.returncode == 0, output[-3000:]
    assert "Reloading Tuner" in output
    trials = _trials(search_dir)
    assert len(trials) == 4
    assert {s for s, _ in trials.values()} == {"COMPLETED"}, trials
    for trial_id, (status, score) in done.items():
        # Not redone: same score, trial file untouched.
        assert trials[trial_id] == (status, score)
        path = search_dir / "search" / f"trial_{trial_id}" / "trial.json"
        assert os.path.getmtime(path) == stamps[trial_id]
    assert (search_dir / "best_config.json").is_file()
    assert "(chosen)" in (search_dir / "selection.md").read_text()


@pytest.mark.slow
def test_distributed_chief_and_two_workers(tmp_path):
    pytest.importorskip(
        "grpc", reason="KerasTuner's distributed mode needs grpcio"
    )
    port = str(free_port())
    args = [*TINY_CLI, "--output-dir", str(tmp_path)]
    env = {"KERASTUNER_ORACLE_IP": "127.0.0.1", "KERASTUNER_ORACLE_PORT": port}
    chief = cli(args, env={**env, "KERASTUNER_TUNER_ID": "chief"}, cwd=tmp_path)
    workers = [
        cli(args, env={**env, "KERASTUNER_TUNER_ID": f"tuner{i}"}, cwd=tmp_path)
        for i in range(2)
    ]
    try:
        outputs = [_finish(worker, 600) for worker in workers]
        chief_output = _finish(chief, 300)
    finally:
        for process in (chief, *workers):
            if process.poll() is None:
                process.kill()
    for process, output in zip((*workers, chief), (*outputs, chief_output)):
        assert process.returncode == 0, output[-3000:]
    trials = _trials(tmp_path / "synthetic")
    assert len(trials) == 4
    assert {s for s, _ in trials.values()} == {"COMPLETED"}, trials
    # Both workers ran trials; the chief only served the oracle.
    for output in outputs:
        assert "val_ndcg@10" in output and "Worker finished" in output
    assert (tmp_path / "synthetic" / "best_config.json").is_file()
    assert (tmp_path / "synthetic" / "trials.md").is_file()
    # The chief retrained the defaults and the best trial after the search.
    assert "Retraining 2 configurations" in chief_output
    assert (tmp_path / "synthetic" / "selection.md").is_file()
