"""The client seam: the one place that builds Kubernetes clients, plus the controller runtime."""
