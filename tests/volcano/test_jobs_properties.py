"""Invariants of the vcjob core, checked over generated jobs and pod sets."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lahar.volcano import constants as c
from lahar.volcano.jobs import plan
from lahar.volcano.jobs.pods import build_pod, desired_pod_names
from lahar.volcano.jobs.state import decide
from tests.volcano.helpers import task
from tests.volcano.jobfix import NOW, podgroup, vcjob, with_phase

task_names = st.lists(
    st.from_regex(r"[a-z]([a-z0-9-]{0,6}[a-z0-9])?", fullmatch=True),
    min_size=1,
    max_size=4,
    unique=True,
)
STATES = ["Pending", "Running", "Succeeded", "Failed", "Unknown", "Terminating"]


@st.composite
def jobs(draw: st.DrawFn) -> dict:
    names = draw(task_names)
    tasks = [task(n, draw(st.integers(0, 5))) for n in names]
    return vcjob(*tasks)


@given(jobs())
def test_pod_names_are_unique_and_cover_every_replica(j: dict) -> None:
    wanted = desired_pod_names(j)
    total = sum(t["replicas"] for t in j["spec"]["tasks"])
    assert len(wanted) == total
    built = [build_pod(j, t, i)["metadata"]["name"] for t, i in wanted.values()]
    assert len(set(built)) == total
    assert set(built) == set(wanted)


@given(
    jobs(),
    st.data(),
    st.sampled_from(list(c.JOB_PHASES)),
    st.sampled_from(["", "Pending", "Inqueue", "Running"]),
)
def test_counters_add_up(j: dict, data: st.DataObject, phase: str, pg_phase: str) -> None:
    j = with_phase(j, phase)
    names = sorted(desired_pod_names(j).items(), key=lambda kv: kv[1])
    keep = data.draw(st.lists(st.booleans(), min_size=len(names), max_size=len(names)))
    current = []
    for (_, (t, i)), present in zip(names, keep, strict=True):
        if not present:
            continue
        pod = build_pod(j, t, i)
        state = data.draw(st.sampled_from(STATES))
        if state == "Terminating":
            pod["metadata"]["deletionTimestamp"] = "2026-11-29T00:00:00Z"
            state = "Running"
        pod["status"] = {"phase": state}
        current.append(pod)
    p = plan(j, current, podgroup(pg_phase), NOW)
    s = p.status
    counted = (
        s["pending"] + s["running"] + s["succeeded"] + s["failed"] + s["terminating"] + s["unknown"]
    )
    assert counted == len(current) + len(p.create_pods)
    per_task = sum(n for t in s["taskStatusCount"].values() for n in t["phase"].values())
    assert per_task == counted - s["terminating"]
    # Never both create and delete the same pod, never create one that exists.
    created = {pod["metadata"]["name"] for pod in p.create_pods}
    existing = {pod["metadata"]["name"] for pod in current}
    assert not created & existing
    assert set(p.delete_pods) <= existing
    assert p.phase in c.JOB_PHASES


@given(st.sampled_from(list(c.JOB_PHASES)), st.sampled_from([*c.USER_ACTIONS, c.SYNC_JOB]))
def test_finished_jobs_never_come_back_to_life(phase: str, action: str) -> None:
    decision = decide(phase, action, has_live_pods=True)
    if phase in (c.COMPLETED, c.TERMINATED, c.FAILED):
        assert decision.phase == phase and decision.kill == "soft"
    if decision.kill is None:  # only live jobs sync (create pods)
        assert phase in (c.PENDING, c.RUNNING, c.RESTARTING)


@given(jobs(), st.integers(0, 3), st.booleans())
def test_job_defaulting_is_idempotent_and_admits_sane_jobs(
    j: dict, max_retry: int, named: bool
) -> None:
    from lahar.volcano.admission import job_create_message, mutate_job
    from tests.volcano.helpers import lookup

    raw = {**j, "spec": {**j["spec"], "maxRetry": max_retry}}
    if not named:
        for t in raw["spec"]["tasks"]:
            t.pop("name", None)
    once = mutate_job(raw)
    assert mutate_job(once) == once
    assert once["spec"]["minAvailable"] == sum(t["minAvailable"] for t in once["spec"]["tasks"])
    assert job_create_message(once, lookup()) == ""
