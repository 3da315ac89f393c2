"""What the container side shares with the client, and nothing else.

``contract``: what a task is told (its environment variables, the run's topology,
strategy and options), written by the client and read back in the container.
``events``: what a task reports (one key per event in skein's key-value store) and
how the client reads them. ``causes``: why a task's container ended, in the words a
restart record carries and as both sides read YARN's. All are pure and import nothing
else of the package.
"""
