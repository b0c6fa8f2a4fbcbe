"""The Volcano-compatible batch scheduler: a pure core over snapshots, and its daemon."""
