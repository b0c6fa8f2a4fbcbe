"""Pod addresses handed out from many threads at once (pods attach in worker threads)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from lahar.node.local.ipam import AddressPool


def test_concurrent_allocations_never_share_an_address(tmp_path: Path) -> None:
    pool = AddressPool("10.200.0.0/24", tmp_path / "addresses.json")
    uids = [f"pod-{i}" for i in range(60)]
    got: dict[str, str] = {}
    barrier = threading.Barrier(len(uids))

    def attach(uid: str) -> None:
        barrier.wait()
        got[uid] = pool.allocate(uid)

    threads = [threading.Thread(target=attach, args=(u,)) for u in uids]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got.values())) == len(uids)
    assert "10.200.0.1" not in got.values()  # the gateway
    saved = json.loads((tmp_path / "addresses.json").read_text())["allocations"]
    assert saved == got
    assert [p.name for p in tmp_path.iterdir()] == ["addresses.json"]  # no stray tmp files
    assert AddressPool("10.200.0.0/24", tmp_path / "addresses.json").allocations == got
