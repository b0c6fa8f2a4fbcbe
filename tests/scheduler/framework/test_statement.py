"""Statement semantics: commit turns operations into decisions, discard undoes them."""

from __future__ import annotations

import numpy as np

from lahar.scheduler.api.task import TaskStatus
from lahar.scheduler.framework.conf import default_conf
from lahar.scheduler.framework.session import open_session
from lahar.scheduler.framework.statement import Statement
from lahar.scheduler.snapshot import build_cluster
from tests.scheduler.builders import node, pod, podgroup

S = TaskStatus


def session():
    objs = [
        node("n1", cpu="4"),
        podgroup("run", 1, phase="Running"),
        pod("run-0", "run", cpu="2", node_name="n1", phase="Pending"),  # Bound
        podgroup("new", 1, phase="Inqueue"),
        pod("new-0", "new", cpu="1"),
    ]
    ssn = open_session(build_cluster(objs), default_conf())
    return ssn, ssn.tasks_by_uid["uid-default-run-0"], ssn.tasks_by_uid["uid-default-new-0"]


def test_allocate_then_discard_restores_node_and_job() -> None:
    ssn, _bound, new = session()
    idle = ssn.nodes.idle.copy()
    stmt = Statement(ssn)
    stmt.allocate(new, 0)
    assert new.status == S.ALLOCATED
    assert ssn.nodes.idle[0][0] == idle[0][0] - 1000
    stmt.discard()
    assert new.status == S.PENDING and new.node is None
    np.testing.assert_array_equal(ssn.nodes.idle, idle)
    assert ssn.jobs["default/new"].allocated.sum() == 0


def test_commit_allocate_binds() -> None:
    ssn, _bound, new = session()
    stmt = Statement(ssn)
    stmt.allocate(new, 0)
    stmt.commit()
    assert ssn.binds == {new.uid: "n1"}
    assert new.status == S.BINDING


def test_evict_marks_releasing_and_discard_returns_running() -> None:
    ssn, bound, _new = session()
    assert bound.status == S.BOUND
    stmt = Statement(ssn)
    stmt.evict(bound, "preempt")
    assert bound.status == S.RELEASING
    assert ssn.nodes.releasing[0][0] == 2000
    stmt.discard()
    assert bound.status == S.RUNNING  # Volcano: unevict -> Running whatever it was
    assert ssn.nodes.releasing[0][0] == 0
    assert ssn.evictions == {}


def test_pipeline_commit_is_not_a_bind() -> None:
    ssn, bound, new = session()
    stmt = Statement(ssn)
    stmt.evict(bound, "preempt")
    stmt.pipeline(new, 0, True)
    assert ssn.nodes.pipelined[0][0] == 1000
    stmt.commit()
    assert ssn.binds == {}
    assert list(ssn.evictions) == [bound.uid]
    assert new.status == S.PIPELINED and ssn.nominations == {new.uid: "n1"}
