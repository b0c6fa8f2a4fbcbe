"""Allocate's node choice, cached per task template (Volcano's predicate cache, widened).

Why: the tasks of a gang are nearly always identical pods, and between two of them only
the node that took the previous one has changed. Recomputing every predicate and score
over every node for each task is O(nodes) NumPy work per task, the cost that dominated
large sessions. This cache keeps, per *template* (the request and the parts of the spec
that the node-local predicates and scores read: node selector and required and
preferred node affinity, tolerations, the non-zero request), three answers per node:
feasible (future-idle fit, pod count, cordon, node affinity, taints), fits in idle,
and the node-local scores (nodeorder's resource and node-affinity parts, binpack). It
brings them up to date from the
NodeTable's ``changed`` log, so a task costs O(rows changed since the template's last
use) plus the choice among the candidates, which follows
:func:`~lahar.scheduler.actions.allocate.choose_node` step for step (same rotating
offset, same tie-breaks drawn from the same generator).

The cache answers only when it gives exactly what the direct path gives, otherwise
:meth:`NodeChoiceCache.choose` returns :data:`FALLBACK` and allocate computes directly:

* the session's predicates are none or the ``predicates`` plugin, and its node orders
  any of ``nodeorder`` and ``binpack`` (other callbacks are not known to be node-local);
* the task has no pod (anti-)affinity terms and no topology spread constraints, and no
  pod on the nodes has (anti-)affinity terms: those answers depend on pods elsewhere;
* the task has no nominated node, and scores are not being explained.

When no node is feasible, the direct predicates run once more to record the reasons.
Every nodeorder part kept here is a whole number, so adding the normalised taint part
later gives the same sums as the direct path. ``Session.use_node_cache = False`` turns
the cache off; the tests compare both paths on random clusters.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from lahar.scheduler.actions.common import predicate_all, take_feasible
from lahar.scheduler.api.fit import FitErrors
from lahar.scheduler.api.resources import CPU, EPS, MEMORY, PODS, less_equal_rows
from lahar.scheduler.kernels import KernelState, NodeOrderWeights, PredicateSwitches, onerow
from lahar.scheduler.kernels.resources import GPU, pod_count_fails
from lahar.scheduler.kernels.scoring import BinpackWeights, binpack_score, row_local_score
from lahar.scheduler.kernels.state import ParsedPod
from lahar.scheduler.kernels.taints import unschedulable_fails
from lahar.scheduler.plugins.binpack import BinpackPlugin
from lahar.scheduler.plugins.nodeorder import NodeOrderPlugin
from lahar.scheduler.plugins.predicates import PredicatesPlugin

if TYPE_CHECKING:
    from lahar.scheduler.api.job import JobInfo
    from lahar.scheduler.api.task import TaskInfo
    from lahar.scheduler.framework.session import Session

FALLBACK: Any = object()
"""Returned by :meth:`NodeChoiceCache.choose` when the direct path must decide."""

SCALAR_ROWS = 16  # up to this many changed rows are refreshed one by one in Python
FULL_REFRESH = 4  # more than nodes / FULL_REFRESH changed rows: recompute every row
TEMPLATE_BYTES = 64 * 1024 * 1024  # memory budget for the per-template node arrays

_CACHES: weakref.WeakKeyDictionary[Session, NodeChoiceCache | None] = weakref.WeakKeyDictionary()


def node_cache(ssn: Session) -> NodeChoiceCache | None:
    """The session's cache, or ``None`` when its plugins or settings rule it out."""
    if not ssn.use_node_cache:
        return None
    if ssn in _CACHES:
        return _CACHES[ssn]
    cache = NodeChoiceCache.for_session(ssn)
    _CACHES[ssn] = cache
    return cache


def _owners(fns: list[Any], allowed: dict[type, str]) -> dict[type, Any] | None:
    """Each callback's plugin if all are ``allowed`` methods of distinct plugins, else None."""
    found: dict[type, Any] = {}
    for fn in fns:
        cls = type(getattr(fn, "__self__", None))
        method = allowed.get(cls)
        if (
            method is None
            or cls in found
            or getattr(fn, "__func__", None) is not getattr(cls, method)
        ):
            return None
        found[cls] = fn.__self__
    return found


