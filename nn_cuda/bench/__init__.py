"""Benchmarks: `python -m nn_cuda.bench gemm|train|...`. Each writes a table and, with --json, a record of
the numbers, the machine and the command, for the README and the report. Speed is only ever measured
here, as ratios against a baseline timed in the same run, never in tests."""
