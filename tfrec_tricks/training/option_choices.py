"""The choices of the options that name TensorFlow or Beam machinery.

Here, not beside the code that uses them (``training.distribution``,
``training.optimizers``, ``training.prepare_dataset``), because those
modules import TensorFlow and the command line must not: it lists these
choices in its flags, and refuses others, before TensorFlow loads.
"""

#: ``--distribute`` modes (``training.distribution.make_strategy``).
DISTRIBUTE_MODES = ("auto", "off", "mirrored")
#: ``--optimizer`` name -> ``tf.keras.optimizers`` class name.
OPTIMIZERS = {"adam": "Adam", "adagrad": "Adagrad"}
#: ``--lr-schedule`` names: the rate held, or decayed to 0 along a cosine.
LR_SCHEDULES = ("constant", "cosine")
#: ``prepare --engine`` names (``training.prepare_dataset``).
ENGINES = ("local", "beam")
