"""A process that campaigns for a Lease and logs when it leads (for test_failover.py).

Usage: python -m tests.kube.elector_main KUBECONFIG LOGFILE IDENTITY
Writes ``<event> <wall time>`` lines: ``acquired``, ``act`` (every 50 ms while
leading), ``stopped``, ``lost``, ``exit``. SIGTERM is a clean shutdown (the Lease is
released).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time

from lahar.kube import client as kclient
from lahar.kube.leaderelection import LeaderElectionConfig, LeaderElector, LeadershipLost

TIMING = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.25}


async def main(kubeconfig: str, logfile: str, identity: str) -> None:
    out = open(logfile, "a", buffering=1)  # noqa: SIM115 - line-buffered, lives as long as we do

    def log(event: str) -> None:
        out.write(f"{event} {time.time():.6f}\n")

    async def lead() -> None:
        log("acquired")
        while True:
            log("act")
            await asyncio.sleep(0.05)

    client = kclient.from_kubeconfig(kubeconfig)
    cfg = LeaderElectionConfig(name="failover", namespace="default", identity=identity, **TIMING)
    elector = LeaderElector(
        client, cfg, on_started_leading=lead, on_stopped_leading=lambda: log("stopped")
    )
    task = asyncio.create_task(elector.run())
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    log("started")
    try:
        await task
    except asyncio.CancelledError:
        pass
    except LeadershipLost:
        log("lost")
    finally:
        await client.close()
        log("exit")
        out.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
