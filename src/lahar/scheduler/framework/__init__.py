"""The scheduling framework: configuration, session, statements, callback registries.

Mechanism only: how plugins plug in and how their callbacks combine across tiers. The
policies live in ``scheduler/plugins`` and the scheduling loops in ``scheduler/actions``.
"""
