"""The client's pure logic: no I/O, no cluster, tested fast.

``spec``: the run's request (``TaskSpec``, ``Experiment``, validation);
``options``: the launch options; ``program``: what kind of program an
``experiment_fn`` is and what it imports; ``state``: a run's status derived from
YARN's reports and the tasks' events; ``history``: the loss histories;
``memory``: the memory levels the panel and the warnings use.
"""
