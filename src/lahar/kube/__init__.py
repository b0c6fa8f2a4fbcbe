"""The client seam: the one place that builds Kubernetes clients, plus the controller runtime.

Modules, one concept each: ``client`` (building clients), ``resource`` (naming a
kind), ``rest`` (raw dict requests), ``cache`` and ``informer`` (list-watch into an
indexed cache), ``factory`` (one shared informer per kind), ``workqueue`` and
``ratelimit`` (the queue between events and workers), ``reconcile`` and ``controller``
(the reconciler contract and its runner), ``leaderelection`` (Lease-based election),
``events`` (Event recorder), ``metrics`` and ``health`` (Prometheus names and the
probe endpoint) and ``manager`` (all of them together in one daemon).
"""
