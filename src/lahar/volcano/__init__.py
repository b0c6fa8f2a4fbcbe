"""volcano"""