class _Template:
    """The per-node answers for one template, valid up to ``seen`` in the change log."""

    __slots__ = (
        "affinity",
        "binpack",
        "binpack_sum",
        "binpack_terms",
        "cols",
        "feasible",
        "fits_idle",
        "local",
        "prefer",
        "prefer_score",
        "prefer_top",
        "req_cpu",
        "req_mem",
        "request",
        "scalar",
        "seen",
        "static",
        "task",
    )

    def __init__(self, task: TaskInfo, static: np.ndarray) -> None:
        self.task = task  # a representative: its request and parsed spec are the template's
        self.request = task.resreq
        self.req_cpu, self.req_mem = float(task.resreq[CPU]), float(task.resreq[MEMORY])
        relevant = task.resreq != 0
        relevant[CPU] = relevant[MEMORY] = True
        self.cols = [(int(c), float(task.resreq[c])) for c in np.flatnonzero(relevant)]
        self.static = static
        self.feasible = static
        self.fits_idle = static
        self.local: np.ndarray | None = None
        self.affinity: np.ndarray | None = None
        self.prefer: np.ndarray | None = None  # untolerated PreferNoSchedule taints per node
        self.prefer_top = 0
        self.prefer_score: np.ndarray | None = None
        self.binpack: np.ndarray | None = None  # the binpack score per node
        self.binpack_terms: list[tuple[int, int, float]] = []
        self.binpack_sum = 0
        self.scalar = True
        self.seen = -1


