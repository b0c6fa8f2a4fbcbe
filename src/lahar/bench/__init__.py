"""Benchmarks behind ``lahar bench``: each prints one JSON object of figures."""
