"""A container's environment is built as the kubelet builds it: image env, envFrom, env
with $(VAR) expansion, the downward API, ConfigMap and Secret references, and the
kubelet's errors for what is missing."""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lahar.node.local.env import (
    ContainerConfigError,
    Lookups,
    container_env,
    expand,
    field_value,
    format_map,
    resource_value,
)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


CONFIGMAPS: dict[tuple[str, str], dict[str, Any]] = {
    ("default", "app"): {
        "metadata": {"name": "app", "namespace": "default"},
        "data": {"MODE": "fast", "LEVEL": "3", "bad key": "x", "1DIGIT": "y", "dot.ted": "z"},
        "binaryData": {"BIN": b64("binary")},
    },
    ("other", "app"): {"metadata": {"name": "app"}, "data": {"MODE": "elsewhere"}},
}
SECRETS: dict[tuple[str, str], dict[str, Any]] = {
    ("default", "creds"): {
        "metadata": {"name": "creds", "namespace": "default"},
        "data": {"USER": b64("ray"), "PASSWORD": b64("s3cret"), "TOKEN": b64("old")},
        "stringData": {"TOKEN": "new"},
    },
}
LOOKUPS = Lookups(
    configmap=lambda ns, name: CONFIGMAPS.get((ns, name)),
    secret=lambda ns, name: SECRETS.get((ns, name)),
)
BASE = {"PATH": "/usr/bin:/bin", "HOME": "/root"}


def make_pod(container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "head-0",
            "namespace": "default",
            "uid": "1234-abcd",
            "labels": {"app": "ray", "ray.io/node-type": "head"},
            "annotations": {"note": 'say "hi"'},
        },
        "spec": {
            "nodeName": "local-0",
            "serviceAccountName": "ray",
            "containers": [container],
            **spec,
        },
        "status": {},
    }


def env_of(container: dict[str, Any], **kwargs: Any) -> dict[str, str]:
    pod = make_pod(container)
    return container_env(
        pod,
        pod["spec"]["containers"][0],
        lookups=LOOKUPS,
        base_env=BASE,
        node_ip="192.168.1.10",
        pod_ip="10.244.0.7",
        **kwargs,
    )


def test_base_env_comes_first_and_env_overrides_it() -> None:
    env = env_of(
        {"name": "c", "env": [{"name": "HOME", "value": "/home/ray"}, {"name": "A", "value": "1"}]}
    )
    assert env == {"PATH": "/usr/bin:/bin", "HOME": "/home/ray", "A": "1"}


def test_no_env_is_the_base_env() -> None:
    assert env_of({"name": "c"}) == BASE


def test_env_from_configmap_skips_invalid_names_and_binary_data() -> None:
    env = env_of({"name": "c", "envFrom": [{"configMapRef": {"name": "app"}}]})
    assert env["MODE"] == "fast" and env["LEVEL"] == "3" and env["dot.ted"] == "z"
    assert "bad key" not in env and "1DIGIT" not in env and "BIN" not in env


def test_env_from_prefix_makes_names_valid() -> None:
    env = env_of({"name": "c", "envFrom": [{"configMapRef": {"name": "app"}, "prefix": "P_"}]})
    assert env["P_MODE"] == "fast" and env["P_1DIGIT"] == "y"
    assert "MODE" not in env and "P_bad key" not in env


def test_env_from_secret_decodes_and_string_data_wins() -> None:
    env = env_of({"name": "c", "envFrom": [{"secretRef": {"name": "creds"}}]})
    assert env["USER"] == "ray" and env["PASSWORD"] == "s3cret" and env["TOKEN"] == "new"


def test_later_env_from_overrides_earlier_and_env_overrides_env_from() -> None:
    env = env_of(
        {
            "name": "c",
            "envFrom": [{"configMapRef": {"name": "app"}}, {"secretRef": {"name": "creds"}}],
            "env": [{"name": "MODE", "value": "slow"}],
        }
    )
    assert env["MODE"] == "slow" and env["USER"] == "ray"


def test_env_from_missing_configmap_is_an_error_unless_optional() -> None:
    with pytest.raises(ContainerConfigError) as info:
        env_of({"name": "c", "envFrom": [{"configMapRef": {"name": "nope"}}]})
    assert info.value.reason == "CreateContainerConfigError"
    assert info.value.message == 'configmap "nope" not found'
    env = env_of({"name": "c", "envFrom": [{"configMapRef": {"name": "nope", "optional": True}}]})
    assert env == BASE


