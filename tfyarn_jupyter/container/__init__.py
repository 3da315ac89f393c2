"""What runs inside YARN's containers (``python -m tfyarn_jupyter.container``).

It imports only :mod:`tfyarn_jupyter.protocol` of the client, and the Hadoop
configuration reader it needs for HDFS (a checked contract in ``pyproject.toml``).
``task``: one task and its peers; ``roles``: which role a task runs;
``train_estimator``, ``train_keras``, ``train_function``, ``tensorboard``: the
roles; ``progress``: progress reports; ``sampling``: memory, CPU and GPU figures;
``checkpoints``: the model dir synced to HDFS; ``hygiene``: the node's temporary
files; ``log``: the one logger; ``sh/``: the service and assembly scripts.
"""
