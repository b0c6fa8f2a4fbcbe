"""ConfigMaps and Secrets: keys, base64, stringData, types, immutability."""

from __future__ import annotations

import base64
import copy

from lahar.apiserver.builtins import default

from .helpers import RT, context, create, update


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def secret(**fields: object) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default"},
        **fields,
    }


def test_secret_defaults_and_string_data() -> None:
    out = default(secret(data={"a": b64("1")}, stringData={"b": "two"}), RT["Secret"], context())
    assert out["type"] == "Opaque"
    assert out["data"] == {"a": b64("1"), "b": b64("two")}
    assert "stringData" not in out
    assert create(secret(stringData={"b": "two"}), "Secret") == []


def test_secret_keys_and_values() -> None:
    out = create(secret(data={"bad/key": b64("x"), "ok": "!!notbase64"}), "Secret")
    assert out[0].startswith(
        'data[bad/key]: Invalid value: "bad/key": a valid config key must consist'
    )
    assert (
        out[1]
        == 'data[ok]: Invalid value: "<secret contents redacted>": must be a base64-encoded string'
    )


def test_secret_types() -> None:
    assert create(secret(type="kubernetes.io/tls", data={"tls.crt": b64("c")}), "Secret") == [
        "data[tls.key]: Required value"
    ]
    assert create(secret(type="kubernetes.io/basic-auth"), "Secret") == [
        "data[username]: Required value",
        "data[password]: Required value",
    ]
    assert create(secret(type="kubernetes.io/service-account-token"), "Secret") == [
        "metadata.annotations[kubernetes.io/service-account.name]: Required value"
    ]


def test_secret_immutability() -> None:
    old = default(secret(data={"a": b64("1")}, immutable=True), RT["Secret"], context())
    new = copy.deepcopy(old)
    new["data"]["a"] = b64("2")
    new["type"] = "kubernetes.io/tls"
    out = update(new, old, "Secret")
    assert out[:2] == [
        'type: Invalid value: "kubernetes.io/tls": field is immutable',
        "data: Forbidden: field is immutable when `immutable` is set",
    ]
    relabel = copy.deepcopy(old)
    relabel["metadata"]["labels"] = {"a": "b"}
    assert update(relabel, old, "Secret") == []


def cm(**fields: object) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default"},
        **fields,
    }


def test_config_maps() -> None:
    assert create(cm(data={"app.conf": "x=1", "KEY_2": ""}), "ConfigMap") == []
    out = create(cm(data={"..": "x", "dup": "x"}, binaryData={"dup": b64("y")}), "ConfigMap")
    assert out == [
        "data[..]: Invalid value: \"..\": must not be '..'",
        'data[dup]: Invalid value: "dup": duplicate of key present in binaryData',
    ]
    assert create(cm(data={"big": "x" * (1024 * 1024 + 1)}), "ConfigMap") == [
        "[]: Too long: may not be more than 1048576 bytes"
    ]
    old = cm(data={"a": "1"}, immutable=True)
    new = cm(data={"a": "2"})
    assert update(new, old, "ConfigMap") == [
        "immutable: Forbidden: field is immutable when `immutable` is set",
        "data: Forbidden: field is immutable when `immutable` is set",
    ]