def test_env_from_missing_secret_is_an_error_unless_optional() -> None:
    with pytest.raises(ContainerConfigError, match='secret "gone" not found'):
        env_of({"name": "c", "envFrom": [{"secretRef": {"name": "gone"}}]})
    assert (
        env_of({"name": "c", "envFrom": [{"secretRef": {"name": "gone", "optional": True}}]})
        == BASE
    )


def test_lookups_use_the_pods_namespace() -> None:
    pod = make_pod(
        {
            "name": "c",
            "env": [
                {"name": "M", "valueFrom": {"configMapKeyRef": {"name": "app", "key": "MODE"}}}
            ],
        }
    )
    pod["metadata"]["namespace"] = "other"
    env = container_env(
        pod, pod["spec"]["containers"][0], lookups=LOOKUPS, base_env={}, node_ip="n", pod_ip="p"
    )
    assert env == {"M": "elsewhere"}


def test_expansion_of_earlier_variables() -> None:
    env = env_of(
        {
            "name": "c",
            "envFrom": [{"configMapRef": {"name": "app"}}],
            "env": [
                {"name": "A", "value": "a"},
                {"name": "B", "value": "$(A)-$(MODE)-$(LATER)-$(PATH)-$$(A)-$$$(A)"},
                {"name": "LATER", "value": "late"},
                {"name": "C", "value": "$(B)"},
            ],
        }
    )
    # LATER is not defined yet; PATH is the image's, which the kubelet never sees.
    assert env["B"] == "a-fast-$(LATER)-$(PATH)-$(A)-$a"
    assert env["C"] == env["B"]


def test_value_from_is_not_expanded() -> None:
    env = env_of(
        {
            "name": "c",
            "env": [
                {"name": "A", "value": "a"},
                {
                    "name": "ANN",
                    "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['x']"}},
                },
            ],
        }
    )
    assert env["ANN"] == ""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("$(A)", "1"),
        ("$(A)$(B)", "12"),
        ("$(UNKNOWN)", "$(UNKNOWN)"),
        ("$$(A)", "$(A)"),
        ("$$", "$"),
        ("$$$$", "$$"),
        ("$", "$"),
        ("a$", "a$"),
        ("$x", "$x"),
        ("$(A", "$(A"),
        ("$(", "$("),
        ("$()", "$()"),
        ("$(A)$", "1$"),
        ("x$(A)y$(B)z", "x1y2z"),
        ("$((A))", "$((A))"),
        ("$(A) $$(B) $(C)", "1 $(B) $(C)"),
    ],
)
def test_expand_cases(text: str, expected: str) -> None:
    assert expand(text, {"A": "1", "B": "2"}) == expected


@given(st.text(), st.dictionaries(st.text(alphabet="ABC_", min_size=1), st.text()))
def test_expand_never_raises_and_without_refs_is_identity(
    text: str, variables: dict[str, str]
) -> None:
    result = expand(text, variables)
    assert isinstance(result, str)
    if "$" not in text:
        assert result == text


@given(st.text(alphabet=st.characters(blacklist_characters="$")))
def test_escaped_references_round_trip(name: str) -> None:
    """``$$(X)`` is always ``$(X)``, whatever X is and whether it is defined."""
    assert expand(f"$$({name})", {name: "value"}) == f"$({name})"


@given(st.text(), st.dictionaries(st.text(max_size=5), st.text(max_size=5)))
def test_escaping_every_dollar_round_trips(text: str, variables: dict[str, str]) -> None:
    """Any string with each ``$`` doubled expands back to itself, whatever is defined."""
    assert expand(text.replace("$", "$$"), variables) == text


@given(st.text(alphabet="ab$)", max_size=30))
def test_without_references_expansion_only_unescapes(text: str) -> None:
    """With no ``$(``, the only change is ``$$`` -> ``$``, paired from the left."""
    assert expand(text, {"a": "X"}) == re.sub(r"\$\$", "$", text)


