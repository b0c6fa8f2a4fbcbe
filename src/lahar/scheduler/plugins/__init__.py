"""Scheduler plugins; see :mod:`lahar.scheduler.plugins.registry` for how they are found."""
