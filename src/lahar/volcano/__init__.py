"""Volcano's controllers and admission rules, re-implemented in Python.

``admission`` holds the validation and defaulting rules for vcjobs, Queues, PodGroups
and Pods (served both as embedded admission plugins and as an HTTPS webhook, see
``webhook``); ``jobs`` holds the vcjob controller's pure core (desired pods, PodGroup,
plugin objects and the lifecycle state machine).
"""
