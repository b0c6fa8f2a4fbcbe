"""Pod IP addresses: a tiny allocator whose state survives the agent.

The first host address of the pod CIDR is the bridge's gateway; pods get the lowest
free address after it. The allocation (pod uid -> address) is kept in a JSON file in
the agent's state dir and rewritten atomically on every change, so an agent that
crashed and restarted knows which addresses it handed out and to whom, and can give
the same pod the same address or release the addresses of pods that are gone.
"""

from __future__ import annotations

import ipaddress
import json
import os
import threading
from pathlib import Path


class AddressPoolExhausted(RuntimeError):
    """Every address of the pod CIDR is taken."""


class AddressPool:
    """Allocation of addresses of one CIDR to pod uids, persisted in `path`."""

    def __init__(self, cidr: str, path: Path) -> None:
        self.network = ipaddress.IPv4Network(cidr, strict=True)
        if self.network.num_addresses < 4:
            raise ValueError(f"pod CIDR {cidr} is too small")
        self.gateway = self.network.network_address + 1
        self.path = path
        # Pods attach from worker threads at the same time: one change at a time.
        self._lock = threading.RLock()
        self._by_uid: dict[str, str] = {}
        self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return
        if data.get("cidr") == str(self.network):
            self._by_uid = {str(k): str(v) for k, v in data.get("allocations", {}).items()}

    def _save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"cidr": str(self.network), "allocations": self._by_uid}))
        os.replace(tmp, self.path)

    @property
    def allocations(self) -> dict[str, str]:
        """A copy of the pod uid -> address map."""
        return dict(self._by_uid)

    def get(self, uid: str) -> str | None:
        return self._by_uid.get(uid)

    def allocate(self, uid: str) -> str:
        """The pod's address: its existing one, or the lowest free one."""
        with self._lock:
            return self._allocate(uid)

    def _allocate(self, uid: str) -> str:
        if uid in self._by_uid:
            return self._by_uid[uid]
        taken = set(self._by_uid.values())
        for host in self.network.hosts():
            if host == self.gateway:
                continue
            if str(host) not in taken:
                self._by_uid[uid] = str(host)
                self._save()
                return str(host)
        raise AddressPoolExhausted(f"no free address left in {self.network}")

    def release(self, uid: str) -> None:
        with self._lock:
            if self._by_uid.pop(uid, None) is not None:
                self._save()

    def clear(self) -> None:
        """Forget every allocation and remove the state file."""
        with self._lock:
            self._by_uid.clear()
            self.path.unlink(missing_ok=True)
