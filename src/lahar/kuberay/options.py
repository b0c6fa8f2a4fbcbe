"""Operator-wide switches KubeRay reads from its environment, as one value object.

KubeRay changes what it builds with a handful of operator env vars
(``CLUSTER_DOMAIN``, ``ENABLE_LOGIN_SHELL``, ``ENABLE_INIT_CONTAINER_INJECTION``,
``ENABLE_PROBES_INJECTION``, ``ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE``,
``ENABLE_DETERMINISTIC_HEAD_POD_NAME``). The pure builders take them as an
:class:`OperatorOptions` argument instead of reading the environment, so tests and
``lahar render`` stay deterministic; the operator daemon builds one with
:meth:`OperatorOptions.from_env`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from lahar.kuberay import constants as c


def _true(value: str | None) -> bool:
    return (value or "").lower() == "true"


def _not_false(value: str | None) -> bool:
    return (value or "").lower() != "false"


@dataclass(frozen=True)
class OperatorOptions:
    cluster_domain: str = c.CLUSTER_DOMAIN
    login_shell: bool = False
    init_container_injection: bool = True
    probes_injection: bool = True
    head_cluster_ip_service: bool = False
    deterministic_head_pod_name: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> OperatorOptions:
        return cls(
            cluster_domain=env.get("CLUSTER_DOMAIN") or c.CLUSTER_DOMAIN,
            login_shell=_true(env.get("ENABLE_LOGIN_SHELL")),
            init_container_injection=_not_false(env.get("ENABLE_INIT_CONTAINER_INJECTION")),
            probes_injection=_not_false(env.get("ENABLE_PROBES_INJECTION")),
            head_cluster_ip_service=_true(env.get("ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE")),
            deterministic_head_pod_name=_true(env.get("ENABLE_DETERMINISTIC_HEAD_POD_NAME")),
        )

    def shell(self) -> list[str]:
        """Command of generated containers: ``/bin/bash -c --`` (``-cl`` as login shell)."""
        return ["/bin/bash", "-cl" if self.login_shell else "-c", "--"]

    def submitter_shell(self) -> list[str]:
        return ["/bin/bash", "-cel" if self.login_shell else "-ce", "--"]


DEFAULT_OPTIONS = OperatorOptions()
