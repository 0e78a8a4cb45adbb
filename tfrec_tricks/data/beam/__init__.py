"""Preparing a dataset with Apache Beam (``prepare --engine beam``).

``prepare_with_beam.prepare_with_beam`` writes the same prepared folder
(``data.prepared``) as the local engine, from files too large for one
process; the other modules are its steps and what they share:

- ``config``: the checked options of a Beam preparation;
- ``rows``: the row tuples the pipeline passes around, and their columns;
- ``inputs``: the input files matched and read into rows;
- ``duplicates``: exact duplicate rows counted and, if asked, dropped;
- ``k_core``: the k-core filter, unrolled into the pipeline;
- ``ranking``: users and items ranked, each user's rows sorted and
  encoded;
- ``tokens``: the token columns' vocabularies and ids;
- ``summary``: the training statistics and split counts, merged across
  workers, and the driver's checks of them;
- ``trained_items``: the trained items, for the item features;
- ``outputs``: what the workers write and how the driver reads it back;
- ``runner``: running a pipeline, a worker's ``DataError`` or an
  interruption brought back as itself (``recommend --engine beam`` runs
  its pipeline through it too);
- ``temporary_files``: the temporary folders a Beam run leaves, removed
  after it.

Grouped because they are the one preparation engine that needs
``apache_beam`` (an optional extra): no other module of ``data`` imports
it, and this package imports the local engine's rules
(``data.user_sequences``, ``data.interaction_tokens``, ``data.prepared``)
rather than restating them; nothing in ``data`` imports this package.
"""
