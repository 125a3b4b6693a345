"""Shipped artefacts: the dialect model (dialect.npz.gz, built by bench/train_dialect.py)."""
