"""kuberay"""
