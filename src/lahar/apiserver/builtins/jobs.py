"""batch/v1 Jobs: defaults, the generated selector, and spec/update validation.

Defaults match upstream: parallelism and completions 1 when both are unset,
``backoffLimit`` 6 (or unlimited with ``backoffLimitPerIndex``),
``completionMode: NonIndexed``, ``suspend: false``, ``manualSelector: false``
and a ``podReplacementPolicy``; the pod template gets the usual PodSpec
defaults (so a template without ``restartPolicy`` ends up ``Always`` and is
then refused, as on a real cluster). On create the selector
``batch.kubernetes.io/controller-uid=<uid>`` is generated and the template is
labelled with the uid and job name, in both the prefixed and legacy spellings.
After creation the selector, completions and (unless the job is suspended and
never started) the template are immutable.
"""

from __future__ import annotations

import copy
from typing import Any

from lahar.apiserver.builtins import fielderr as fe
from lahar.apiserver.builtins import names, podspec, selectors
from lahar.apiserver.builtins.metadata import validate_annotations, validate_labels
from lahar.apiserver.builtins.poddefaults import default_pod_spec
from lahar.apiserver.builtins.pods import prune
from lahar.apiserver.errors import Cause

CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"
COMPLETION_MODES = ["NonIndexed", "Indexed"]
REPLACEMENT_POLICIES = ["Failed", "TerminatingOrFailed"]
_MAX_INT32 = 2**31 - 1
_MAX_INDEXED_PARALLELISM = 100000


