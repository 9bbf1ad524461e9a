"""Shoal's discrete-event simulator: replays cluster traces through the production
scheduling core."""
