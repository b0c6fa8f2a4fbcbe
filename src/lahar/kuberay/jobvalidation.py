"""RayJob validation: KubeRay's ValidateRayJob* rules, with field paths.

Covers the name limit (47: the cluster name adds ``-xxxxx``), the
clusterSelector / rayClusterSpec choice, submission-mode constraints, TTL and
shutdown, suspend, backoff limits, deadlines, runtimeEnvYAML, metadata and Ray
version, both deletion-strategy forms, and the embedded RayCluster spec (through
:func:`lahar.kuberay.validation.validate_cluster_spec`).
"""

from __future__ import annotations

import itertools
from typing import Any

import yaml

from lahar.apiserver.errors import Cause
from lahar.kuberay import constants as c
from lahar.kuberay.containers import ray_version_at_least
from lahar.kuberay.meta import autoscaling_enabled
from lahar.kuberay.validation import (
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    validate_cluster_spec,
    validate_name,
)

_POLICIES = ("DeleteCluster", "DeleteWorkers", "DeleteSelf", "DeleteNone")
_ORDER = {"DeleteWorkers": 0, "DeleteCluster": 1, "DeleteSelf": 2}


def _mode_rules(spec: dict[str, Any], selector: bool) -> list[Cause]:
    out: list[Cause] = []
    mode = spec.get("submissionMode") or "K8sJobMode"
    if mode not in c.SUBMISSION_MODES:
        return [not_supported("spec.submissionMode", mode, c.SUBMISSION_MODES)]
    if mode == "SidecarMode":
        if selector:
            out.append(
                forbidden(
                    "spec.clusterSelector",
                    "clusterSelector cannot be used with submissionMode SidecarMode",
                )
            )
        for key in ("submitterPodTemplate", "submitterConfig"):
            if spec.get(key) is not None:
                out.append(
                    forbidden(
                        f"spec.{key}", f"{key} cannot be used with submissionMode SidecarMode"
                    )
                )
        head = ((spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}).get("template") or {}
        policy = (head.get("spec") or {}).get("restartPolicy")
        if policy not in (None, "", "Never"):
            out.append(
                invalid(
                    "spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy",
                    policy,
                    "SidecarMode needs the head restartPolicy Never (or unset)",
                )
            )
    backoff = spec.get("backoffLimit")
    if backoff is not None and backoff > 0 and mode == "InteractiveMode":
        out.append(
            forbidden(
                "spec.backoffLimit",
                "backoffLimit > 0 cannot be used with submissionMode InteractiveMode",
            )
        )
    return out


def _lifecycle_rules(spec: dict[str, Any], selector: bool) -> list[Cause]:
    out: list[Cause] = []
    shutdown = bool(spec.get("shutdownAfterJobFinishes"))
    ttl = spec.get("ttlSecondsAfterFinished") or 0
    if ttl < 0:
        out.append(
            invalid(
                "spec.ttlSecondsAfterFinished", ttl, "ttlSecondsAfterFinished must be non-negative"
            )
        )
    elif ttl > 0 and not shutdown and spec.get("deletionStrategy") is None:
        out.append(
            invalid(
                "spec.ttlSecondsAfterFinished",
                ttl,
                "ttlSecondsAfterFinished is only used with shutdownAfterJobFinishes: true",
            )
        )
    if spec.get("suspend"):
        if not shutdown:
            out.append(
                invalid(
                    "spec.suspend", True, "a suspended RayJob needs shutdownAfterJobFinishes: true"
                )
            )
        if selector:
            out.append(forbidden("spec.suspend", "suspend cannot be used with clusterSelector"))
    backoff = spec.get("backoffLimit")
    if backoff is not None:
        if backoff < 0:
            out.append(invalid("spec.backoffLimit", backoff, "backoffLimit must be non-negative"))
        elif backoff > 0 and selector:
            out.append(
                forbidden(
                    "spec.backoffLimit",
                    "backoffLimit > 0 cannot be used with clusterSelector (retries need a fresh cluster)",
                )
            )
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and deadline <= 0:
        out.append(
            invalid(
                "spec.activeDeadlineSeconds",
                deadline,
                "activeDeadlineSeconds must be a positive integer",
            )
        )
    pre = spec.get("preRunningDeadlineSeconds")
    if pre is not None and pre < 1:
        out.append(
            invalid(
                "spec.preRunningDeadlineSeconds",
                pre,
                "preRunningDeadlineSeconds must be at least 1",
            )
        )
    return out


def _content_rules(spec: dict[str, Any]) -> list[Cause]:
    out: list[Cause] = []
    text = spec.get("runtimeEnvYAML")
    if text:
        try:
            yaml.safe_load(text)
        except yaml.YAMLError as exc:
            out.append(
                invalid(
                    "spec.runtimeEnvYAML",
                    "...",
                    f"runtimeEnvYAML is not valid YAML: {str(exc).splitlines()[0]}",
                )
            )
    version = (spec.get("rayClusterSpec") or {}).get("rayVersion")
    if spec.get("metadata") and version and not ray_version_at_least(version, (2, 6, 0)):
        out.append(
            invalid(
                "spec.metadata",
                "...",
                f"spec.metadata (--metadata-json) needs rayVersion >= 2.6.0, got {version!r}",
            )
        )
    return out