def default_job(obj: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = _MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    for field, value in (
        ("completionMode", "NonIndexed"),
        ("suspend", False),
        ("manualSelector", False),
    ):
        if spec.get(field) is None:
            spec[field] = value
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = (
            "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
        )
    for rule in (spec.get("podFailurePolicy") or {}).get("rules") or []:
        for pattern in (rule or {}).get("onPodConditions") or []:
            if isinstance(pattern, dict) and not pattern.get("status"):
                pattern["status"] = "True"
    template = spec.get("template")
    if not isinstance(template, dict):
        template = spec["template"] = {}
    meta = obj.setdefault("metadata", {})
    if isinstance(template.get("spec"), dict):
        default_pod_spec(template["spec"], is_pod=False)
    if old is None:
        if not spec.get("manualSelector"):
            _generate_selector(obj, spec, template)
        obj["status"] = {}
    # A job without labels takes its template's (the generated ones included);
    # upstream ends up there too, because it re-applies this default on every read.
    template_labels = (template.get("metadata") or {}).get("labels")
    if template_labels and not meta.get("labels"):
        meta["labels"] = copy.deepcopy(template_labels)
    return obj


def _generate_selector(obj: dict[str, Any], spec: dict[str, Any], template: dict[str, Any]) -> None:
    meta = obj.get("metadata") or {}
    name, uid = meta.get("name") or "", meta.get("uid") or ""
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    for label in (LEGACY_JOB_NAME, JOB_NAME):
        labels.setdefault(label, name)
    for label in (LEGACY_CONTROLLER_UID, CONTROLLER_UID):
        labels.setdefault(label, uid)
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    selector.setdefault("matchLabels", {}).setdefault(CONTROLLER_UID, uid)


def _has_label(template: dict[str, Any], label: str, expected: str) -> list[Cause]:
    labels = (template.get("metadata") or {}).get("labels") or {}
    path = fe.key("spec.template.metadata.labels", label)
    if label not in labels:
        return [fe.required(path, f"must be '{expected}'")]
    if labels[label] != expected:
        return [fe.invalid(path, labels, f"must be '{expected}'")]
    return []


def validate_job(obj: dict[str, Any], *, prefixed_labels: bool = True) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [fe.required("spec.selector"), fe.required("spec.template.spec.containers")]
    meta = obj.get("metadata") or {}
    template = spec.get("template") if isinstance(spec.get("template"), dict) else {}
    causes: list[Cause] = []
    if not spec.get("manualSelector") and spec.get("selector") is not None:
        uid, name = meta.get("uid") or "", meta.get("name") or ""
        if not uid:
            causes.append(fe.required("metadata.uid"))
        expected = {LEGACY_CONTROLLER_UID: uid, LEGACY_JOB_NAME: name}
        causes += _has_label(template, LEGACY_CONTROLLER_UID, uid) + _has_label(
            template, LEGACY_JOB_NAME, name
        )
        if prefixed_labels:
            causes += _has_label(template, CONTROLLER_UID, uid) + _has_label(
                template, JOB_NAME, name
            )
            expected.update({CONTROLLER_UID: uid, JOB_NAME: name})
        if not selectors.matches(spec["selector"], expected):
            causes.append(
                fe.invalid("spec.selector", spec["selector"], "`selector` not auto-generated")
            )
    causes += _validate_spec(spec, template)
    if spec.get("selector") is None:
        causes.append(fe.required("spec.selector"))
    else:
        causes += selectors.validate_label_selector(spec["selector"], "spec.selector")
    template_labels = (template.get("metadata") or {}).get("labels") or {}
    if spec.get("selector") is not None and not selectors.matches(
        spec["selector"], template_labels
    ):
        causes.append(
            fe.invalid(
                "spec.template.metadata.labels",
                template_labels,
                "`selector` does not match template `labels`",
            )
        )
    completions = spec.get("completions")
    if spec.get("completionMode") == "Indexed" and isinstance(completions, int) and completions > 0:
        hostname = f"{meta.get('name') or ''}-{completions - 1}"
        if names.dns1123_label(hostname):
            causes.append(
                fe.invalid(
                    "metadata.name",
                    meta.get("name") or "",
                    f"will not able to create pod with invalid DNS label: {hostname}",
                )
            )
    return causes


def _validate_spec(spec: dict[str, Any], template: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for field in (
        "parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
        "ttlSecondsAfterFinished", "backoffLimitPerIndex", "maxFailedIndexes",
    ):  # fmt: skip
        causes += fe.nonnegative(fe.child("spec", field), spec.get(field))
    if spec.get("maxFailedIndexes") is not None and spec.get("backoffLimitPerIndex") is None:
        causes.append(
            fe.required("spec.backoffLimitPerIndex", "when maxFailedIndexes is specified")
        )
    mode = spec.get("completionMode")
    if mode is not None and mode not in COMPLETION_MODES:
        causes.append(fe.not_supported("spec.completionMode", mode, COMPLETION_MODES))
    if mode == "Indexed":
        if spec.get("completions") is None:
            causes.append(fe.required("spec.completions", "when completion mode is Indexed"))
        parallelism = spec.get("parallelism")
        if isinstance(parallelism, int) and parallelism > _MAX_INDEXED_PARALLELISM:
            causes.append(
                fe.invalid(
                    "spec.parallelism",
                    parallelism,
                    f"must be less than or equal to {_MAX_INDEXED_PARALLELISM} "
                    "when completion mode is Indexed",
                )
            )
    else:
        for field in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(field) is not None:
                causes.append(
                    fe.invalid(
                        fe.child("spec", field), spec[field], "requires indexed completion mode"
                    )
                )
    policy = spec.get("podReplacementPolicy")
    if policy is not None:
        if spec.get("podFailurePolicy") and policy != "Failed":
            causes.append(fe.not_supported("spec.podReplacementPolicy", policy, ["Failed"]))
        elif policy not in REPLACEMENT_POLICIES:
            causes.append(
                fe.not_supported("spec.podReplacementPolicy", policy, REPLACEMENT_POLICIES)
            )
    template_meta = template.get("metadata") or {}
    causes += validate_labels(template_meta.get("labels"), "spec.template.metadata.labels")
    causes += validate_annotations(
        template_meta.get("annotations"), "spec.template.metadata.annotations"
    )
    pod_spec = template.get("spec")
    causes += podspec.validate_pod_spec(pod_spec, "spec.template.spec", is_pod=False)
    restart = (pod_spec or {}).get("restartPolicy") if isinstance(pod_spec, dict) else None
    restart_path = "spec.template.spec.restartPolicy"
    if restart in (None, "", "Always"):
        causes.append(fe.required(restart_path, 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        causes.append(fe.not_supported(restart_path, restart, ["OnFailure", "Never"]))
    elif spec.get("podFailurePolicy") and restart != "Never":
        causes.append(
            fe.invalid(
                restart_path,
                restart,
                'only "Never" is supported when podFailurePolicy is specified',
            )
        )
    return causes


def validate_job_update(new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[Cause]:
    if subresource == "status":
        status = new.get("status") or {}
        causes: list[Cause] = []
        for field in ("active", "succeeded", "failed", "ready", "terminating"):
            causes += fe.nonnegative(fe.child("status", field), status.get(field))
        return causes
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    old_labels = ((old_spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    prefixed = CONTROLLER_UID in old_labels and JOB_NAME in old_labels
    causes = validate_job(new, prefixed_labels=prefixed)
    completions, old_completions = spec.get("completions"), old_spec.get("completions")
    if completions != old_completions:
        if spec.get("completionMode") == "Indexed" and completions is not None:
            if completions != spec.get("parallelism"):
                causes.append(
                    fe.invalid(
                        "spec.completions",
                        completions,
                        "can only be modified in tandem with spec.parallelism",
                    )
                )
        else:
            causes.append(fe.immutable("spec.completions", completions))
    if spec.get("selector") != old_spec.get("selector"):
        causes.append(fe.immutable("spec.selector", spec.get("selector")))
    causes += _template_update(spec, old_spec, old)
    for field in (
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ):
        if spec.get(field) != old_spec.get(field):
            causes.append(fe.immutable(fe.child("spec", field), spec.get(field)))
    return causes


def _template_update(
    spec: dict[str, Any], old_spec: dict[str, Any], old: dict[str, Any]
) -> list[Cause]:
    template = spec.get("template") or {}
    old_template = copy.deepcopy(old_spec.get("template") or {})
    suspended = bool(old_spec.get("suspend")) and not (old.get("status") or {}).get("startTime")
    if suspended:
        # Scheduling directives of a suspended, never-started job may change.
        new_meta, old_meta = template.get("metadata") or {}, old_template.setdefault("metadata", {})
        for field in ("labels", "annotations"):
            _copy(old_meta, new_meta, field)
        new_pod, old_pod = template.get("spec") or {}, old_template.setdefault("spec", {})
        for field in ("nodeSelector", "tolerations", "schedulingGates"):
            _copy(old_pod, new_pod, field)
        old_affinity = {
            k: v for k, v in (old_pod.get("affinity") or {}).items() if k != "nodeAffinity"
        }
        if (new_pod.get("affinity") or {}).get("nodeAffinity") is not None:
            old_affinity["nodeAffinity"] = new_pod["affinity"]["nodeAffinity"]
        if old_affinity:
            old_pod["affinity"] = old_affinity
        else:
            old_pod.pop("affinity", None)
    if prune(template) != prune(old_template):
        return [fe.immutable("spec.template", template)]
    return []


def _copy(target: dict[str, Any], source: dict[str, Any], field: str) -> None:
    if field in source:
        target[field] = copy.deepcopy(source[field])
    else:
        target.pop(field, None)
