"""What every way of shipping the notebook's environment gives a run: :class:`ShippedEnv`.

A run ships either one tar of the environment (:class:`.packing.EnvReport`) or
content-addressed layers (:class:`.layered_launch.LayersReport`). The launch does not
tell them apart: it asks either for its key, the files the containers' folders get,
and the shell text that assembles the environment before the service script runs.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import skein


@runtime_checkable
class ShippedEnv(Protocol):
    """An environment on its way to the containers (its key names it in the cache)."""

    key: str
    #: Seconds each phase of shipping took (packing, upload...).
    times: dict[str, float]

    @property
    def size(self) -> int:
        """Bytes of the environment as shipped (before any compression)."""
        ...

    def container_files(self) -> dict[str, skein.File]:
        """What YARN localises in each container's folder for this environment."""
        ...

    def assembly(self) -> str:
        """Shell text run before ``service.sh`` that puts ``./env`` together ("" if none)."""
        ...
