"""The Keras-version rule: TFRS parts need tf-keras and say how to get it."""

import subprocess
import sys

import pytest


def _python(code: str, **env):
    import os

    environment = {
        k: v for k, v in os.environ.items() if k != "TF_USE_LEGACY_KERAS"
    }
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=environment,
    )


@pytest.mark.slow
def test_models_after_keras3_import_run_under_keras3():
    # tf.keras already Keras 3: the models take it (retrieval_base), as
    # TensorFlow chose, and so do the command line, training runs, export
    # and the Recommender; a part that needs tf-keras says how to get it.
    result = _python(
        "import tensorflow as tf\n"
        "tf.keras.layers.Dense  # resolves tf.keras to Keras 3\n"
        "import tfrec_tricks.models as models\n"
        "print(models.SequentialRetrievalModel.__mro__[2].__name__)\n"
        "import tfrec_tricks.cli\n"
        "from tfrec_tricks.training.run_training import train\n"
        "from tfrec_tricks.export import export_for_serving\n"
        "from tfrec_tricks import Recommender\n"
        "print(tf.keras.layers.Layer.__module__.split('.')[0], flush=True)\n"
        "from tfrec_tricks.keras_version import require_legacy_keras\n"
        "require_legacy_keras('a tf-keras part')\n"
    )
    assert result.stdout.split() == ["Keras3RetrievalModel", "keras"], (
        result.stderr[-3000:]
    )
    assert result.returncode != 0
    assert "KerasVersionError" in result.stderr
    assert "a tf-keras part" in result.stderr
    assert "TF_USE_LEGACY_KERAS=1" in result.stderr
    assert "before `import tensorflow`" in result.stderr


def test_explicit_keras3_setting_is_taken_by_export():
    # On import, without importing TensorFlow (its names load lazily).
    result = _python(
        "import os, sys\n"
        "import tfrec_tricks.export\n"
        "print(os.environ['TF_USE_LEGACY_KERAS'], 'tensorflow' in sys.modules)",
        TF_USE_LEGACY_KERAS="0",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["0", "False"]


def test_explicit_keras3_setting_is_taken_by_models():
    result = _python(
        "import os, sys\n"
        "import tfrec_tricks.models\n"
        "print(os.environ['TF_USE_LEGACY_KERAS'], 'tensorflow' in sys.modules)",
        TF_USE_LEGACY_KERAS="0",
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # Left as set, and TensorFlow still not imported.
    assert result.stdout.split() == ["0", "False"]


@pytest.mark.slow
def test_models_refuse_another_keras3_backend():
    result = _python(
        "import tfrec_tricks.models as models\nmodels.SequentialRetrievalModel",
        TF_USE_LEGACY_KERAS="0",
        KERAS_BACKEND="numpy",
    )
    assert result.returncode != 0
    assert "the TensorFlow backend" in result.stderr
    assert "it is 'numpy'" in result.stderr


@pytest.mark.slow
def test_script_that_imports_keras_first_gets_keras3_models():
    # A plain Keras 3 script, no variable set: the models are Keras 3 and
    # take its optimizer; the choice is recorded for child processes.
    result = _python(
        "import keras\n"
        "import numpy as np, os, tensorflow as tf\n"
        "from tfrec_tricks.models import ModelConfig\n"
        "from tfrec_tricks.models import SequentialRetrievalModel\n"
        "model = SequentialRetrievalModel(ModelConfig(num_items=20, max_len=5,"
        " embedding_dim=8))\n"
        "model.compile(optimizer=keras.optimizers.Adam(0.01))\n"
        "rng = np.random.default_rng(0)\n"
        "data = tf.data.Dataset.from_tensor_slices({'history': rng.integers("
        "1, 20, size=(32, 5)), 'target': rng.integers(1, 20, size=32)})"
        ".batch(16)\n"
        "model.fit(data, epochs=1, verbose=0)\n"
        "print(type(model).__mro__[2].__name__, os.environ["
        "'TF_USE_LEGACY_KERAS'], tf.keras.layers.Layer.__module__"
        ".split('.')[0])\n"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["Keras3RetrievalModel", "0", "keras"]


@pytest.mark.slow
def test_tensorflow_imported_first_keeps_tf_keras_default():
    # `import keras` after TensorFlow cannot be told from TensorFlow's own
    # import of it: the default stands (docs/keras-versions.md).
    result = _python(
        "import tensorflow as tf\n"
        "import keras\n"
        "import tfrec_tricks.models as models\n"
        "print(models.SequentialRetrievalModel.__mro__[2].__name__)\n"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["Model"]


@pytest.mark.parametrize(
    ("order", "version", "expected"),
    [
        (["numpy", "tensorflow", "keras"], "3.15.0", True),
        (["numpy", "keras", "tensorflow"], "3.15.0", False),
        (["keras", "numpy"], "3.15.0", False),  # no TensorFlow
        (["numpy", "tensorflow"], None, False),  # no Keras
        (["tensorflow", "keras"], "2.15.0", False),  # not Keras 3
    ],
)
def test_keras3_imported_before_tensorflow_reads_finishing_order(
    order, version, expected
):
    # sys.modules lists a module when its import finishes: a script's
    # `import keras` finishes after the TensorFlow it imports.
    import types

    from tfrec_tricks import keras_version

    modules = {}
    for name in order:
        module = types.ModuleType(name)
        if name == "keras" and version:
            module.__version__ = version
        modules[name] = module
    assert (
        keras_version._keras_3_imported_before_tensorflow(modules) is expected
    )


@pytest.mark.slow
def test_models_import_alone_selects_tf_keras():
    result = _python(
        "import tfrec_tricks.models\n"
        "import tensorflow as tf\n"
        "print(tf.keras.__name__)\n"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().startswith("tf_keras")


@pytest.mark.slow
def test_cli_module_selects_tf_keras_before_tensorflow():
    result = _python(
        "import tfrec_tricks.cli\n"
        "import tensorflow as tf\n"
        "print(tf.keras.__name__)\n"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().startswith("tf_keras")


def test_lazy_names_are_imported_once_on_first_access():
    # The models' and the exports' packages share this: a name is its
    # module's on first access, kept in the package; an unknown one is an
    # AttributeError naming it; dir() lists the public names before any
    # is imported.
    import types

    from tfrec_tricks import keras_version

    package = types.ModuleType("fake_package")
    sys.modules["fake_package"] = package
    try:
        getter, lister = keras_version.lazy_legacy_keras_names(
            "fake_package", {"dumps": "json_part"}
        )
        part = types.ModuleType("fake_package.json_part")
        part.dumps = lambda value: f"<{value}>"
        sys.modules["fake_package.json_part"] = part
        assert "dumps" in lister()
        assert getter("dumps")(1) == "<1>"
        assert package.__dict__["dumps"] is part.dumps
        with pytest.raises(AttributeError, match="'fake_package' has no "
                           "attribute 'loads'"):  # fmt: skip
            getter("loads")
    finally:
        sys.modules.pop("fake_package", None)
        sys.modules.pop("fake_package.json_part", None)
