"""How each list and object inside a resource merges.

Strategic merge patch and server-side apply both need to know, for a field
reached by a chain of field names from the object root, whether a list is
atomic, a set of scalars or a map keyed by some of its items' fields, and
whether an object is a struct, a free-form map or an atomic value. Built-in
kinds take this from a hand-written table (:mod:`.builtin`); custom resources
take it from the ``x-kubernetes-*`` extensions in their OpenAPI v3 schema
(:func:`schema_list_semantics`). Both end up as the same tree of
:class:`FieldNode` values, queried by :class:`ListSemantics`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

ListKind = Literal["atomic", "set", "map"]
ObjectKind = Literal["struct", "map", "atomic"]


@dataclass(frozen=True)
class ListType:
    """How one list merges.

    ``kind`` and ``keys`` drive server-side apply (``x-kubernetes-list-type`` and
    ``x-kubernetes-list-map-keys``). ``strategy`` is the strategic-merge-patch
    ``patchStrategy`` (``merge``, ``retainKeys``, ``merge,retainKeys`` or empty for
    replace); when it merges a list of objects the merge key is ``keys[0]``.
    Some lists merge under SMP yet are atomic for apply (node addresses, job
    conditions), so ``keys`` may be set on an atomic list. ``key_defaults`` fills
    key fields the server would default (a port's ``protocol`` is ``TCP``).
    """

    kind: ListKind = "atomic"
    keys: tuple[str, ...] = ()
    strategy: str = ""
    key_defaults: tuple[tuple[str, Any], ...] = ()

    @property
    def smp_merges(self) -> bool:
        return "merge" in self.strategy.split(",")

    @property
    def merge_key(self) -> str:
        return self.keys[0] if self.keys else ""

    def key_of(self, item: Mapping[str, Any]) -> dict[str, Any] | None:
        """The list-map key of ``item`` (defaults filled), or None when a key is missing."""
        defaults = dict(self.key_defaults)
        out: dict[str, Any] = {}
        for name in self.keys:
            if name in item and item[name] is not None:
                out[name] = item[name]
            elif name in defaults:
                out[name] = defaults[name]
            else:
                return None
        return out


ATOMIC = ListType("atomic")
_MAX_CACHED_PATHS = 4096


@dataclass
class FieldNode:
    """What is known about one field: its list type, object kind and children."""

    list_type: ListType | None = None
    object_kind: ObjectKind = "struct"
    fields: dict[str, FieldNode] = field(default_factory=dict)
    values: FieldNode | None = None  # the node for every value of a free-form map

    def child(self, name: str) -> FieldNode | None:
        found = self.fields.get(name)
        if found is not None:
            return found
        return self.values


class ListSemantics:
    """Answers how the list or object at a path merges.

    A path is the chain of field names from the object root with list items
    skipped, e.g. ``("spec", "containers", "env")``. Unknown paths are atomic
    lists and struct objects, which is the Kubernetes default for both.
    """

    def __init__(self, root: FieldNode | None = None, default_object: ObjectKind = "struct"):
        self._root = root or FieldNode()
        self._default_object: ObjectKind = default_object
        # path -> node: every write walks its object and asks about each path (the
        # tree is never changed once built). Bounded: free-form map keys are paths too.
        self._nodes: dict[tuple[str, ...], FieldNode | None] = {}

    @property
    def root(self) -> FieldNode:
        return self._root

    def _node(self, path: tuple[str, ...]) -> FieldNode | None:
        try:
            return self._nodes[path]
        except KeyError:
            pass
        node = self._walk(path)
        if len(self._nodes) >= _MAX_CACHED_PATHS:
            self._nodes.clear()
        self._nodes[path] = node
        return node

    def _walk(self, path: tuple[str, ...]) -> FieldNode | None:
        node: FieldNode | None = self._root
        for name in path:
            if node is None:
                return None
            node = node.child(name)
        return node

    def resolve(self, path: tuple[str, ...]) -> ListType:
        """The list type of the list at ``path`` (atomic when unknown)."""
        node = self._node(path)
        if node is None or node.list_type is None:
            return ATOMIC
        return node.list_type

    def object_kind(self, path: tuple[str, ...]) -> ObjectKind:
        """Whether the object at ``path`` is a struct, a free-form map or atomic."""
        node = self._node(path)
        if node is None:
            return self._default_object
        return node.object_kind


# ---------------------------------------------------------------------------
# Building trees from compact literals (used by the built-in table).

Spec = Any  # ListType | "map" | "atomic" | dict | tuple[ListType | "map", Spec]


def build(spec: Spec) -> FieldNode:
    """Build a :class:`FieldNode` from a compact literal.

    ``{name: spec}`` is a struct; ``"map"`` a free-form map of scalars and
    ``("map", spec)`` one whose values follow ``spec``; ``"atomic"`` an atomic
    object; a :class:`ListType` a list of scalars or unknown items and
    ``(ListType, spec)`` a list whose items follow ``spec``.
    """
    if isinstance(spec, ListType):
        return FieldNode(list_type=spec)
    if spec == "map":
        return FieldNode(object_kind="map")
    if spec == "atomic":
        return FieldNode(object_kind="atomic")
    if isinstance(spec, dict):
        return FieldNode(fields={name: build(sub) for name, sub in spec.items()})
    if isinstance(spec, tuple) and len(spec) == 2:
        head, item = spec
        if head == "map":
            return FieldNode(object_kind="map", values=build(item))
        node = build(item)
        node.list_type = head
        return node
    raise ValueError(f"bad field spec: {spec!r}")


# ---------------------------------------------------------------------------
# Custom resources: read the structural schema.


def _from_schema(schema: Mapping[str, Any], depth: int = 0) -> FieldNode:
    node = FieldNode()
    if depth > 64 or not isinstance(schema, Mapping):
        return node
    kind = schema.get("type")
    if kind == "array" or ("items" in schema and kind is None):
        list_kind = schema.get("x-kubernetes-list-type", "atomic")
        if list_kind not in ("atomic", "set", "map"):
            list_kind = "atomic"
        keys = tuple(schema.get("x-kubernetes-list-map-keys") or ()) if list_kind == "map" else ()
        items = schema.get("items")
        defaults: list[tuple[str, Any]] = []
        if isinstance(items, Mapping):
            node = _from_schema(items, depth + 1)
            props = items.get("properties") or {}
            for key in keys:
                prop = props.get(key)
                if isinstance(prop, Mapping) and "default" in prop:
                    defaults.append((key, prop["default"]))
        node.list_type = ListType(list_kind, keys, "", tuple(defaults))  # type: ignore[arg-type]
        return node
    props = schema.get("properties")
    additional = schema.get("additionalProperties")
    if schema.get("x-kubernetes-map-type") == "atomic":
        node.object_kind = "atomic"
    elif isinstance(props, Mapping) and props:
        node.fields = {name: _from_schema(sub, depth + 1) for name, sub in props.items()}
    elif isinstance(additional, Mapping):
        node.object_kind = "map"
        node.values = _from_schema(additional, depth + 1)
    elif schema.get("x-kubernetes-preserve-unknown-fields") or additional is True:
        node.object_kind = "map"
        node.values = FieldNode(object_kind="map")
        node.values.values = node.values
    return node


def schema_list_semantics(openapi_v3_schema: dict) -> ListSemantics:
    """List semantics of a custom resource from its CRD ``openAPIV3Schema``.

    Lists default to atomic (as Kubernetes does for CRDs); ``metadata`` always
    follows ObjectMeta's rules whatever the schema says about it.
    """
    from lahar.apiserver.patch.builtin import object_meta_node

    root = _from_schema(openapi_v3_schema or {})
    root.object_kind = "struct"
    root.fields = dict(root.fields)
    root.fields["metadata"] = object_meta_node()
    return ListSemantics(root)
