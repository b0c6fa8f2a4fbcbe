"""The embedded Kubernetes-compatible API server, stored in SQLite."""
