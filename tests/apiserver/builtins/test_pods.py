"""Pods: defaults as a real cluster shows them, admission fields, create and update rules."""

from __future__ import annotations

import copy

import pytest

from lahar.apiserver.builtins import default, validate_create
from lahar.apiserver.errors import APIError

from .helpers import RT, context, create, update

POD = RT["Pod"]


def pod(*containers: dict, **spec: object) -> dict:
    ctrs = list(containers) or [{"name": "c", "image": "busybox:1.36"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "uid": "u-1"},
        "spec": {"containers": ctrs, **spec},
    }


def test_defaults_match_a_real_pod() -> None:
    out = default(
        pod({"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}), POD, context()
    )
    spec = out["spec"]
    assert {k: spec[k] for k in (
        "restartPolicy", "terminationGracePeriodSeconds", "dnsPolicy", "schedulerName",
        "securityContext", "enableServiceLinks", "serviceAccountName", "serviceAccount",
        "priority", "preemptionPolicy",
    )} == {
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "schedulerName": "default-scheduler", "securityContext": {}, "enableServiceLinks": True,
        "serviceAccountName": "default", "serviceAccount": "default", "priority": 0,
        "preemptionPolicy": "PreemptLowerPriority",
    }  # fmt: skip
    assert spec["containers"][0] == {
        "name": "c",
        "image": "nginx",
        "ports": [{"containerPort": 80, "protocol": "TCP"}],
        "imagePullPolicy": "Always",
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "resources": {},
    }
    assert spec["tolerations"] == [
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
    ]
    assert out["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


def test_default_does_not_mutate_its_input() -> None:
    obj = pod()
    before = copy.deepcopy(obj)
    default(obj, POD, context())
    assert obj == before


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        ("localhost:5000/team/app", "Always"),
        ("localhost:5000/team/app:v2", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
    ],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    out = default(pod({"name": "c", "image": image}), POD, context())
    assert out["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_existing_tolerations_suppress_the_defaults() -> None:
    tolerate_all = [{"operator": "Exists"}]
    out = default(pod(tolerations=tolerate_all), POD, context())
    assert out["spec"]["tolerations"] == tolerate_all
    custom = [
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 5,
        }
    ]
    out = default(pod(tolerations=custom), POD, context())
    assert [t["key"] for t in out["spec"]["tolerations"]] == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    assert out["spec"]["tolerations"][0]["tolerationSeconds"] == 5


def test_requests_default_to_limits_and_quantities_are_canonical() -> None:
    ctr = {"name": "c", "image": "x:1", "resources": {"limits": {"cpu": "0.5", "memory": "1.5Gi"}}}
    out = default(pod(ctr), POD, context())
    resources = out["spec"]["containers"][0]["resources"]
    assert resources == {
        "limits": {"cpu": "500m", "memory": "1536Mi"},
        "requests": {"cpu": "500m", "memory": "1536Mi"},
    }
    assert out["status"]["qosClass"] == "Guaranteed"


@pytest.mark.parametrize(
    ("resources", "qos"),
    [
        ({}, "BestEffort"),
        ({"requests": {"cpu": "100m"}}, "Burstable"),
        ({"limits": {"cpu": "1"}}, "Burstable"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}, "Burstable"),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, "Guaranteed"),
        ({"requests": {"nvidia.com/gpu": "1"}, "limits": {"nvidia.com/gpu": "1"}}, "BestEffort"),
    ],
)
def test_qos_class(resources: dict, qos: str) -> None:
    out = default(pod({"name": "c", "image": "x:1", "resources": resources}), POD, context())
    assert out["status"]["qosClass"] == qos


def test_priority_from_priority_class() -> None:
    out = default(pod(priorityClassName="high"), POD, context())
    assert out["spec"]["priority"] == 1000
    system = default(pod(priorityClassName="system-node-critical"), POD, context())
    assert system["spec"]["priority"] == 2000001000
    never = default(pod(priorityClassName="x"), POD, context(priority_of=lambda n: (7, "Never")))
    assert (never["spec"]["priority"], never["spec"]["preemptionPolicy"]) == (7, "Never")
    glob = default(pod(), POD, context(default_priority_class=lambda: ("batch", 50)))
    assert (glob["spec"]["priorityClassName"], glob["spec"]["priority"]) == ("batch", 50)


def test_unknown_priority_class_is_forbidden() -> None:
    with pytest.raises(APIError) as exc:
        default(pod(priorityClassName="nope"), POD, context())
    assert exc.value.code == 403
    assert exc.value.message == 'pods "p" is forbidden: no PriorityClass with name nope was found'
    with pytest.raises(APIError) as exc:
        default(pod(priorityClassName="high", priority=5), POD, context())
    assert "the integer value of priority (5) must not be provided in pod spec" in exc.value.message


def test_scheduling_gates_add_a_condition() -> None:
    out = default(pod(schedulingGates=[{"name": "example.com/gate"}]), POD, context())
    assert out["status"]["conditions"][0]["reason"] == "SchedulingGated"


def test_valid_pod_has_no_causes() -> None:
    assert create(pod(), "Pod") == []


def test_containers_required() -> None:
    assert create(pod(containers=[]) | {"spec": {"containers": []}}, "Pod") == [
        "spec.containers: Required value"
    ]


def test_container_problems() -> None:
    out = create(
        pod(
            {"name": "c"},
            {
                "name": "c",
                "image": "x:1",
                "ports": [{"containerPort": 70000}, {"containerPort": 80, "name": "8080"}],
            },
            {"name": "Bad_Name", "image": "x:1", "env": [{"name": ""}, {"name": "A=B"}]},
        ),
        "Pod",
    )
    assert out == [
        "spec.containers[0].image: Required value",
        "spec.containers[1].ports[0].containerPort: Invalid value: 70000: must be between 1 and "
        "65535, inclusive",
        'spec.containers[1].ports[1].name: Invalid value: "8080": must contain at least one letter '
        "(a-z)",
        'spec.containers[1].name: Duplicate value: "c"',
        'spec.containers[2].name: Invalid value: "Bad_Name": a lowercase RFC 1123 label must '
        "consist of lower "
        "case alphanumeric characters or '-', and must start and end with an alphanumeric "
        "character "
        "(e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        "spec.containers[2].env[0].name: Required value",
        'spec.containers[2].env[1].name: Invalid value: "A=B": a valid environment variable name '
        "must "
        "consist only of printable ASCII characters other than '='",
    ]


def test_init_container_names_must_not_clash() -> None:
    out = create(pod(initContainers=[{"name": "c", "image": "x:1"}]), "Pod")
    assert out == ['spec.initContainers[0].name: Duplicate value: "c"']


def test_volumes_and_mounts() -> None:
    ctr = {
        "name": "c",
        "image": "x:1",
        "volumeMounts": [{"name": "data", "mountPath": "/d"}, {"name": "nope", "mountPath": "/d"}],
    }
    volumes = [
        {"name": "data", "emptyDir": {}},
        {"name": "data", "configMap": {"name": "cm"}, "secret": {"secretName": "s"}},
        {"name": ""},
    ]
    out = create(pod(ctr, volumes=volumes), "Pod")
    assert out == [
        'spec.volumes[1].name: Duplicate value: "data"',
        # secret comes before configMap in upstream's fixed order of sources
        "spec.volumes[1].configMap: Forbidden: may not specify more than 1 volume type",
        "spec.volumes[2].name: Required value",
        'spec.containers[0].volumeMounts[1].name: Not found: "nope"',
        'spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/d": must be unique',
    ]
    # A volume without a source becomes an emptyDir, as upstream defaults it.
    out = default(pod(volumes=[{"name": "scratch"}]), POD, context())
    assert out["spec"]["volumes"] == [{"name": "scratch", "emptyDir": {}}]


def test_resources() -> None:
    ctr = {
        "name": "c",
        "image": "x:1",
        "resources": {
            "requests": {"cpu": "2", "memory": "-1", "nvidia.com/gpu": "1"},
            "limits": {"cpu": "1", "bogus": "1", "nvidia.com/gpu": "2"},
        },
    }
    assert create(pod(ctr), "Pod") == [
        'spec.containers[0].resources.limits[bogus]: Invalid value: "bogus": must be a standard '
        "resource for containers",
        # requests were defaulted from limits, so the bad name shows up twice, as upstream
        'spec.containers[0].resources.requests[bogus]: Invalid value: "bogus": must be a standard '
        "resource for containers",
        'spec.containers[0].resources.requests[memory]: Invalid value: "-1": must be greater than '
        "or equal to 0",
        'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to '
        "cpu limit of 1",
        'spec.containers[0].resources.requests: Invalid value: "1": must be equal to '
        "nvidia.com/gpu limit of 2",
    ]
    bad = {"name": "c", "image": "x:1", "resources": {"limits": {"cpu": "lots"}}}
    assert create(pod(bad), "Pod")[0].startswith(
        'spec.containers[0].resources.limits[cpu]: Invalid value: "lots": quantities must match'
    )


def test_enums_and_node_selector() -> None:
    out = create(
        pod(restartPolicy="Sometimes", nodeSelector={"bad key": "v"}, dnsPolicy="Weird"), "Pod"
    )
    assert (
        out[0] == 'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
        '"OnFailure", "Never"'
    )
    assert out[1] == (
        'spec.dnsPolicy: Unsupported value: "Weird": supported values: "ClusterFirstWithHostNet", '
        '"ClusterFirst", "Default", "None"'
    )
    assert out[2].startswith('spec.nodeSelector: Invalid value: "bad key": name part must consist')


def test_tolerations_and_gates() -> None:
    out = create(
        pod(
            tolerations=[
                {"operator": "Equal", "value": "x"},
                {"key": "k", "tolerationSeconds": 5, "effect": "NoSchedule"},
            ],
            nodeName="n1",
            schedulingGates=[{"name": "g"}, {"name": "g"}],
        ),
        "Pod",
    )
    assert out == [
        'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` '
        "is empty, "
        'which means "match all values and all keys"',
        "spec.tolerations[1].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' "
        "when "
        "`tolerationSeconds` is set",
        'spec.schedulingGates[1]: Duplicate value: "g"',
        "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared",
    ]


def test_validate_create_reports_missing_defaults() -> None:
    # validate_create on an undefaulted pod still says what is missing.
    raw = pod()
    out = validate_create(raw, POD)
    assert "spec.terminationGracePeriodSeconds: Required value" in [
        f"{c.field}: {c.message}" for c in out
    ]


def stored(**spec: object) -> dict:
    return default(pod(**spec), POD, context())


def test_update_may_change_image_and_add_tolerations() -> None:
    old = stored(activeDeadlineSeconds=100)
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "busybox:1.37"
    new["spec"]["activeDeadlineSeconds"] = 50
    new["spec"]["tolerations"].append({"key": "k", "operator": "Exists"})
    new["metadata"]["labels"] = {"a": "b"}
    assert update(new, old, "Pod") == []


def test_update_forbidden_spec_change() -> None:
    old = stored()
    new = copy.deepcopy(old)
    new["spec"]["restartPolicy"] = "Never"
    out = update(new, old, "Pod")
    assert len(out) == 1
    assert out[0].startswith(
        "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
        "additions "
        "to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if "
        "it "
        "was previously negative)\n"
    )
    assert 'spec.restartPolicy: "Always" -> "Never"' in out[0]


def test_update_node_name_cannot_change() -> None:
    old = stored(nodeName="n1")
    new = copy.deepcopy(old)
    new["spec"]["nodeName"] = "n2"
    assert update(new, old, "Pod")[0].startswith(
        "spec: Forbidden: pod updates may not change fields"
    )


def test_update_other_rules() -> None:
    old = stored(activeDeadlineSeconds=10, schedulingGates=[{"name": "a"}])
    new = copy.deepcopy(old)
    new["spec"]["activeDeadlineSeconds"] = 20
    assert update(new, old, "Pod") == [
        "spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal to previous "
        "value"
    ]
    new = copy.deepcopy(old)
    new["spec"]["schedulingGates"] = [{"name": "a"}, {"name": "b"}]
    new["spec"]["tolerations"] = new["spec"]["tolerations"][:1]
    assert update(new, old, "Pod") == [
        "spec.tolerations: Forbidden: existing toleration can not be modified except its "
        "tolerationSeconds",
        "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new "
        "scheduling gate 'b'",
    ]
    new = copy.deepcopy(old)
    new["spec"]["containers"].append({"name": "d", "image": "x:1"})
    assert (
        update(new, old, "Pod")[-1]
        == "spec.containers: Forbidden: pod updates may not add or remove containers"
    )
    # While gated, node selectors may grow and gates may be removed.
    new = copy.deepcopy(old)
    new["spec"]["schedulingGates"] = []
    new["spec"]["nodeSelector"] = {"zone": "a"}
    assert update(new, old, "Pod") == []


def test_update_keeps_admission_fields() -> None:
    old = stored(priorityClassName="high")
    new = copy.deepcopy(old)
    del new["spec"]["priority"]
    assert update(new, old, "Pod") == []


def test_status_update() -> None:
    old = stored(restartPolicy="Never")
    old["status"]["containerStatuses"] = [{"name": "c", "state": {"terminated": {"exitCode": 0}}}]
    new = copy.deepcopy(old)
    new["status"]["qosClass"] = "Guaranteed"
    new["status"]["containerStatuses"][0]["state"] = {"running": {}}
    new["status"]["podIPs"] = [{"ip": "10.1.1.1"}, {"ip": "nope"}]
    new["status"]["conditions"] = [
        {"type": "Ready", "status": "True"},
        {"type": "bad type", "status": "True"},
    ]
    out = update(new, old, "Pod", subresource="status")
    assert out[0].startswith(
        'metadata.conditions[1].Type: Invalid value: "bad type": name part must'
    )
    assert out[1:] == [
        'status.qosClass: Invalid value: "Guaranteed": field is immutable',
        "status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated "
        "state",
        'status.podIPs[1]: Invalid value: "nope": must be a valid IP address, (e.g. 10.9.8.7 or '
        "2001:db8::ffff)",
    ]
    # Status writes do not judge the spec; the REST layer keeps the stored one.
    fine = copy.deepcopy(old)
    fine["status"]["phase"] = "Running"
    assert update(fine, old, "Pod", subresource="status") == []


def test_host_port_conflicts() -> None:
    a = {"name": "a", "image": "x:1", "ports": [{"containerPort": 80, "hostPort": 8080}]}
    b = {"name": "b", "image": "x:1", "ports": [{"containerPort": 81, "hostPort": 8080}]}
    assert create(pod(a, b), "Pod") == [
        'spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"'
    ]


def test_wrongly_shaped_fields_give_causes_not_crashes() -> None:
    bad = {"name": "c", "image": "x:1", "env": [{"name": "A", "valueFrom": "nope"}]}
    out = create(pod(bad), "Pod")
    assert out == ["Invalid value: malformed object: 'str' object has no attribute 'get'"]
