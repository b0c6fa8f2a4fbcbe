"""controllers"""
