"""``tfrec_tricks.export.onnx_support``: what ``export --format onnx``
checks before TensorFlow loads (the ONNX packages, ``--scoring``)."""

import sys

import pytest

from tfrec_tricks import cli
from tfrec_tricks.export import onnx_support


@pytest.mark.parametrize("package", onnx_support.ONNX_PACKAGES)
def test_a_missing_package_names_the_extra(monkeypatch, package):
    # A None entry in sys.modules: find_spec finds nothing, and an import
    # raises ImportError, as for a package not installed.
    monkeypatch.setitem(sys.modules, package, None)
    assert onnx_support.missing_onnx_packages() == [package]
    with pytest.raises(ImportError) as error:
        onnx_support.require_onnx_packages()
    message = str(error.value)
    assert "pip install tfrec_tricks[onnx]" in message
    assert f"Received: {package} not installed" in message


def test_the_cli_refuses_onnx_without_the_extra_before_reading_the_run(
    monkeypatch, tmp_path, capsys
):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    argv = ["export", str(tmp_path / "no-run"), "--name", "m"]
    argv += ["--base-path", str(tmp_path / "served"), "--format", "onnx"]
    assert cli.main(argv) == 1
    error = capsys.readouterr().err
    assert error.startswith("tfrec-tricks export: error: --format onnx needs")
    assert "pip install tfrec_tricks[onnx]" in error
    assert "Traceback" not in error
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("scoring", ["auto", "full"])
def test_full_catalogue_scorings_are_taken(scoring):
    onnx_support.check_onnx_scoring(scoring)


def test_the_index_is_refused_naming_why():
    with pytest.raises(ValueError, match="Received: --scoring index"):
        onnx_support.check_onnx_scoring("index")
