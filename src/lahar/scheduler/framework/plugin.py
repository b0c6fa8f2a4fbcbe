"""The plugin interface and plugin arguments.

A plugin is built once per session from its configuration entry (``PluginOption``) and
registers callbacks on the session in :meth:`Plugin.on_session_open`, e.g.::

    class Binpack(Plugin):
        name = "binpack"

        def on_session_open(self, ssn: Session) -> None:
            ssn.node_order.add(self, self.score)   # BatchNodeOrderFn

        def score(self, task, nodes, candidates) -> np.ndarray: ...

Each ``ssn.<family>.add(plugin, fn)`` honours the plugin's ``enableXxx`` flag for that
family (see ``framework/registries.py``) and remembers the plugin's tier. Plugin classes
are made known with ``lahar.scheduler.plugins.registry.register_plugin``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from lahar.scheduler.framework.conf import PluginOption

if TYPE_CHECKING:
    from lahar.scheduler.framework.session import Session


class Arguments:
    """Volcano's plugin ``arguments`` map with its lenient typed getters (a value that does
    not parse leaves the default, as Volcano's ``GetInt``/``GetFloat64``/``GetBool`` do)."""

    def __init__(self, raw: dict[str, Any] | None) -> None:
        self.raw: dict[str, Any] = dict(raw or {})

    def get_int(self, key: str, default: int) -> int:
        value = self.raw.get(key)
        if isinstance(value, bool) or value is None:
            return default
        try:
            return int(str(value).strip())
        except ValueError:
            return default

    def get_float(self, key: str, default: float) -> float:
        value = self.raw.get(key)
        if isinstance(value, bool) or value is None:
            return default
        try:
            return float(str(value).strip())
        except ValueError:
            return default

    def get_bool(self, key: str, default: bool) -> bool:
        value = self.raw.get(key)
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        return default

    def get_str(self, key: str, default: str = "") -> str:
        value = self.raw.get(key)
        return default if value is None else str(value)


class Plugin:
    """Base class: subclasses set ``name`` and override the session hooks."""

    name: ClassVar[str] = ""

    def __init__(self, option: PluginOption, tier: int = 0) -> None:
        self.option = option
        self.tier = tier
        self.arguments = Arguments(option.arguments)

    def enabled(self, flag: str | None) -> bool:
        return True if flag is None else self.option.enabled(flag)

    def on_session_open(self, ssn: Session) -> None:
        """Register callbacks and build per-session state."""

    def on_session_close(self, ssn: Session) -> None:
        """Write back per-session results (conditions, queue figures)."""
