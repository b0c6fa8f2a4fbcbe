"""``lahar scheduler``: the running, Volcano-compatible batch scheduler.

The pure session core (``lahar.scheduler`` snapshot/run/explain) decides; this package
is the thin shell that feeds it live objects and carries its decisions out. One
concept per module:

* ``options``: :class:`SchedulerOptions`, the knobs (Volcano's flag defaults).
* ``cache``: informer caches plus the assumed-bind and evicting overlays; one
  consistent snapshot per session.
* ``config``: the scheduler configuration file, re-read when it changes (a bad new
  version is logged and the old one kept).
* ``loop``: the cycle (snapshot -> session -> dispatch -> status -> metrics), one
  period after the previous cycle began, or at once if that one overran.
* ``binder`` / ``evictor``: asynchronous ``pods/binding`` and ``pods/eviction`` calls
  from bounded pools, with their events.
* ``podgroups`` / ``queues`` (and ``writes``): PodGroup and Queue status, written only
  when changed, and the PodGroup/pod scheduling events.
* ``metrics``: Volcano's ``volcano_*`` Prometheus families.
* ``service``: the daemon (manager, leader election, probes) and :func:`run_scheduler`.

What survives a crash (kill -9) or a change of leader, precisely:

* **No pod is bound twice.** A bind is sent only for a pod the snapshot shows pending
  and not assumed; a restarted scheduler lists everything before its first session,
  so binds that landed are seen as bound. A bind that landed but whose answer was lost
  (or that raced a predecessor) gets 409 from the server; the binder reads the pod,
  finds it bound, and counts it as done (no second bind, no event, no retry).
* **Gangs: no worse than Volcano, which has no gang rollback.** All binds of a job in
  a session are queued together, but they are separate API calls: a crash in the
  middle can leave k of a gang's n binds done. The bound members stay bound and count
  toward minMember (they are Bound in the next snapshot); the others are pending and
  the next sessions place them like the rest of any partly running gang, in the room
  the crashed session had found for them unless other work took it meanwhile. Nothing
  is undone and nothing is bound beyond what one session decided.
* **Leader change.** A leader that loses its Lease stops dispatching at
  ``renew_deadline`` (in-flight binds get 2 s) before anyone may take over at
  ``lease_duration``; a clean stop finishes in-flight binds, then releases the Lease.
  A new leader waits one schedule period before its first session, so its (already
  warm) informers have seen its predecessor's last binds; any it has not seen end in
  409 as above. The Lease is ``kube-system/volcano`` (Volcano's lock name, the
  scheduler's component name; Volcano keeps it in ``volcano-system``).

Entry point for an embedding process::

    await run_scheduler(client, informers=factory, options=SchedulerOptions())
"""

from lahar.scheduler.daemon.options import SchedulerOptions
from lahar.scheduler.daemon.service import SchedulerDaemon, run_scheduler

__all__ = ["SchedulerDaemon", "SchedulerOptions", "run_scheduler"]
