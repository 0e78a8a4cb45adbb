"""Benchmark scripts: ``python -m benchmarks.<name> ...`` from the repo root.

Each module is a script with a ``main(argv)``; what several of them share
(options, the command a report quotes, report files) is in
``benchmarks.common``. Not part of the installed ``tfrec_tricks`` wheel.
"""
