"""Pieces every sub-command shares."""

from __future__ import annotations


class UsageError(Exception):
    """A user mistake on the command line or in an input file: message, exit code 2."""
