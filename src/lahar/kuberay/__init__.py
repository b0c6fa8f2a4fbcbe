"""The KubeRay-compatible Ray operator.

This package holds the operator's pure core: builders that turn a RayCluster or a
RayJob into the Pods, Services, RBAC objects, submitter Job and Volcano PodGroup
KubeRay would create (``pods``, ``services``, ``rbac``, ``submitter``, ``rayjob``,
``volcano``), the admission rules (``validation``, ``jobvalidation``,
``admission``) and the ``render`` pipeline behind ``lahar render``. Nothing here
does I/O; the reconcilers (:mod:`lahar.kuberay.operator`) call these functions and
write the results through the client seam. The behaviour follows
``/work/shared/design/kuberay-semantics.md``; ``docs/kuberay-compat.md`` lists where
lahar matches a KubeRay quirk and where it fixes one on purpose.
"""
