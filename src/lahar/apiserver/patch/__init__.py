"""Patch engines of the embedded API server: pure functions over JSON objects.

* :func:`apply_json_patch` — RFC 6902 (``application/json-patch+json``);
* :func:`apply_merge_patch` — RFC 7386 (``application/merge-patch+json``);
* :func:`apply_strategic_merge_patch` — Kubernetes strategic merge patch for
  built-in kinds (``application/strategic-merge-patch+json``);
* :func:`server_side_apply` and :func:`record_update` — field ownership
  (``metadata.managedFields``) for apply and for every other write.

List and map merge rules come from :class:`ListSemantics`, built for built-in
kinds by :func:`builtin_list_semantics` and for custom resources from their
schema by :func:`schema_list_semantics`. Nothing here does I/O or mutates its
inputs; errors are :class:`~lahar.apiserver.errors.APIError`.
"""

from lahar.apiserver.patch.apply import server_side_apply
from lahar.apiserver.patch.builtin import builtin_list_semantics, is_builtin
from lahar.apiserver.patch.json_patch import apply_json_patch
from lahar.apiserver.patch.lists import ListSemantics, ListType, schema_list_semantics
from lahar.apiserver.patch.managed import record_update
from lahar.apiserver.patch.merge import apply_merge_patch
from lahar.apiserver.patch.smp import apply_strategic_merge_patch

__all__ = [
    "ListSemantics",
    "ListType",
    "apply_json_patch",
    "apply_merge_patch",
    "apply_strategic_merge_patch",
    "builtin_list_semantics",
    "is_builtin",
    "record_update",
    "schema_list_semantics",
    "server_side_apply",
]
