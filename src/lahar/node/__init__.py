"""Node agents: what stands where a kubelet would.

A node agent registers Node objects, keeps them alive (a Lease per node in
``kube-node-lease`` and a periodic Ready heartbeat in the Node's status), runs the pods
bound to its nodes and reports their status, confirms graceful deletions and serves
their logs. Two agents share this package:

* ``sim`` (``lahar node sim``): simulated nodes, kwok-style. Nothing runs; pods go
  Running after a delay and finish after the duration their annotations ask for. It
  exists for scale and contention, and it is a tested component in its own right.
* ``local`` (``lahar node local``, to come): one node that runs pods as local processes.

The modules at this level are what both agents need, written once:

* ``registration``: the Node object (labels, capacity, conditions, addresses,
  nodeInfo), registering and removing it, its Lease;
* ``heartbeat``: lease renewals and Ready heartbeats for many nodes, spread over
  time and batched, so a thousand nodes cost little;
* ``podstatus``: the pod status a kubelet reports (Running/Ready, terminated,
  restarted) as merge patches;
* ``writer``: the queue of per-pod writes, coalesced per pod and sent with bounded
  concurrency;
* ``admission``: whether a pod fits in what its node has left (``OutOfcpu`` ...);
* ``logserver``: the loopback ``/containerLogs`` endpoint an agent in its own process
  advertises in ``status.daemonEndpoints.kubeletEndpoint.Port``.

Everything talks to the API through the client seam only, so an agent works the same
against the embedded server and a real cluster.
"""
