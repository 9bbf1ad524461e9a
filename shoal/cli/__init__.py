"""Shoal's command line (typer + rich)."""
