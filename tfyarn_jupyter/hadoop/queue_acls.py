"""May this user submit to this queue? YARN's answer, worked out from the scheduler's report.

Pure: the input is the ResourceManager's ``/ws/v1/cluster/scheduler`` JSON
(the CapacityScheduler reports each queue's ``queueAcls``), a user name and
the groups known for it. YARN lets a user submit to a leaf queue when the
``acl_submit_applications`` or the ``acl_administer_queue`` of that queue or
of ANY ancestor names the user, one of their groups, or ``*``. A refusal is
only certain when no ACL on the way names a group the client cannot check:
otherwise :func:`decide` answers "unknown" and YARN decides at submission.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

#: The scheduler report's names of the two ACLs that allow a submission.
SUBMIT_KINDS = ("SUBMIT_APP", "ADMINISTER_QUEUE")


def _names(text: str) -> frozenset[str]:
    return frozenset(x.strip() for x in text.split(",") if x.strip())


@dataclasses.dataclass(frozen=True)
class Acl:
    """Hadoop's ``AccessControlList`` text: ``*``, or ``users groups`` (comma-separated)."""

    everyone: bool
    users: frozenset[str]
    groups: frozenset[str]

    @classmethod
    def parse(cls, text: str) -> Acl:
        parts = text.split(" ", 1)  # as Hadoop splits it: a leading space means no users
        if any(p.strip() == "*" for p in parts):
            return cls(True, frozenset(), frozenset())
        users, groups = (*parts, "")[:2]
        return cls(False, _names(users), _names(groups))

    def names(self, user: str, groups: Iterable[str]) -> bool:
        return self.everyone or user in self.users or bool(self.groups & set(groups))

    def __str__(self) -> str:
        if self.everyone:
            return "*"
        users, groups = ",".join(sorted(self.users)), ",".join(sorted(self.groups))
        return f"{users} {groups}".strip() or "nobody"


@dataclasses.dataclass(frozen=True)
class Decision:
    """``allowed``: True, False, or None (cannot tell); ``path``: the queues from root down."""

    allowed: bool | None
    path: tuple[str, ...]
    acls: Mapping[str, Mapping[str, Acl]]  # queue path -> kind -> ACL

    def explain(self, user: str, queue: str) -> str:
        parts = [
            f"{q}: submit={self.acls[q].get('SUBMIT_APP', 'unset')}, "
            f"administer={self.acls[q].get('ADMINISTER_QUEUE', 'unset')}"
            for q in self.path
        ]
        return f"user {user} may not submit to queue {queue!r} ({'; '.join(parts)})"


def _children(q: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    kids = (q.get("queues") or {}).get("queue") or []
    return kids if isinstance(kids, list) else [kids]


def _path_to(q: Mapping[str, Any], queue: str, trail: tuple) -> tuple | None:
    trail = (*trail, q)
    name, path = q.get("queueName", ""), q.get("queuePath", "")
    if queue in (name, path) or (not _children(q) and path == f"root.{queue}"):
        return trail
    for kid in _children(q):
        found = _path_to(kid, queue, trail)
        if found:
            return found
    return None


def queue_acls(q: Mapping[str, Any]) -> dict[str, Acl]:
    """``{kind: Acl}`` of one queue of the scheduler report (empty if it reports none)."""
    entries = (q.get("queueAcls") or {}).get("queueAcl") or []
    entries = entries if isinstance(entries, list) else [entries]
    return {
        e["accessType"]: Acl.parse(e.get("accessControlList", ""))
        for e in entries
        if isinstance(e, dict) and e.get("accessType") in SUBMIT_KINDS
    }


def decide(scheduler: Mapping[str, Any], queue: str, user: str, groups: Iterable[str]) -> Decision:
    """Whether ``user`` may submit to ``queue`` according to the scheduler report."""
    root = (scheduler.get("scheduler") or {}).get("schedulerInfo") or {}
    trail = _path_to(root, queue, ()) if root.get("queueName") else None
    if not trail:
        return Decision(None, (), {})  # another scheduler, or a queue check_queue refuses
    groups = set(groups)
    path = tuple(q.get("queuePath") or q.get("queueName", "") for q in trail)
    acls = {p: queue_acls(q) for p, q in zip(path, trail, strict=True)}
    if any(len(a) < len(SUBMIT_KINDS) for a in acls.values()):
        return Decision(None, path, acls)  # a scheduler that does not report its ACLs
    every = [acl for per in acls.values() for acl in per.values()]
    if any(acl.names(user, groups) for acl in every):
        return Decision(True, path, acls)
    uncertain = any(acl.groups for acl in every)  # the cluster may know groups we do not
    return Decision(None if uncertain else False, path, acls)


def allowed_queues(scheduler: Mapping[str, Any], user: str, groups: Iterable[str]) -> list[str]:
    """The leaf queues ``user`` may submit to (for the refusal's "use one of these")."""
    root = (scheduler.get("scheduler") or {}).get("schedulerInfo") or {}
    out: list[str] = []

    def walk(q: Mapping[str, Any]) -> None:
        kids = _children(q)
        if not kids:
            name = q.get("queueName", "")
            if decide(scheduler, name, user, groups).allowed:
                out.append(name)
        for kid in kids:
            walk(kid)

    if root.get("queueName"):
        walk(root)
    return out
