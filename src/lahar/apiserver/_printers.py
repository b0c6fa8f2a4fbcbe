"""The built-in kinds' table printers, as kube-apiserver 1.32 runs them.

Each printer gives the cells of one row for one object, always in the server's
``Wide`` form (kubectl hides ``priority > 0`` columns itself). Column names,
types and cell rules follow Kubernetes' ``pkg/printers/internalversion``:
``READY 1/2``, ``STATUS`` computed from container states (``ContainerCreating``,
``CrashLoopBackOff``, ``Init:0/1``, ``Completed``, ``Terminating`` ...),
``RESTARTS 3 (5m ago)``, ``<none>`` placeholders. Kept apart from ``tables.py``
(Table assembly, CRD columns) so each stays small; it imports nothing from it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

Obj = dict[str, Any]
NAME_DOC = "Name must be unique within a namespace."
AGE_DOC = "CreationTimestamp is when the object was created, shown as its age."


def _col(name: str, type_: str = "string", doc: str = "", priority: int = 0) -> Obj:
    fmt = "name" if name == "Name" else ""
    return {"name": name, "type": type_, "format": fmt, "description": doc, "priority": priority}


NAME, AGE = _col("Name", doc=NAME_DOC), _col("Age", doc=AGE_DOC)

# --- time ------------------------------------------------------------------------------


def human_duration(d: timedelta) -> str:
    """Kubernetes' ``duration.HumanDuration``: two significant units at most."""
    seconds = int(d.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes, hours = seconds // 60, seconds // 3600
    days, years = hours // 24, hours // (24 * 365)

    def two(big: int, unit: str, small: int, small_unit: str) -> str:
        return f"{big}{unit}" if small == 0 else f"{big}{unit}{small}{small_unit}"

    if minutes < 10:
        return two(minutes, "m", seconds % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return two(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return two(days, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return two(years, "y", days % 365, "d")
    return f"{years}y"


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (``Time`` or ``MicroTime``); None when absent."""
    if not value or not isinstance(value, str):
        return None
    when = datetime.fromisoformat(value.replace("z", "Z"))
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def since(value: Any, now: datetime) -> str:
    """``translateTimestampSince``: the age of a timestamp, ``<unknown>`` if unset."""
    try:
        when = parse_time(value)
    except ValueError:
        return "<invalid>"
    if when is None:
        return "<unknown>"
    return human_duration((now if now.tzinfo else now.replace(tzinfo=UTC)) - when)


# --- formatting helpers -------------------------------------------------------------------


def _name(obj: Obj) -> str:
    return obj.get("metadata", {}).get("name", "")


def _age(obj: Obj, now: datetime) -> str:
    return since(obj.get("metadata", {}).get("creationTimestamp"), now)


def format_labels(labels: dict[str, str] | None) -> str:
    """``labels.FormatLabels``: sorted ``k=v`` pairs, ``<none>`` when empty."""
    return ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items())) or "<none>"


def format_selector(selector: Obj | None) -> str:
    """``metav1.FormatLabelSelector``: requirements sorted by key, ``<none>`` when empty."""
    if selector is None:
        return "<none>"
    parts = [(k, f"{k}={v}") for k, v in (selector.get("matchLabels") or {}).items()]
    for expr in selector.get("matchExpressions") or []:
        key, op = expr.get("key", ""), expr.get("operator")
        listed = ",".join(sorted(expr.get("values") or []))
        text = {"In": f"{key} in ({listed})", "NotIn": f"{key} notin ({listed})",
                "Exists": key, "DoesNotExist": f"!{key}"}.get(op, "<error>")  # fmt: skip
        parts.append((key, text))
    return ",".join(text for _, text in sorted(parts)) or "<none>"


def _true(conditions: list[Obj] | None, type_: str) -> bool:
    return any(c.get("type") == type_ and c.get("status") == "True" for c in conditions or [])


# --- pods -------------------------------------------------------------------------------


def _terminated_reason(term: Obj, prefix: str = "") -> str:
    if term.get("reason"):
        return prefix + term["reason"]
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def print_pod(pod: Obj, now: datetime) -> list[Any]:
    spec, status = pod.get("spec", {}), pod.get("status", {})
    phase = status.get("phase", "")
    reason = status.get("reason") or phase
    conditions = status.get("conditions") or []
    gated = [c for c in conditions if c.get("type") == "PodScheduled"]
    reason = (
        "SchedulingGated" if any(c.get("reason") == "SchedulingGated" for c in gated) else reason
    )
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    sidecars = {n for n, c in init_specs.items() if c.get("restartPolicy") == "Always"}
    total, ready = len(spec.get("containers") or []) + len(sidecars), 0
    restarts = sidecar_restarts = 0
    last_restart: datetime | None = None
    last_sidecar_restart: datetime | None = None

    def finished(cs: Obj) -> datetime | None:
        return parse_time(((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt"))

    initializing = False
    init_statuses = status.get("initContainerStatuses") or []
    for i, cs in enumerate(init_statuses):
        restarts += cs.get("restartCount", 0)
        done = finished(cs)
        last_restart = max(filter(None, (last_restart, done)), default=None)
        if cs.get("name") in sidecars:
            sidecar_restarts += cs.get("restartCount", 0)
            last_sidecar_restart = max(filter(None, (last_sidecar_restart, done)), default=None)
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if term is not None and term.get("exitCode", 0) == 0:
            continue
        if cs.get("name") in sidecars and cs.get("started"):
            ready += 1 if cs.get("ready") else 0
            continue
        if term is not None:
            reason = _terminated_reason(term, "Init:")
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _true(conditions, "Initialized"):
        restarts, last_restart, has_running = sidecar_restarts, last_sidecar_restart, False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += cs.get("restartCount", 0)
            last_restart = max(filter(None, (last_restart, finished(cs))), default=None)
            state = cs.get("state") or {}
            waiting, term = state.get("waiting"), state.get("terminated")
            if waiting and waiting.get("reason"):
                reason = waiting["reason"]
            elif term is not None:
                reason = _terminated_reason(term)
            elif cs.get("ready") and state.get("running") is not None:
                has_running, ready = True, ready + 1
        if reason == "Completed" and has_running:
            reason = "Running" if _true(conditions, "Ready") else "NotReady"

    deleting = pod.get("metadata", {}).get("deletionTimestamp")
    if deleting and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restart_text = str(restarts)
    if restarts and last_restart is not None:
        restart_text = f"{restarts} ({human_duration(now - last_restart)} ago)"

    ips = [p.get("ip") for p in status.get("podIPs") or [] if p.get("ip")]
    gates = spec.get("readinessGates") or []
    first = {}  # the first condition of each type decides a readiness gate
    for c in conditions:
        first.setdefault(c.get("type"), c.get("status"))
    true = sum(1 for g in gates if first.get(g.get("conditionType")) == "True")
    return [
        _name(pod), f"{ready}/{total}", reason, restart_text, _age(pod, now),
        (ips[0] if ips else status.get("podIP")) or "<none>", spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>", f"{true}/{len(gates)}" if gates else "<none>",
    ]  # fmt: skip


# --- the other built-in kinds -------------------------------------------------------------


def print_node(node: Obj, now: datetime) -> list[Any]:
    status, info = node.get("status", {}), node.get("status", {}).get("nodeInfo", {})
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    states = [("Ready" if c.get("status") == "True" else "NotReady") for c in ready[-1:]]
    states = states or ["Unknown"]
    if node.get("spec", {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for key, value in (node.get("metadata", {}).get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key[24:]:
            roles.add(key[24:])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)

    def address(kind: str) -> str:
        found = [a.get("address") for a in status.get("addresses") or [] if a.get("type") == kind]
        return found[0] if found else "<none>"

    return [
        _name(node), ",".join(states), ",".join(sorted(roles)) or "<none>", _age(node, now),
        info.get("kubeletVersion", ""), address("InternalIP"), address("ExternalIP"),
        info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]  # fmt: skip


def _service_external_ip(svc: Obj) -> str:
    spec, type_ = svc.get("spec", {}), svc.get("spec", {}).get("type", "ClusterIP")
    external = spec.get("externalIPs") or []
    if type_ in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if type_ == "LoadBalancer":
        ingress = (svc.get("status", {}).get("loadBalancer") or {}).get("ingress") or []
        lb = [i.get("ip") or i.get("hostname") for i in ingress if i.get("ip") or i.get("hostname")]
        return ",".join(lb + external) or "<pending>"
    if type_ == "ExternalName":
        return spec.get("externalName", "")
    return "<unknown>"


def print_service(svc: Obj, now: datetime) -> list[Any]:
    spec = svc.get("spec", {})
    ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    ports = []
    for port in spec.get("ports") or []:
        node_port = f":{port['nodePort']}" if port.get("nodePort") else ""
        ports.append(f"{port.get('port')}{node_port}/{port.get('protocol', 'TCP')}")
    return [
        _name(svc), spec.get("type", "ClusterIP"), ips[0] if ips else "<none>",
        _service_external_ip(svc), ",".join(ports) or "<none>", _age(svc, now),
        format_labels(spec.get("selector")),
    ]  # fmt: skip


def format_endpoints(endpoints: Obj, limit: int = 3) -> str:
    """Up to three ``ip:port`` pairs, then ``+ N more...``; ``<none>`` without subsets."""
    subsets = endpoints.get("subsets") or []
    if not subsets:
        return "<none>"
    shown: list[str] = []
    count = 0
    for subset in subsets:
        addresses = [a.get("ip", "") for a in subset.get("addresses") or []]
        for port in subset.get("ports") or [None]:
            count += len(addresses)
            for ip in addresses:
                if len(shown) < limit:
                    host = f"[{ip}]" if ":" in ip else ip
                    shown.append(ip if port is None else f"{host}:{port.get('port')}")
    text = ",".join(shown)
    return f"{text} + {count - limit} more..." if count > limit else text


def print_event(ev: Obj, now: datetime) -> list[Any]:
    first = since(ev.get("firstTimestamp") or ev.get("eventTime"), now)
    last = since(ev["lastTimestamp"], now) if ev.get("lastTimestamp") else first
    count = ev.get("count") or 1
    if ev.get("series"):
        last = since(ev["series"].get("lastObservedTime"), now)
        count = ev["series"].get("count", 0)
    involved, source = ev.get("involvedObject") or {}, ev.get("source") or {}
    kind = (involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    component = source.get("component") or ev.get("reportingController") or ""
    host = source.get("host") or ev.get("reportingInstance") or ""
    return [
        last, ev.get("type", ""), ev.get("reason", ""), target, involved.get("fieldPath", ""),
        f"{component}, {host}" if host else component, (ev.get("message") or "").strip(),
        first, count, _name(ev),
    ]  # fmt: skip


def print_job(job: Obj, now: datetime) -> list[Any]:
    spec, status = job.get("spec", {}), job.get("status", {})
    succeeded = status.get("succeeded", 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif (spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    start, end = parse_time(status.get("startTime")), parse_time(status.get("completionTime"))
    duration = "" if start is None else human_duration((end or now) - start)
    conditions = status.get("conditions")
    state = next(
        (
            name
            for name, cond in (("Complete", "Complete"), ("Failed", "Failed"))
            if _true(conditions, cond)
        ),
        None,
    )
    if state is None and job.get("metadata", {}).get("deletionTimestamp"):
        state = "Terminating"
    for cond in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        state = state or (cond if _true(conditions, cond) else None)
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return [
        _name(job), state or "Running", completions, duration, _age(job, now),
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers), format_selector(spec.get("selector")),
    ]  # fmt: skip


Printer = Callable[[Obj, datetime], list[Any]]


def _simple(*cells: Callable[[Obj], Any]) -> Printer:
    """A printer of ``Name``, the given cells, then ``Age``."""
    return lambda obj, now: [_name(obj), *(cell(obj) for cell in cells), _age(obj, now)]


# fmt: off
POD_COLUMNS = [
    NAME, _col("Ready", doc="The number of ready containers out of all containers."),
    _col("Status", doc="The pod phase, or the reason a container or the pod is not running."),
    _col("Restarts", doc="Container restarts, with the age of the last one."), AGE,
    _col("IP", doc="The pod's first IP address.", priority=1),
    _col("Node", doc="The node the pod is bound to.", priority=1),
    _col("Nominated Node", doc="The node preemption made room on.", priority=1),
    _col("Readiness Gates", doc="Readiness gates that are true, out of all.", priority=1),
]
NODE_COLUMNS = [
    NAME, _col("Status", doc="Ready or NotReady, and SchedulingDisabled when cordoned."),
    _col("Roles", doc="Roles from the node-role.kubernetes.io/* labels."), AGE,
    _col("Version", doc="The kubelet version the node reports."),
    _col("Internal-IP", doc="The node's first InternalIP address.", priority=1),
    _col("External-IP", doc="The node's first ExternalIP address.", priority=1),
    _col("OS-Image", doc="The operating system image the node reports.", priority=1),
    _col("Kernel-Version", doc="The kernel version the node reports.", priority=1),
    _col("Container-Runtime", doc="The container runtime the node reports.", priority=1),
]
PRINTERS: dict[str, tuple[list[Obj], Printer]] = {
    "pods": (POD_COLUMNS, print_pod),
    "nodes": (NODE_COLUMNS, print_node),
    "namespaces": (
        [NAME, _col("Status", doc="The namespace phase: Active or Terminating."), AGE],
        _simple(lambda o: o.get("status", {}).get("phase", "")),
    ),
    "services": (
        [NAME, _col("Type", doc="ClusterIP, NodePort, LoadBalancer or ExternalName."),
         _col("Cluster-IP", doc="The service's first cluster IP."),
         _col("External-IP", doc="External or load-balancer addresses."),
         _col("Port(s)", doc="port[:nodePort]/protocol of each port."), AGE,
         _col("Selector", doc="The pod selector of the service.", priority=1)],
        print_service,
    ),
    "endpoints": (
        [NAME, _col("Endpoints", doc="Ready addresses and ports, the first three."), AGE],
        _simple(format_endpoints),
    ),
    "configmaps": (
        [NAME, _col("Data", "integer", "The number of data and binaryData keys."), AGE],
        _simple(lambda o: len(o.get("data") or {}) + len(o.get("binaryData") or {})),
    ),
    "secrets": (
        [NAME, _col("Type", doc="The secret type."),
         _col("Data", "integer", "The number of keys."), AGE],
        _simple(lambda o: o.get("type", ""), lambda o: len(o.get("data") or {})),
    ),
    "serviceaccounts": (
        [NAME, _col("Secrets", "integer", "The number of secrets listed."), AGE],
        _simple(lambda o: len(o.get("secrets") or [])),
    ),
    "events": (
        [_col("Last Seen", doc="The age of the latest occurrence."),
         _col("Type", doc="Normal or Warning."), _col("Reason", doc="Why the event happened."),
         _col("Object", doc="kind/name of the object involved."),
         _col("Subobject", doc="The field path within the object.", priority=1),
         _col("Source", doc="The component (and host) that reported it.", priority=1),
         _col("Message", doc="What happened."),
         _col("First Seen", doc="The age of the first occurrence.", priority=1),
         _col("Count", doc="How many times it happened.", priority=1),
         {**NAME, "priority": 1}],
        print_event,
    ),
    "leases.coordination.k8s.io": (
        [NAME, _col("Holder", doc="The current holder's identity."), AGE],
        _simple(lambda o: o.get("spec", {}).get("holderIdentity") or ""),
    ),
    "jobs.batch": (
        [NAME, _col("Status", doc="Complete, Failed, Running, Suspended, ..."),
         _col("Completions", doc="Succeeded pods out of the completions wanted."),
         _col("Duration", doc="How long the job ran or has been running."), AGE,
         _col("Containers", doc="Container names of the pod template.", priority=1),
         _col("Images", doc="Container images of the pod template.", priority=1),
         _col("Selector", doc="The job's pod selector.", priority=1)],
        print_job,
    ),
    "priorityclasses.scheduling.k8s.io": (
        [NAME, _col("Value", "integer", "The priority pods of this class get."),
         _col("Global-Default", "boolean", "Whether pods without a class get this one."), AGE,
         _col("PreemptionPolicy", doc="Whether these pods may preempt lower ones.")],
        lambda o, now: [_name(o), o.get("value", 0), bool(o.get("globalDefault")), _age(o, now),
                        o.get("preemptionPolicy") or "PreemptLowerPriority"],
    ),
}
# fmt: on
