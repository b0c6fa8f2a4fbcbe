"""The client seam: the one place that builds Kubernetes clients, plus the controller runtime.

Modules, one concept each: ``client`` (building clients), ``resource`` (naming a
kind), ``rest`` (raw dict requests), ``cache`` and ``informer`` (list-watch into an
indexed cache), ``factory`` (one shared informer per kind), ``workqueue`` and
``ratelimit`` (the queue between events and workers), ``reconcile`` and ``controller``
(the reconciler contract and its runner), ``leaderelection`` (Lease-based election),
``events`` (Event recorder), ``metrics`` and ``health`` (Prometheus names and the
probe endpoint) and ``manager`` (all of them together in one daemon).

A daemon, in short::

    client = kclient.from_kubeconfig(path)
    mgr = Manager(client, name="lahar-operator",
                  leader_election=LeaderElectionConfig("lahar-operator"))
    pods = mgr.cache(Pod)                       # shared, indexed, read-only dicts
    recorder = mgr.recorder("lahar-operator")

    async def reconcile(req: Request) -> Result:
        cluster = mgr.cache(RAYCLUSTERS).get(req.name, req.namespace)
        ...                                     # write through `client`
        return Result(requeue_after=30)

    mgr.controller("raycluster", reconcile, max_concurrent_reconciles=4) \\
        .for_(RAYCLUSTERS).owns(Pod).owns(Service)
    await mgr.run()
"""
