"""benchmarks/bit_identity.py: saved arrays, and every difference named."""

import numpy as np
import pytest

from benchmarks import bit_identity

pytestmark = pytest.mark.slow

CONFIG = ["gru4rec-no-dup-sse"]


def test_a_changed_array_is_named_and_the_script_exits_1(tmp_path, capsys):
    path = str(tmp_path / "before.npz")
    assert bit_identity.main(["--save", path, "--configs", *CONFIG]) == 0
    with np.load(path) as saved:
        arrays = {key: saved[key] for key in saved.files}
    assert any("/served-index-ids" in key for key in arrays)
    key = next(k for k in arrays if "/weight/" in k)
    arrays[key] = arrays[key] + np.float32(1e-7)
    del arrays[next(k for k in arrays if k.endswith("/losses"))]
    np.savez(path, **arrays)
    assert bit_identity.main(["--compare", path, "--configs", *CONFIG]) == 1
    out = capsys.readouterr().out
    assert f"{key}: differs (largest difference" in out
    assert "gru4rec-no-dup-sse/losses: new" in out
    assert "2 arrays differ" in out


def test_nan_equals_nan_and_the_item_feature_configs_are_covered(
    tmp_path, monkeypatch
):
    # A float attribute's "no value" is NaN: the same NaN is no difference.
    assert {"gru4rec-item-features-sum", "sasrec-item-features-concat"} <= set(
        bit_identity.CONFIGS
    )
    arrays = {"a/weight/000:values_price:0": np.array([np.nan, 1.0])}
    path = str(tmp_path / "before.npz")
    np.savez(path, **arrays)
    monkeypatch.setattr(bit_identity, "collect", lambda names=None: arrays)
    assert bit_identity.compare(path) == []
    arrays = {"a/weight/000:values_price:0": np.array([np.nan, 2.0])}
    assert bit_identity.compare(path) == [
        "a/weight/000:values_price:0: differs (largest difference 1)"
    ]
