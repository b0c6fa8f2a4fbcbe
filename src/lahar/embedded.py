"""Assembling the embedded cluster: lahar's CRDs and, later, its in-process components."""

from __future__ import annotations

from importlib import resources
from typing import Any

import yaml

from lahar.apiserver import crds
from lahar.apiserver.meta import meta
from lahar.apiserver.objects import WriteOptions
from lahar.apiserver.state import ServerState


def crd_manifests() -> list[dict[str, Any]]:
    """lahar's CRDs as shipped in the package (the same files as ``deploy/crds``)."""
    folder = resources.files("lahar") / "manifests" / "crds"
    docs: list[dict[str, Any]] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            docs.extend(d for d in yaml.safe_load_all(entry.read_text()) if d)
    return docs


def install_crds(state: ServerState) -> int:
    """Create or update lahar's CRDs in the store; returns how many were installed."""
    rt = state.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    assert rt is not None
    opts = WriteOptions(field_manager="lahar-up")
    count = 0
    for crd in crd_manifests():
        name = meta(crd)["name"]
        live = state.store.get(crds.CRD_KEY, "", name)
        if live is None:
            result = state.objects.create(rt, "", crd, opts)
        else:
            desired = {**live, "spec": crd["spec"]}
            result = state.objects.update(rt, "", name, desired, opts)
        crds.established(state, result.object)
        count += 1
    return count
