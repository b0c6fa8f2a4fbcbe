"""Plugin factory: the names a configuration may use and the classes behind them.

Built-in plugins live in modules of this package named after the plugin and register
themselves on import with :func:`register_plugin`. :func:`plugin_class` imports the module
on first use, so a configuration only pays for the plugins it names.

Names Volcano has but lahar does not implement are accepted (``UNIMPLEMENTED``) and do
nothing, so real configuration files load; any other name is an error.
"""

from __future__ import annotations

import importlib

from lahar.scheduler.framework.plugin import Plugin

_CLASSES: dict[str, type[Plugin]] = {}

BUILTIN: dict[str, str] = {
    name: f"lahar.scheduler.plugins.{name}"
    for name in (
        "gang",
        "priority",
        "conformance",
        "drf",
        "proportion",
        "capacity",
        "overcommit",
        "predicates",
        "nodeorder",
        "binpack",
        "sla",
    )
}

UNIMPLEMENTED: frozenset[str] = frozenset(
    {
        "tdm",
        "numaaware",
        "task-topology",
        "deviceshare",
        "extender",
        "nodegroup",
        "pdb",
        "rescheduling",
        "resourcequota",
        "usage",
        "cdp",
        "network-topology-aware",
        "resource-strategy-fit",
    }
)


def register_plugin(cls: type[Plugin]) -> type[Plugin]:
    """Make a plugin class available under ``cls.name`` (usable as a decorator)."""
    if not cls.name:
        raise ValueError(f"plugin class {cls.__qualname__} has no name")
    _CLASSES[cls.name] = cls
    return cls


def known_plugin(name: str) -> bool:
    return name in _CLASSES or name in BUILTIN or name in UNIMPLEMENTED


def plugin_class(name: str) -> type[Plugin] | None:
    """The class for ``name``; ``None`` for a known name without an implementation here
    (an unimplemented Volcano plugin, or a built-in module not present in this build)."""
    if name in _CLASSES:
        return _CLASSES[name]
    module = BUILTIN.get(name)
    if module is None:
        if name in UNIMPLEMENTED:
            return None
        raise KeyError(name)
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise
    return _CLASSES.get(name)