def _legacy_strategy(strategy: dict[str, Any], spec: dict[str, Any], selector: bool) -> list[Cause]:
    out: list[Cause] = []
    for key in ("onSuccess", "onFailure"):
        policy = (strategy.get(key) or {}).get("policy")
        path = f"spec.deletionStrategy.{key}"
        if policy is None:
            out.append(
                required(
                    f"{path}.policy",
                    f"deletionStrategy.{key}.policy must be set with the legacy onSuccess/onFailure form",
                )
            )
            continue
        if spec.get("shutdownAfterJobFinishes") and policy == "DeleteNone":
            out.append(
                invalid(
                    f"{path}.policy",
                    policy,
                    "DeleteNone contradicts shutdownAfterJobFinishes: true",
                )
            )
        if selector and policy not in ("DeleteNone", "DeleteSelf"):
            out.append(
                forbidden(
                    f"{path}.policy",
                    f"{policy} cannot be used with clusterSelector (the cluster is not the RayJob's)",
                )
            )
    return out


def _rules_strategy(
    rules: list[dict[str, Any]], spec: dict[str, Any], selector: bool
) -> list[Cause]:
    out: list[Cause] = []
    if spec.get("shutdownAfterJobFinishes"):
        out.append(
            forbidden(
                "spec.deletionStrategy.deletionRules",
                "deletionRules cannot be combined with shutdownAfterJobFinishes",
            )
        )
    seen: set[tuple[str, str, str]] = set()
    ttls: dict[tuple[str, str], dict[str, tuple[int, int]]] = {}
    for i, rule in enumerate(rules):
        path = f"spec.deletionStrategy.deletionRules[{i}]"
        policy = rule.get("policy")
        cond = rule.get("condition") or {}
        job_status, deploy_status = cond.get("jobStatus"), cond.get("jobDeploymentStatus")
        if policy not in _POLICIES:
            out.append(not_supported(f"{path}.policy", policy, _POLICIES))
        if (job_status is None) == (deploy_status is None):
            out.append(
                invalid(
                    f"{path}.condition",
                    "...",
                    "a condition needs exactly one of jobStatus and jobDeploymentStatus",
                )
            )
        if deploy_status is not None and deploy_status != "Failed":
            out.append(
                not_supported(f"{path}.condition.jobDeploymentStatus", deploy_status, ("Failed",))
            )
        ttl = cond.get("ttlSeconds") or 0
        if ttl < 0:
            out.append(
                invalid(f"{path}.condition.ttlSeconds", ttl, "ttlSeconds must be non-negative")
            )
        key = (str(policy), str(job_status), str(deploy_status))
        if key in seen:
            out.append(duplicate(path, f"{policy} on {job_status or deploy_status}"))
        seen.add(key)
        if policy == "DeleteWorkers" and autoscaling_enabled(spec.get("rayClusterSpec") or {}):
            out.append(
                forbidden(
                    f"{path}.policy", "DeleteWorkers cannot be used with enableInTreeAutoscaling"
                )
            )
        if selector and policy in ("DeleteCluster", "DeleteWorkers"):
            out.append(forbidden(f"{path}.policy", f"{policy} cannot be used with clusterSelector"))
        if policy in _ORDER:
            ttls.setdefault((str(job_status), str(deploy_status)), {})[policy] = (ttl, i)
    for by_policy in ttls.values():
        ordered = sorted(by_policy.items(), key=lambda kv: _ORDER[kv[0]])
        for (lo_policy, (lo_ttl, _)), (hi_policy, (hi_ttl, hi_i)) in itertools.pairwise(ordered):
            if hi_ttl < lo_ttl:
                out.append(
                    invalid(
                        f"spec.deletionStrategy.deletionRules[{hi_i}].condition.ttlSeconds",
                        hi_ttl,
                        f"the {hi_policy} TTL must not be shorter than the {lo_policy} TTL ({lo_ttl}) for the same condition",
                    )
                )
    return out


def _strategy_rules(spec: dict[str, Any], selector: bool) -> list[Cause]:
    strategy = spec.get("deletionStrategy")
    if strategy is None:
        return []
    rules = strategy.get("deletionRules")
    legacy = strategy.get("onSuccess") is not None or strategy.get("onFailure") is not None
    if rules is not None and legacy:
        return [
            forbidden(
                "spec.deletionStrategy.deletionRules",
                "deletionRules cannot be combined with onSuccess/onFailure",
            )
        ]
    if rules is not None:
        return _rules_strategy(rules, spec, selector)
    return _legacy_strategy(strategy, spec, selector)


def validate_rayjob(obj: dict[str, Any]) -> list[Cause]:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    out = validate_name(meta.get("name", ""), c.MAX_RAYJOB_NAME, "RayJob")
    selector_map = spec.get("clusterSelector") or {}
    selector = bool(selector_map)
    if selector and not selector_map.get(c.CLUSTER_LABEL):
        out.append(
            required(
                f"spec.clusterSelector[{c.CLUSTER_LABEL}]",
                f"clusterSelector must name the RayCluster in {c.CLUSTER_LABEL}",
            )
        )
    if not selector and not spec.get("rayClusterSpec"):
        out.append(
            required("spec.rayClusterSpec", "one of rayClusterSpec and clusterSelector must be set")
        )
    out += _mode_rules(spec, selector)
    out += _lifecycle_rules(spec, selector)
    out += _content_rules(spec)
    out += _strategy_rules(spec, selector)
    if spec.get("rayClusterSpec"):
        out += validate_cluster_spec(
            spec["rayClusterSpec"],
            "spec.rayClusterSpec",
            annotations=meta.get("annotations") or {},
            for_rayjob=True,
        )
    return out
