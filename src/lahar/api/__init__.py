"""Shared API vocabulary: quantities, resource vectors, typed helpers for lahar's kinds."""
