"""The manifests under ``deploy/`` agree with the code they deploy.

No real cluster is at hand, so the manifests are checked against lahar itself: every
document has a known kind and apiVersion; each Deployment runs a real ``lahar``
sub-command whose arguments the CLI's parser (and the command's own option checks)
accept, with its ServiceAccount bound, its volumes defined and probes on the port the
arguments open; RBAC names resources that exist and grants each component list/watch on
the kinds its informers cache; the webhook configurations name paths the webhook app
serves, through the Service in front of the webhook Deployment. kubectl parses every file
client-side too (``kubectl label --local``: ``create --dry-run=client`` needs a server's
discovery even in dry-run, and lahar's embedded server does not serve RBAC or apps/v1).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube.config.kubeconfig import KubeConfig

from lahar.admission_webhook import served_paths
from lahar.apiserver.resources import BUILTINS
from lahar.cli.main import build_parser
from lahar.kube.resource import Resource

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
IMAGE = "ghcr.io/lahar/lahar:0.1.0"
NAMESPACE = "lahar-system"
Obj = dict[str, Any]

KNOWN_KINDS: dict[str, set[str]] = {
    "v1": {"Namespace", "ServiceAccount", "ConfigMap", "Service"},
    "apps/v1": {"Deployment"},
    "rbac.authorization.k8s.io/v1": {"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"},
    "admissionregistration.k8s.io/v1": {
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    },
    "apiextensions.k8s.io/v1": {"CustomResourceDefinition"},
}
CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "CustomResourceDefinition",
}
# Kubernetes resources the components touch that lahar's embedded server does not serve
# (group, resource), so they are not in its built-in catalogue.
KUBERNETES_EXTRA = {
    ("networking.k8s.io", "networkpolicies"),
    ("apps", "replicasets"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("rbac.authorization.k8s.io", "roles"),
    ("rbac.authorization.k8s.io", "rolebindings"),
}
VERBS = {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}


def yaml_files() -> list[Path]:
    """Every YAML file under deploy/ (``crds`` is a symlink, which ``rglob`` skips)."""
    found = []
    for root, _, files in os.walk(DEPLOY, followlinks=True):
        found += [Path(root) / f for f in files if f.endswith(".yaml")]
    return sorted(found)


def _documents() -> Iterator[tuple[Path, Obj]]:
    for path in yaml_files():
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                yield path, doc


DOCS: list[tuple[Path, Obj]] = list(_documents())


def of_kind(kind: str) -> list[Obj]:
    return [doc for _, doc in DOCS if doc["kind"] == kind]


def named(kind: str, name: str) -> Obj:
    (found,) = [d for d in of_kind(kind) if d["metadata"]["name"] == name]
    return found


def known_resources() -> set[tuple[str, str]]:
    """(group, resource or resource/subresource) for everything a rule may name."""
    out = set(KUBERNETES_EXTRA)
    for rt in BUILTINS:
        out.add((rt.group, rt.plural))
        out |= {(rt.group, f"{rt.plural}/{sub}") for sub in rt.subresources}
    for crd in of_kind("CustomResourceDefinition"):
        spec = crd["spec"]
        out.add((spec["group"], spec["names"]["plural"]))
        if any("status" in (v.get("subresources") or {}) for v in spec["versions"]):
            out.add((spec["group"], spec["names"]["plural"] + "/status"))
    return out


def test_every_document_has_a_known_kind_and_is_where_it_belongs() -> None:
    seen: set[tuple[str, str, str]] = set()
    assert len(DOCS) > 20
    for path, doc in DOCS:
        kind, version = doc.get("kind"), doc.get("apiVersion")
        assert kind in KNOWN_KINDS.get(version, set()), (path.name, version, kind)
        md = doc["metadata"]
        assert md.get("name"), path
        if kind in CLUSTER_SCOPED:
            assert "namespace" not in md, (path.name, md["name"])
        else:
            assert md.get("namespace") == NAMESPACE, (path.name, md["name"])
        key = (kind, md.get("namespace", ""), md["name"])
        assert key not in seen, f"{key} defined twice"
        seen.add(key)
    assert named("Namespace", NAMESPACE)


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def _option_checks() -> dict[str, Callable[[argparse.Namespace], Any]]:
    from lahar.cli import controllers, operator, scheduler

    return {
        "scheduler": scheduler.options_from,
        "controllers": controllers._options,
        "operator": lambda args: operator.options_from(args, env={}),
    }


def _flag(args: list[str], name: str) -> str | None:
    for arg in args:
        if arg.startswith(f"{name}="):
            return arg.split("=", 1)[1]
    return None


def _probe_port_and_path(probe: Obj) -> tuple[str, str]:
    if "httpGet" in probe:
        return str(probe["httpGet"]["port"]), probe["httpGet"]["path"]
    command = " ".join(probe["exec"]["command"])
    url = command.split("http://127.0.0.1:", 1)[1].split("'", 1)[0]
    port, _, path = url.partition("/")
    return port, "/" + path


EXPECTED = {
    "lahar-scheduler": ["scheduler", "--leader-elect"],
    "lahar-controllers": ["controllers", "--leader-elect"],
    "lahar-operator": ["operator", "--batch-scheduler=volcano", "--leader-elect"],
    "lahar-webhook": ["webhook"],
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_deployment_runs_a_real_lahar_command(name: str) -> None:
    deploy = named("Deployment", name)
    spec = deploy["spec"]
    pod = spec["template"]["spec"]
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    (container,) = pod["containers"]
    assert container["image"] == IMAGE
    assert container["command"] == ["lahar"]
    args = container["args"]
    assert set(EXPECTED[name]) <= set(args), args

    command = args[0]
    assert command in _subcommands()
    try:
        parsed = build_parser().parse_args(args)
    except SystemExit as exc:  # argparse refuses: the Deployment would crash-loop
        pytest.fail(f"{name}: lahar refuses {args}: exit {exc.code}")
    assert parsed.command == command
    check = _option_checks().get(command)
    if check is not None:
        check(parsed)

    # Its ServiceAccount exists and is bound to a ClusterRole.
    sa = pod["serviceAccountName"]
    assert named("ServiceAccount", sa)["metadata"]["namespace"] == NAMESPACE
    bound = [
        b
        for b in of_kind("ClusterRoleBinding")
        if {"kind": "ServiceAccount", "name": sa, "namespace": NAMESPACE} in b["subjects"]
    ]
    assert bound, f"{sa} is not bound to any ClusterRole"

    # Volumes come from objects under deploy/ (the TLS Secret is made at install time).
    volumes = {v["name"]: v for v in pod.get("volumes") or ()}
    for mount in container.get("volumeMounts") or ():
        assert mount["name"] in volumes, mount
    for volume in volumes.values():
        if "configMap" in volume:
            named("ConfigMap", volume["configMap"]["name"])
        elif "secret" in volume:
            assert volume["secret"]["secretName"] == "lahar-admission-tls"
            assert "lahar-admission-tls" in (DEPLOY / "README.md").read_text()
    # Files named in the arguments are mounted (a ConfigMap key under a mount).
    mounts = {m["mountPath"]: volumes[m["name"]] for m in container.get("volumeMounts") or ()}
    for flag in ("--kubeconfig", "--scheduler-conf"):
        value = _flag(args, flag)
        if value is None:
            continue
        directory, _, key = value.rpartition("/")
        cm = named("ConfigMap", mounts[directory]["configMap"]["name"])
        assert key in cm["data"], (flag, value)

    # Probes: liveness on /healthz, readiness on /readyz, on the port the command opens.
    port = _flag(args, "--health-port") or _flag(args, "--port")
    names = {p["name"]: str(p["containerPort"]) for p in container.get("ports") or ()}
    for kind, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        probe_port, probe_path = _probe_port_and_path(container[kind])
        assert probe_path == path, (name, kind)
        assert names.get(probe_port, probe_port) == port, (name, kind, probe_port)
    if _flag(args, "--health-address") is None and command != "webhook":
        assert "exec" in container["livenessProbe"], "loopback-only health needs exec probes"
    requests = container["resources"]["requests"]
    assert {"cpu", "memory"} <= set(requests)


def test_scheduler_config_is_the_packaged_one() -> None:
    cm = named("ConfigMap", "lahar-scheduler-config")
    packaged = (REPO / "src" / "lahar" / "manifests" / "volcano-scheduler.conf").read_text()
    assert cm["data"]["volcano-scheduler.conf"] == packaged


def test_in_cluster_kubeconfig_uses_the_service_account() -> None:
    cm = named("ConfigMap", "lahar-in-cluster-kubeconfig")
    config = KubeConfig.from_dict(yaml.safe_load(cm["data"]["config"]))
    cfg = config.get()
    assert cfg.cluster.server == "https://kubernetes.default.svc"
    assert cfg.user.token_file == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert cfg.cluster.certificate_auth == "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"


def test_rbac_names_resources_that_exist() -> None:
    known = known_resources()
    roles = of_kind("ClusterRole") + of_kind("Role")
    assert roles
    for role in roles:
        for rule in role["rules"]:
            assert set(rule["verbs"]) <= VERBS, (role["metadata"]["name"], rule)
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    assert (group, resource) in known, (role["metadata"]["name"], group, resource)
    for binding in of_kind("ClusterRoleBinding") + of_kind("RoleBinding"):
        ref = binding["roleRef"]
        role = named(ref["kind"], ref["name"])
        if binding["kind"] == "RoleBinding":
            assert role["metadata"]["namespace"] == binding["metadata"]["namespace"]
        for subject in binding["subjects"]:
            assert (
                named("ServiceAccount", subject["name"])["metadata"]["namespace"]
                == (subject["namespace"])
            )


def _grants(role: str) -> set[tuple[str, str, str]]:
    out: set[tuple[str, str, str]] = set()
    for rule in named("ClusterRole", role)["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out |= {(group, resource, verb) for verb in rule["verbs"]}
    return out


def _cached_kinds() -> dict[str, tuple[Resource, ...]]:
    from lahar.kuberay.operator import kinds
    from lahar.scheduler.daemon import cache
    from lahar.volcano import cachelookup
    from lahar.volcano.controllers import common

    controllers = ("VCJOBS", "PODS", "PODGROUPS", "QUEUES", "NAMESPACES", "PRIORITY_CLASSES")
    operator = ("RAYCLUSTERS", "RAYJOBS", "PODS", "SERVICES", "JOBS", "PODGROUPS")
    return {
        "lahar-scheduler": cache.KINDS,
        "lahar-controllers": tuple(getattr(common, name) for name in controllers),
        "lahar-operator": tuple(getattr(kinds, name) for name in operator),
        "lahar-webhook": cachelookup.KINDS,
    }


VC, SCHED = "batch.volcano.sh", "scheduling.volcano.sh"
# The writes each component's code makes (group, resource, verbs), read from its REST calls.
WRITES: dict[str, list[tuple[str, str, str]]] = {
    "lahar-scheduler": [
        ("", "pods/binding", "create"),
        ("", "pods/eviction", "create"),
        ("", "pods/status", "patch"),
        (SCHED, "podgroups", "patch"),
        (SCHED, "queues/status", "patch"),
        ("", "events", "create patch"),
    ],
    "lahar-controllers": [
        (VC, "jobs/status", "update"),
        (VC, "jobs", "delete"),
        ("", "pods", "create delete patch"),
        (SCHED, "podgroups", "create patch delete"),
        (SCHED, "queues/status", "patch"),
        ("", "services", "create patch delete"),
        ("", "events", "create patch"),
    ],
    "lahar-operator": [
        ("ray.io", "rayclusters", "create update delete"),
        ("ray.io", "rayclusters/status", "update"),
        ("ray.io", "rayjobs", "patch delete"),
        ("ray.io", "rayjobs/status", "update"),
        ("", "pods", "create delete"),
        ("", "services", "create update"),
        ("batch", "jobs", "create delete"),
        (SCHED, "podgroups", "create update"),
        ("rbac.authorization.k8s.io", "roles", "create"),
        ("", "events", "create patch"),
    ],
    "lahar-webhook": [],
}


@pytest.mark.parametrize("role", sorted(EXPECTED))
def test_each_component_may_read_what_it_caches_and_write_what_it_writes(role: str) -> None:
    grants = _grants(role)
    for res in _cached_kinds()[role]:
        for verb in ("list", "watch"):
            assert (res.group, res.plural, verb) in grants, (role, str(res), verb)
    for group, resource, verbs in WRITES[role]:
        for verb in verbs.split():
            assert (group, resource, verb) in grants, (role, group, resource, verb)


@pytest.mark.parametrize(
    "role,namespace_flag",
    [
        ("lahar-scheduler", "--lock-object-namespace"),
        ("lahar-controllers", "--leader-elect-namespace"),
        ("lahar-operator", "--leader-election-namespace"),
    ],
)
def test_leader_election_may_write_its_lease(role: str, namespace_flag: str) -> None:
    args = named("Deployment", role)["spec"]["template"]["spec"]["containers"][0]["args"]
    namespace = _flag(args, namespace_flag)
    lease_role = named("Role", f"{role}-leader-election")
    assert lease_role["metadata"]["namespace"] == namespace
    (rule,) = lease_role["rules"]
    assert rule["resources"] == ["leases"]
    assert {"get", "create", "update"} <= set(rule["verbs"])


def test_webhook_configurations_reach_paths_the_app_serves() -> None:
    paths = set(served_paths())
    service = named("Service", "lahar-admission")
    (svc_port,) = service["spec"]["ports"]
    webhook = named("Deployment", "lahar-webhook")
    labels = webhook["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    args = webhook["spec"]["template"]["spec"]["containers"][0]["args"]
    assert str(svc_port["targetPort"]) == _flag(args, "--port")
    assert _flag(args, "--bind-address") == "0.0.0.0"
    known = known_resources()
    used: set[str] = set()
    configs = of_kind("ValidatingWebhookConfiguration") + of_kind("MutatingWebhookConfiguration")
    for config in configs:
        for hook in config["webhooks"]:
            ref = hook["clientConfig"]["service"]
            assert (ref["name"], ref["namespace"]) == ("lahar-admission", NAMESPACE)
            assert ref["port"] == svc_port["port"]
            assert ref["path"] in paths, ref["path"]
            used.add(ref["path"])
            assert hook["admissionReviewVersions"] == ["v1"]
            is_mutating = config["kind"] == "MutatingWebhookConfiguration"
            assert ref["path"].endswith("/mutate") == is_mutating
            for rule in hook["rules"]:
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        assert (group, resource) in known, (hook["name"], group, resource)
    assert used == paths, f"served but not registered: {sorted(paths - used)}"


def test_kuberay_webhook_registers_rayclusters_and_rayjobs() -> None:
    config = named("ValidatingWebhookConfiguration", "lahar-admission-kuberay-validate")
    by_path = {h["clientConfig"]["service"]["path"]: h for h in config["webhooks"]}
    for path, resource in (
        ("/rayclusters/validate", "rayclusters"),
        ("/rayjobs/validate", "rayjobs"),
    ):
        (rule,) = by_path[path]["rules"]
        assert rule["apiGroups"] == ["ray.io"] and rule["apiVersions"] == ["v1"]
        assert rule["resources"] == [resource]
        assert sorted(rule["operations"]) == ["CREATE", "UPDATE"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
@pytest.mark.parametrize("path", yaml_files(), ids=lambda p: str(p.relative_to(DEPLOY)))
def test_kubectl_parses_the_file(path: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        ["kubectl", "label", "--local", "-f", str(path), "lahar.dev/check=ok", "-o", "name"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"KUBECONFIG": str(tmp_path / "none"), "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )
    assert done.returncode == 0, done.stderr
    names = sorted(line.rsplit("/", 1)[1] for line in done.stdout.split())
    assert names == sorted(doc["metadata"]["name"] for p, doc in DOCS if p == path)