def test_field_refs() -> None:
    paths = {
        "NAME": "metadata.name",
        "NS": "metadata.namespace",
        "UID": "metadata.uid",
        "APP": "metadata.labels['app']",
        "TYPE": "metadata.labels['ray.io/node-type']",
        "MISSING": "metadata.labels['missing']",
        "NOTE": "metadata.annotations['note']",
        "NODE": "spec.nodeName",
        "SA": "spec.serviceAccountName",
        "HOST_IP": "status.hostIP",
        "HOST_IPS": "status.hostIPs",
        "POD_IP": "status.podIP",
        "POD_IPS": "status.podIPs",
    }
    env = env_of(
        {
            "name": "c",
            "env": [
                {"name": k, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": v}}}
                for k, v in paths.items()
            ],
        }
    )
    assert {k: env[k] for k in paths} == {
        "NAME": "head-0",
        "NS": "default",
        "UID": "1234-abcd",
        "APP": "ray",
        "TYPE": "head",
        "MISSING": "",
        "NOTE": 'say "hi"',
        "NODE": "local-0",
        "SA": "ray",
        "HOST_IP": "192.168.1.10",
        "HOST_IPS": "192.168.1.10",
        "POD_IP": "10.244.0.7",
        "POD_IPS": "10.244.0.7",
    }


def test_unsupported_field_ref_is_a_config_error() -> None:
    with pytest.raises(ContainerConfigError, match=r"unsupported fieldPath: spec\.bogus"):
        env_of(
            {
                "name": "c",
                "env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}],
            }
        )


def test_whole_label_map_is_formatted_like_the_downward_api() -> None:
    pod = make_pod({"name": "c"})
    assert (
        field_value(pod, "metadata.labels", node_ip="", pod_ip="")
        == 'app="ray"\nray.io/node-type="head"'
    )
    assert format_map({"b": 'q"\\\n', "a": "é"}) == 'a="é"\nb="q\\"\\\\\\n"'


def resource_env(
    container_resources: dict[str, Any], resource: str, divisor: str | None = None, **kw: Any
) -> str:
    ref: dict[str, Any] = {"resource": resource}
    if divisor is not None:
        ref["divisor"] = divisor
    env = env_of(
        {
            "name": "c",
            "resources": container_resources,
            "env": [{"name": "R", "valueFrom": {"resourceFieldRef": ref}}],
        },
        **kw,
    )
    return env["R"]


@pytest.mark.parametrize(
    ("resources", "resource", "divisor", "expected"),
    [
        ({"limits": {"cpu": "2"}}, "limits.cpu", None, "2"),
        ({"limits": {"cpu": "250m"}}, "limits.cpu", None, "1"),  # rounded up
        ({"limits": {"cpu": "250m"}}, "limits.cpu", "1m", "250"),
        ({"limits": {"cpu": "1500m"}}, "limits.cpu", "100m", "15"),
        ({"requests": {"cpu": "0.0001"}}, "requests.cpu", "1m", "1"),
        ({"limits": {"memory": "1Gi"}}, "limits.memory", None, str(2**30)),
        ({"limits": {"memory": "1Gi"}}, "limits.memory", "1Mi", "1024"),
        ({"limits": {"memory": "1G"}}, "limits.memory", "1Mi", "954"),  # 953.67 up
        ({"requests": {"memory": "100Mi"}}, "requests.memory", "1Mi", "100"),
        ({"limits": {"memory": "2Gi"}}, "requests.memory", "1Gi", "2"),  # request defaults to limit
        ({}, "requests.cpu", None, "0"),
        ({"limits": {"ephemeral-storage": "1Gi"}}, "limits.ephemeral-storage", "1Mi", "1024"),
    ],
)
def test_resource_field_refs(
    resources: dict[str, Any], resource: str, divisor: str | None, expected: str
) -> None:
    assert resource_env(resources, resource, divisor) == expected


def test_missing_limit_falls_back_to_node_allocatable() -> None:
    alloc = {"cpu": "8", "memory": "16Gi", "ephemeral-storage": "100Gi"}
    assert resource_env({}, "limits.cpu", node_allocatable=alloc) == "8"
    assert resource_env({}, "limits.memory", "1Gi", node_allocatable=alloc) == "16"
    assert resource_env({"limits": {"cpu": "1"}}, "limits.cpu", node_allocatable=alloc) == "1"
    assert resource_env({}, "limits.cpu") == "0"


def test_resource_field_ref_of_another_container() -> None:
    pod = make_pod(
        {
            "name": "main",
            "env": [
                {
                    "name": "R",
                    "valueFrom": {
                        "resourceFieldRef": {
                            "containerName": "side",
                            "resource": "limits.memory",
                            "divisor": "1Mi",
                        }
                    },
                }
            ],
        }
    )
    pod["spec"]["containers"].append({"name": "side", "resources": {"limits": {"memory": "64Mi"}}})
    env = container_env(
        pod, pod["spec"]["containers"][0], lookups=LOOKUPS, base_env={}, node_ip="", pod_ip=""
    )
    assert env == {"R": "64"}


def test_bad_resource_field_refs_are_config_errors() -> None:
    with pytest.raises(ContainerConfigError, match="unsupported container resource"):
        resource_env({}, "limits.gpu")
    with pytest.raises(ContainerConfigError, match="invalid divisor"):
        resource_env({"limits": {"cpu": "1"}}, "limits.cpu", "0")
    with pytest.raises(ValueError, match="container nope not found"):
        resource_value(
            make_pod({"name": "c"}), {}, {"containerName": "nope", "resource": "limits.cpu"}
        )


def test_configmap_and_secret_key_refs() -> None:
    env = env_of(
        {
            "name": "c",
            "env": [
                {"name": "M", "valueFrom": {"configMapKeyRef": {"name": "app", "key": "MODE"}}},
                {"name": "P", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "PASSWORD"}}},
                {"name": "T", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "TOKEN"}}},
                {
                    "name": "O1",
                    "valueFrom": {
                        "configMapKeyRef": {"name": "nope", "key": "k", "optional": True}
                    },
                },
                {
                    "name": "O2",
                    "valueFrom": {"configMapKeyRef": {"name": "app", "key": "k", "optional": True}},
                },
                {
                    "name": "O3",
                    "valueFrom": {"secretKeyRef": {"name": "creds", "key": "k", "optional": True}},
                },
            ],
        }
    )
    assert env["M"] == "fast" and env["P"] == "s3cret" and env["T"] == "new"
    assert "O1" not in env and "O2" not in env and "O3" not in env


