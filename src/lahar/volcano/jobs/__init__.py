"""The vcjob controller's pure core: from a Job, its pods and its PodGroup, compute what
should exist and what the status should say (see :func:`lahar.volcano.jobs.plan.plan`)."""

from lahar.volcano.jobs.plan import Plan, Request, plan

__all__ = ["Plan", "Request", "plan"]
