"""Benchmarks on the sandbox: ``python -m benchmarks [--reps N] [--smoke] [--out DIR]``.

Run from the repository root (this package is not installed with
tfyarn_jupyter), with the client environment of a running cluster
(``eval "$(tfyarn-sandbox env)"``). Writes ``bench.md`` (a markdown table)
and ``bench.json`` (every value) to ``--out``.

Each comparison is measured in the same run, its variants interleaved
(A B A B ...), and reported as the median of N with min and max:

1. floor: a bare skein application, one service per task of the topology,
   each running ``<venv python> -c 'import tensorflow'``;
2. tfyarn warm launch (environment archive already on HDFS);
3. tfyarn cold launch (archive absent, phases timed), and the pack phase
   against plain ``tar -cf`` and venv-pack's defaults;
4. tf-yarn 0.7.0 from PyPI on the same experiment (full mode only);
5. watching cost: calls and milliseconds per poll for 1, 2, 8, 32 and 48 tasks;
6. training overhead: steps/s locally and as the chief of a run;

plus a bare skein application's submit -> RUNNING / FINISHED latency, the
latency from a container kill to ``StatusSource.poll`` showing it, and (full
mode only) a fresh sandbox's start time with the jars cached.

Modules: ``cli`` (the command, the outputs), ``core`` (configuration and the
:class:`~benchmarks.core.Bench` every section writes to), ``stats`` (pure:
statistics, interleaving, the table), ``steps`` (the experiment and its
step-timing hook, shipped to the containers by value), one module per
section (``launches``, ``packing``, ``watching``, ``bare``, ``tfyarn070``)
and ``tfyarn070_driver``, which tf-yarn 0.7.0's own venv runs. Importing
this package imports nothing: that venv imports it too.
"""
