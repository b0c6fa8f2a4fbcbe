"""Volcano's scheduler configuration file (``volcano-scheduler.conf``), read unchanged.

Format: ``actions`` (a comma-separated string, run in that order), ``tiers`` (a list of
``{plugins: [{name, enableXxx..., arguments}]}``) and ``configurations`` (per-action
``arguments``). As in Volcano's loader, every per-callback flag left unset is true,
except ``enableHierarchy`` and ``enabledClusterOrder``. Unknown action or plugin names,
and drf with hierarchy next to proportion in one tier, are rejected with
:class:`ConfigError`. Unknown keys are ignored, as Volcano's YAML decoding does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

# The per-callback flags, in Volcano's YAML spelling.
FLAGS: tuple[str, ...] = (
    "enableJobOrder",
    "enableHierarchy",
    "enableJobReady",
    "enableJobPipelined",
    "enableTaskOrder",
    "enablePreemptable",
    "enableReclaimable",
    "enablePreemptive",
    "enableQueueOrder",
    "enabledClusterOrder",
    "enablePredicate",
    "enableBestNode",
    "enableNodeOrder",
    "enableTargetJob",
    "enableReservedNodes",
    "enableJobEnqueued",
    "enabledVictim",
    "enableJobStarving",
    "enabledOverused",
    "enabledAllocatable",
    "enabledHyperNodeOrder",
    "enabledSubJobReady",
    "enabledSubJobPipelined",
    "enabledSubJobOrder",
    "enabledHyperNodeGradient",
)
DEFAULT_FALSE: frozenset[str] = frozenset({"enableHierarchy", "enabledClusterOrder"})

KNOWN_ACTIONS: tuple[str, ...] = (
    "enqueue",
    "allocate",
    "backfill",
    "preempt",
    "reclaim",
    "gangpreempt",
    "gangreclaim",
    "shuffle",
)

DEFAULT_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


class ConfigError(ValueError):
    """An invalid scheduler configuration; the message names the field."""


@dataclass
class PluginOption:
    name: str
    flags: dict[str, bool] = field(default_factory=dict)
    arguments: dict[str, Any] = field(default_factory=dict)

    def enabled(self, flag: str) -> bool:
        if flag in self.flags:
            return self.flags[flag]
        return flag not in DEFAULT_FALSE


@dataclass
class Tier:
    plugins: list[PluginOption]


@dataclass
class SchedulerConfiguration:
    actions: list[str]
    tiers: list[Tier]
    configurations: dict[str, dict[str, Any]] = field(default_factory=dict)

    def action_arguments(self, action: str) -> dict[str, Any]:
        return self.configurations.get(action, {})

    def plugin_names(self) -> list[str]:
        return [p.name for t in self.tiers for p in t.plugins]


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ConfigError(f"{where}: expected true or false, got {value!r}")


def _plugin(entry: Any, where: str) -> PluginOption:
    from lahar.scheduler.plugins.registry import known_plugin

    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise ConfigError(f"{where}: each plugin needs a 'name'")
    name = entry["name"].strip()
    if not known_plugin(name):
        raise ConfigError(f"{where}.name: unknown plugin {name!r}")
    flags = {k: _bool(entry[k], f"{where}.{k}") for k in FLAGS if entry.get(k) is not None}
    arguments = entry.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise ConfigError(f"{where}.arguments: expected a map")
    return PluginOption(name=name, flags=flags, arguments=dict(arguments))


def parse_conf(text: str, *, source: str = "scheduler configuration") -> SchedulerConfiguration:
    """Parse and validate a configuration document."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a map with 'actions' and 'tiers'")
    raw_actions = data.get("actions", "")
    if not isinstance(raw_actions, str):
        raise ConfigError(f"{source}: actions: expected a comma-separated string")
    actions = [a.strip() for a in raw_actions.split(",") if a.strip()]
    for action in actions:
        if action not in KNOWN_ACTIONS:
            raise ConfigError(f"{source}: actions: unknown action {action!r}")
    tiers: list[Tier] = []
    for t, tier in enumerate(data.get("tiers") or []):
        plugins = tier.get("plugins") if isinstance(tier, dict) else None
        if not isinstance(plugins, list):
            raise ConfigError(f"{source}: tiers[{t}].plugins: expected a list")
        options = [_plugin(p, f"{source}: tiers[{t}].plugins[{i}]") for i, p in enumerate(plugins)]
        names = {o.name for o in options}
        drf_h = any(o.name == "drf" and o.enabled("enableHierarchy") for o in options)
        if drf_h and "proportion" in names:
            raise ConfigError(
                f"{source}: tiers[{t}]: drf with enableHierarchy cannot share a tier "
                "with proportion"
            )
        tiers.append(Tier(options))
    configurations: dict[str, dict[str, Any]] = {}
    for i, conf in enumerate(data.get("configurations") or []):
        if not isinstance(conf, dict) or not isinstance(conf.get("name"), str):
            raise ConfigError(f"{source}: configurations[{i}]: needs a 'name'")
        args = conf.get("arguments") or {}
        if not isinstance(args, dict):
            raise ConfigError(f"{source}: configurations[{i}].arguments: expected a map")
        configurations[conf["name"].strip()] = dict(args)
    return SchedulerConfiguration(actions=actions, tiers=tiers, configurations=configurations)


def default_conf() -> SchedulerConfiguration:
    """Volcano's built-in default (``DefaultSchedulerConf``)."""
    return parse_conf(DEFAULT_CONF, source="built-in default configuration")


def load_conf(path: str) -> SchedulerConfiguration:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    return parse_conf(text, source=path)
