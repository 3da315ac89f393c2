"""The ``%%tfyarn`` cell magic and the ``%tfyarn`` line magic.

``extension``: the magics and ``load_ipython_extension``; ``arguments``: parsing a
magic's line; ``cell``: the function a cell defines.
"""
