"""The admission chain: mutating then validating plugins around every write.

Built-in checks (schemas, metadata, immutable fields) run before the chain.
Volcano's and KubeRay's admission rules plug in here in the embedded server; on a
real cluster the same rule functions are served as admission webhooks. A plugin
mutates ``request.object`` in place or raises an ``APIError`` to deny the write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from lahar.apiserver.resources import ResourceType


@dataclass
class AdmissionRequest:
    operation: str  # CREATE, UPDATE, DELETE, CONNECT
    resource: ResourceType
    namespace: str
    name: str
    object: dict[str, Any] | None
    old_object: dict[str, Any] | None = None
    subresource: str = ""
    dry_run: bool = False
    warnings: list[str] = field(default_factory=list)


class AdmissionPlugin(Protocol):
    name: str

    def mutate(self, request: AdmissionRequest) -> None: ...

    def validate(self, request: AdmissionRequest) -> None: ...


class AdmissionChain:
    def __init__(self, plugins: list[AdmissionPlugin] | None = None) -> None:
        self.plugins: list[AdmissionPlugin] = list(plugins or [])

    def add(self, plugin: AdmissionPlugin) -> None:
        self.plugins.append(plugin)

    def run(self, request: AdmissionRequest) -> list[str]:
        for plugin in self.plugins:
            plugin.mutate(request)
        for plugin in self.plugins:
            plugin.validate(request)
        return request.warnings