class NodeChoiceCache:
    def __init__(
        self,
        ssn: Session,
        state: KernelState | None,
        switches: PredicateSwitches | None,
        weights: NodeOrderWeights | None,
        packing: BinpackWeights | None = None,
    ) -> None:
        self.ssn = ssn
        self.table = ssn.nodes
        self.state = state
        self.switches = switches  # None: no predicates plugin
        self.weights = weights  # None: no nodeorder plugin
        self.packing = packing  # None: no binpack plugin
        self.templates: dict[tuple[Any, ...], _Template] = {}
        self._last_parsed: ParsedPod | None = None
        self._last_template: _Template | None = None
        self.limit = max(16, TEMPLATE_BYTES // (20 * max(self.table.size, 1)))
        alloc = self.table.allocatable
        self.cap_cpu: list[float] = alloc[:, CPU].tolist()
        self.cap_mem: list[float] = alloc[:, MEMORY].tolist()
        self.cap_pods: list[float] = alloc[:, PODS].tolist()
        self.gpu = self.table.space.index.get(GPU)
        self.count_pods = switches is not None and switches.pod_count

    @staticmethod
    def for_session(ssn: Session) -> NodeChoiceCache | None:
        preds = _owners(ssn.predicates.fns(), {PredicatesPlugin: "predicate"})
        # nodeorder's and binpack's totals are added in either order: IEEE does not mind
        orders = _owners(ssn.node_order.fns(), {NodeOrderPlugin: "score", BinpackPlugin: "score"})
        if preds is None or orders is None:
            return None
        predicates = preds.get(PredicatesPlugin)
        nodeorder, binpack = orders.get(NodeOrderPlugin), orders.get(BinpackPlugin)
        switches = predicates.switches if predicates is not None else None
        if switches is not None and switches.resources:
            return None
        state = (predicates or nodeorder).state if (predicates or nodeorder) else None
        weights = nodeorder.weights if nodeorder is not None else None
        packing = binpack.weights if binpack is not None else None
        return NodeChoiceCache(ssn, state, switches, weights, packing)

    # --- templates ---------------------------------------------------------------------

    def _template(self, task: TaskInfo) -> _Template | None:
        state = self.state
        if state is None:
            key: tuple[Any, ...] = (task.resreq.tobytes(),)
        else:
            p = state.parsed(task)
            if p.spread or p.affinity.any() or state.anti_pods or state.affine_pods:
                return None
            if p is self._last_parsed:  # a shared parse: same request, same spec parts
                return self._last_template
            try:
                tolerations = tuple(tuple(sorted(t.items())) for t in p.tolerations)
                key = (task.resreq.tobytes(), p.nonzero, p.constraints, p.preferred, tolerations)
                hash(key)
            except TypeError:
                return None
        tpl = self.templates.get(key)
        if tpl is None:
            if len(self.templates) >= self.limit:
                self.templates.clear()
            tpl = self.templates[key] = self._new(task)
        if state is not None:
            self._last_parsed, self._last_template = state.parsed(task), tpl
        return tpl

    def _new(self, task: TaskInfo) -> _Template:
        tpl = self._new_nodeorder(task)
        packing = self.packing
        if packing is not None:
            names = self.table.space.names
            for col in (task.resreq >= EPS).nonzero()[0]:
                w = packing.resources.get(names[col])
                if w is None:
                    continue
                tpl.binpack_sum += w
                if w:
                    tpl.binpack_terms.append((int(col), w, float(task.resreq[col])))
        return tpl

    def _new_nodeorder(self, task: TaskInfo) -> _Template:
        state, sw, w, n = self.state, self.switches, self.weights, self.table.size
        if state is None:
            return _Template(task, np.ones(n, dtype=bool))
        p = state.parsed(task)
        static = np.ones(n, dtype=bool)
        if sw is not None:
            static = ~unschedulable_fails(state.unschedulable, p.tolerations)
            if sw.node_affinity:
                static &= state.node_affinity.required_mask(p.constraints)
            if sw.taint_toleration:
                static &= ~state.taints.filter(p.tolerations)[0]
        tpl = _Template(task, static)
        if w is not None:
            if w.taint_toleration:
                counts = state.taints.prefer_counts(p.tolerations)
                if counts.any():
                    tpl.prefer = counts
                    # the taint score when the candidates include a node with the most
                    # such taints (nearly always): normalised against the global top
                    top = int(counts.max())
                    tpl.prefer_top = top
                    tpl.prefer_score = (100.0 - np.floor(counts * 100.0 / top)) * w.taint_toleration
            if w.node_affinity and p.preferred:
                tpl.affinity = state.node_affinity.preferred_score(p.preferred) * w.node_affinity
            gpu = self.gpu
            tpl.scalar = not (w.balanced_resource and gpu is not None and task.resreq[gpu] != 0)
        return tpl

    # --- keeping a template current --------------------------------------------------------

    def _refresh(self, tpl: _Template) -> None:
        changed = self.table.changed
        end = len(changed)
        if tpl.seen == end:
            return
        n = self.table.size
        count = end - tpl.seen
        if tpl.seen < 0 or FULL_REFRESH * count > n:
            self._rows(tpl, None)
        elif tpl.scalar and count <= SCALAR_ROWS:
            for i in set(changed[tpl.seen : end]):
                self._row(tpl, i)
        else:  # repeated rows are recomputed twice, which is cheaper than deduplicating
            self._rows(tpl, np.asarray(changed[tpl.seen : end], dtype=np.int64))
        tpl.seen = end

    def _rows(self, tpl: _Template, rows: np.ndarray | None) -> None:
        """Recompute the given rows (all when ``None``) with the direct path's kernels."""
        table, state, req = self.table, self.state, tpl.request
        sel: Any = slice(None) if rows is None else rows
        feasible = tpl.static[sel] & less_equal_rows(req, table.future[sel])
        if self.count_pods and state is not None:
            feasible &= ~pod_count_fails(state.pod_count[sel], table.allocatable[sel])
        fits_idle = less_equal_rows(req, table.idle[sel])
        local = None
        if self.weights is not None and state is not None:
            index = np.arange(table.size) if rows is None else rows
            local = row_local_score(state, tpl.task, index, self.weights)
        packed = None
        if self.packing is not None:
            alloc, used, names = table.allocatable, table.used, table.space.names
            packed = binpack_score(req, alloc, used, names, self.packing, rows)
        if rows is None:
            tpl.feasible, tpl.fits_idle = feasible, fits_idle
            tpl.local, tpl.binpack = local, packed
        else:
            tpl.feasible[rows] = feasible
            tpl.fits_idle[rows] = fits_idle
            if local is not None and tpl.local is not None:
                tpl.local[rows] = local
            if packed is not None and tpl.binpack is not None:
                tpl.binpack[rows] = packed

    def _row(self, tpl: _Template, i: int) -> None:
        """One row in plain Python, with the same arithmetic as the NumPy kernels."""
        table, state = self.table, self.state
        future = table.future[i].tolist()
        ok = bool(tpl.static[i])
        if ok:
            for c, v in tpl.cols:
                if not v - future[c] < EPS:
                    ok = False
                    break
        if ok and self.count_pods and state is not None:
            ok = not self.cap_pods[i] <= int(state.pod_count[i])
        tpl.feasible[i] = ok
        idle = table.idle[i].tolist()
        fits = True
        for c, v in tpl.cols:
            if not v - idle[c] < EPS:
                fits = False
                break
        tpl.fits_idle[i] = fits
        packing = self.packing
        if packing is not None and tpl.binpack is not None:
            tpl.binpack[i] = onerow.binpack(
                tpl.binpack_terms,
                tpl.binpack_sum,
                packing.weight,
                table.allocatable[i].tolist(),
                table.used[i].tolist(),
            )
        w = self.weights
        if w is None or state is None or tpl.local is None:
            return
        cap_cpu, cap_mem = self.cap_cpu[i], self.cap_mem[i]
        total = 0.0
        if w.least_requested or w.most_requested:
            nz_cpu, nz_mem = state.nonzero[i].tolist()
            own_cpu, own_mem = state.parsed(tpl.task).nonzero
            nz_cpu, nz_mem = nz_cpu + own_cpu, nz_mem + own_mem
            if w.least_requested:
                least = onerow.pair(
                    onerow.least(nz_cpu, cap_cpu), onerow.least(nz_mem, cap_mem), cap_cpu, cap_mem
                )
                total += least * w.least_requested
            if w.most_requested:
                most = onerow.pair(
                    onerow.most(nz_cpu, cap_cpu), onerow.most(nz_mem, cap_mem), cap_cpu, cap_mem
                )
                total += most * w.most_requested
        if w.balanced_resource:
            requested = state.requested[i].tolist()
            req_cpu = requested[CPU] + tpl.req_cpu
            req_mem = requested[MEMORY] + tpl.req_mem
            total += onerow.balanced(req_cpu, req_mem, cap_cpu, cap_mem) * w.balanced_resource
        if tpl.affinity is not None:
            total += float(tpl.affinity[i])
        tpl.local[i] = total

    # --- the choice ----------------------------------------------------------------------

    def choose(self, job: JobInfo, task: TaskInfo) -> Any:
        """``(node, fits idle)`` for ``task`` (``None`` after recording why none fits),
        or :data:`FALLBACK` when the direct path must decide."""
        ssn = self.ssn
        if ssn.score_log is not None or task.nominated_node:
            return FALLBACK
        tpl = self._template(task)
        if tpl is None:
            return FALLBACK
        self._refresh(tpl)
        feasible = take_feasible(ssn, tpl.feasible)
        if feasible.shape[0] == 0:
            job.fit_errors[task.uid] = FitErrors.from_filter(predicate_all(ssn, task))
            return None
        fits = feasible[tpl.fits_idle[feasible]]
        in_idle = fits.shape[0] > 0
        group = fits if in_idle else feasible
        k = group.shape[0]
        if k == 1:
            return int(group[0]), in_idle
        if tpl.local is None and tpl.binpack is None:  # no scores: every candidate ties
            return int(group[int(ssn.rng.integers(k))]), in_idle
        w = self.weights
        if tpl.local is not None:
            # nodeorder's total, exactly (whole numbers): then binpack's fractional score
            # is added with the one rounding the direct path makes
            scores = tpl.local[group]
            if w is not None and w.taint_toleration:
                counts = None if tpl.prefer is None else tpl.prefer[group]
                top = 0 if counts is None else int(counts.max())
                if counts is None or not top:  # no such taint among the candidates
                    scores = scores + 100.0 * w.taint_toleration
                elif top == tpl.prefer_top and tpl.prefer_score is not None:
                    scores = scores + tpl.prefer_score[group]
                else:
                    scores = scores + (100.0 - np.floor(counts * 100.0 / top)) * w.taint_toleration
            if tpl.binpack is not None:
                scores = scores + tpl.binpack[group]
        else:
            assert tpl.binpack is not None
            scores = tpl.binpack[group]
        best = (scores == scores.max()).nonzero()[0]
        if best.shape[0] == 1:
            return int(group[best[0]]), in_idle
        return int(group[best[int(ssn.rng.integers(best.shape[0]))]]), in_idle
