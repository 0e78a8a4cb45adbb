"""Applications built on the building blocks: training runs, ablations.

``tfrec_tricks.training.run_training.train`` trains and evaluates one run into
a run directory (``run_directory``), one phase per module: ``resumption``
(a new, interrupted or finished run), ``training_data``, ``fit``,
``evaluate`` and ``persistence`` (``load_model`` reads a run's model
back). ``ablation`` trains the paper's variants. The ``tfrec-tricks``
command line drives them.
"""
