"""Kubernetes protobuf request bodies, decoded into the JSON dicts lahar handles.

kubectl's typed commands (``kubectl create configmap|secret|namespace|job|...``)
send their bodies as ``application/vnd.kubernetes.protobuf`` and never retry
with JSON, so the API server has to read that encoding. Answers can stay JSON.

A body is the magic ``k8s\\x00`` followed by a ``runtime.Unknown`` envelope
whose TypeMeta names the object's ``apiVersion``/``kind`` and whose ``raw`` is
the object's own message. :func:`decode` returns the object as the dict a JSON
client would have sent for the same Go object: same keys, RFC 3339 times,
base64 bytes, quantity strings, and zero values dropped where ``omitempty``
would drop them (the exact rule is in :mod:`.decoder`).

Errors are API errors: a malformed body is a 400 ``BadRequest``; a kind the
table does not cover, or an envelope with a content encoding, is a 415
``UnsupportedMediaType``.
"""

from __future__ import annotations

from typing import Any

from lahar.apiserver.errors import bad_request
from lahar.apiserver.protobuf.decoder import PROTOBUF_CONTENT_TYPE, decode_envelope
from lahar.apiserver.protobuf.schema import supported_kinds

MAGIC = b"k8s\x00"

__all__ = ["MAGIC", "PROTOBUF_CONTENT_TYPE", "decode", "is_protobuf", "supported_kinds"]


def is_protobuf(content_type: str) -> bool:
    """Whether a ``Content-Type`` header names the Kubernetes protobuf encoding."""
    return content_type.split(";", 1)[0].strip().lower() == PROTOBUF_CONTENT_TYPE


def decode(body: bytes) -> dict[str, Any]:
    """Decode a protobuf request body into the object's JSON dict."""
    if not body.startswith(MAGIC):
        raise bad_request("protobuf request body does not start with the k8s\\x00 magic prefix")
    try:
        return decode_envelope(body[4:])
    except RecursionError:
        raise bad_request("protobuf request body is nested too deeply") from None
