"""Applications built on the building blocks: runs, ablation, headroom.

``tfrec_tricks.training.training`` (``train``, ``load_model``) trains and
evaluates one run into a run directory (``run_directory``);
``ablation`` trains the paper's variants; ``repeat_headroom`` measures
what a repeat / explore switch could add to a model's ranking. The
``tfrec-tricks`` command line drives them.
"""
