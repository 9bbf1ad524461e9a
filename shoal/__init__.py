"""Shoal: a scheduler for deep-learning jobs, from one GPU box to many clusters."""

__version__ = "0.1.0"
