"""A run on YARN from the client: launch, watch, steer, collect.

``launch``: ``Run``, ``submit``, ``run_on_yarn``, ``attach``; ``skein_app``: the
skein application spec of a run; ``polling``: reading the run's status from YARN and
the tasks' events; ``result``: ``RunResult`` and the event log; ``logs``: the tasks'
logs; ``mlflow_tracking``: logging a run to MLflow.
"""
