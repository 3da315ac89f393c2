"""Shipping the notebook's environment to the containers.

``packing``: one tar of the environment; ``layers``: the content-addressed layers
planned from the installed distributions (``plan_memo`` keeps a venv's plan while its
files are unchanged); ``layered_launch``: uploading the missing
layers and writing the container's assembly; ``interpreter``: the Python shipped
for nodes without one. ``shipped``: what both ways have in common (:class:`ShippedEnv`).
"""
