"""lahar: Ray jobs on Kubernetes with batch-scheduling guarantees.

A KubeRay-compatible operator and a Volcano-compatible gang scheduler, with an
embedded one-machine Kubernetes-compatible cluster (``lahar up``).
"""

__version__ = "0.1.0"
