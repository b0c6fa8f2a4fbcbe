"""The ``lahar`` command."""
