"""Dagster assets and asset checks, one module per track."""
