"""An informer handler that records every event and checks the sequence per object."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from lahar.kube.informer import Informer


class EventLog:
    """Records (type, key, uid, resourceVersion) for every handler call of an informer."""

    def __init__(self, informer: Informer) -> None:
        self.events: list[tuple[str, str, str, str]] = []
        informer.add_handler(
            on_add=lambda o: self._rec("ADD", o),
            on_update=lambda _old, new: self._rec("UPDATE", new),
            on_delete=lambda o: self._rec("DELETE", o),
        )

    def _rec(self, kind: str, obj: dict[str, Any]) -> None:
        md = obj["metadata"]
        key = f"{md.get('namespace', '')}/{md['name']}"
        self.events.append((kind, key, md["uid"], md.get("resourceVersion", "")))

    def of(self, kind: str) -> list[str]:
        return [key for k, key, _, _ in self.events if k == kind]

    def live(self) -> set[str]:
        """The keys the events say exist now."""
        alive: set[str] = set()
        for kind, key, _, _ in self.events:
            if kind == "DELETE":
                alive.discard(key)
            else:
                alive.add(key)
        return alive

    def check(self) -> None:
        """Per object (uid): one ADD first, then UPDATEs, then at most one DELETE, last;
        no UPDATE repeats a resourceVersion already reported."""
        by_uid: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for kind, _, uid, rv in self.events:
            by_uid[uid].append((kind, rv))
        for uid, seq in by_uid.items():
            kinds = [k for k, _ in seq]
            assert kinds[0] == "ADD", f"{uid}: first event is {kinds[0]}: {seq}"
            assert kinds.count("ADD") == 1, f"{uid}: added twice: {seq}"
            assert kinds.count("DELETE") <= 1, f"{uid}: deleted twice: {seq}"
            if "DELETE" in kinds:
                assert kinds[-1] == "DELETE", f"{uid}: event after delete: {seq}"
            rvs = [rv for k, rv in seq if k != "DELETE"]
            assert len(rvs) == len(set(rvs)), f"{uid}: a version reported twice: {seq}"