@pytest.mark.parametrize(
    ("ref", "message"),
    [
        ({"configMapKeyRef": {"name": "nope", "key": "k"}}, 'configmap "nope" not found'),
        (
            {"configMapKeyRef": {"name": "app", "key": "k"}},
            "couldn't find key k in ConfigMap default/app",
        ),
        (
            {"configMapKeyRef": {"name": "app", "key": "BIN"}},
            "couldn't find key BIN in ConfigMap default/app",
        ),
        ({"secretKeyRef": {"name": "nope", "key": "k"}}, 'secret "nope" not found'),
        (
            {"secretKeyRef": {"name": "creds", "key": "k"}},
            "couldn't find key k in Secret default/creds",
        ),
    ],
)
def test_missing_key_refs_have_the_kubelets_words(ref: dict[str, Any], message: str) -> None:
    with pytest.raises(ContainerConfigError) as info:
        env_of({"name": "c", "env": [{"name": "X", "valueFrom": ref}]})
    assert info.value.message == message
    assert str(info.value) == message


def test_objects_are_fetched_once_per_container() -> None:
    calls: list[tuple[str, str]] = []

    def configmap(ns: str, name: str) -> dict[str, Any] | None:
        calls.append((ns, name))
        return CONFIGMAPS.get((ns, name))

    pod = make_pod(
        {
            "name": "c",
            "envFrom": [{"configMapRef": {"name": "app"}}],
            "env": [
                {"name": f"V{i}", "valueFrom": {"configMapKeyRef": {"name": "app", "key": "MODE"}}}
                for i in range(3)
            ],
        }
    )
    lookups = Lookups(configmap=configmap, secret=LOOKUPS.secret)
    container_env(
        pod, pod["spec"]["containers"][0], lookups=lookups, base_env={}, node_ip="", pod_ip=""
    )
    assert calls == [("default", "app")]


def test_invalid_base64_in_a_secret_is_a_config_error() -> None:
    SECRETS[("default", "broken")] = {"metadata": {"name": "broken"}, "data": {"K": "!!!"}}
    try:
        with pytest.raises(ContainerConfigError, match='secret "broken"'):
            env_of({"name": "c", "envFrom": [{"secretRef": {"name": "broken"}}]})
    finally:
        del SECRETS[("default", "broken")]


def test_undecodable_secret_bytes_survive() -> None:
    SECRETS[("default", "raw")] = {
        "metadata": {"name": "raw"},
        "data": {"K": base64.b64encode(b"\xffa").decode()},
    }
    try:
        env = env_of({"name": "c", "envFrom": [{"secretRef": {"name": "raw"}}]})
    finally:
        del SECRETS[("default", "raw")]
    assert env["K"].encode("utf-8", "surrogateescape") == b"\xffa"
