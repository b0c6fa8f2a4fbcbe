"""Object names the operator derives: pods, services, random suffixes, FQDNs.

KubeRay names children after their parent plus a 5-character suffix drawn from the
Kubernetes random alphabet. The operator draws that suffix at random; ``lahar render``
needs the same shape but reproducible output, so every suffix comes from a
:class:`Suffixes` source that is either seeded (deterministic, keyed by what is
being named) or random.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import Any

from lahar.kuberay import constants as c

# Kubernetes' random-string alphabet (no vowels, no 0/1/3 look-alikes).
ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MAX_PREFIX = 50  # 63 - len("-worker-") - 5
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


class Suffixes:
    """Source of 5-character name suffixes.

    With a seed, the suffix for a given key is a pure function of (seed, key), so the
    same input renders the same names in any order. Without one (``seed=None``),
    suffixes are random, as in the running operator.
    """

    def __init__(self, seed: int | None = 0) -> None:
        self.seed = seed

    def suffix(self, key: str, length: int = 5) -> str:
        if self.seed is None:
            return "".join(secrets.choice(ALPHABET) for _ in range(length))
        digest = hashlib.sha256(f"{self.seed}\x00{key}".encode()).digest()
        return "".join(ALPHABET[b % len(ALPHABET)] for b in digest[:length])

    def uid(self, key: str) -> str:
        """A UUID-shaped id for objects the server would number (render only)."""
        if self.seed is None:
            import uuid

            return str(uuid.uuid4())
        h = hashlib.sha256(f"{self.seed}\x00uid\x00{key}".encode()).hexdigest()
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def is_dns1035_label(name: str) -> bool:
    return len(name) <= 63 and bool(_DNS1035.match(name))


def check_name(name: str) -> str:
    """KubeRay's CheckName: keep the last 50 characters; never start with a digit or
    punctuation (the first character becomes ``r``)."""
    if len(name) > _MAX_PREFIX:
        name = name[len(name) - _MAX_PREFIX :]
    if name and (name[0].isdigit() or not name[0].isalnum()):
        name = "r" + name[1:]
    return name


def check_label(value: str) -> str:
    """KubeRay's CheckLabel: keep the last 63 characters, no leading punctuation."""
    if len(value) > 63:
        value = value[len(value) - 63 :]
    if value and not value[0].isalnum():
        value = "r" + value[1:]
    return value


def pod_generate_name(prefix: str, node_type: str) -> str:
    """``<prefix>-head-`` / ``<prefix>-worker-``, the prefix cut to 50, lower-cased."""
    return f"{prefix[:_MAX_PREFIX]}-{node_type}-".lower()


def head_service_name(cluster_name: str, cluster_spec: dict[str, Any]) -> str:
    custom = (
        ((cluster_spec.get("headGroupSpec") or {}).get("headService") or {}).get("metadata") or {}
    ).get("name")
    return custom or f"{cluster_name}-head-svc"


def fqdn(service: str, namespace: str, domain: str = c.CLUSTER_DOMAIN) -> str:
    return f"{service}.{namespace}.svc.{domain}"


def headless_service_name(cluster_name: str) -> str:
    return f"{cluster_name}-headless"


def serve_service_name(cluster_name: str) -> str:
    return f"{cluster_name}-serve-svc"


def podgroup_name(owner: dict[str, Any]) -> str:
    """``ray-<name>-pg``; a RayJob's cluster points at its RayJob's PodGroup."""
    meta = owner.get("metadata") or {}
    labels = meta.get("labels") or {}
    name = meta.get("name", "")
    if labels.get(c.ORIGIN_CRD_LABEL) == "RayJob" and labels.get(c.ORIGIN_NAME_LABEL):
        name = labels[c.ORIGIN_NAME_LABEL]
    return f"ray-{name}-pg"


def autoscaler_service_account(cluster: dict[str, Any]) -> str:
    """The head pod's ServiceAccount: the template's own, else the cluster name."""
    spec = (cluster.get("spec") or {}).get("headGroupSpec") or {}
    template_sa = ((spec.get("template") or {}).get("spec") or {}).get("serviceAccountName")
    return check_name(template_sa or cluster["metadata"]["name"])
