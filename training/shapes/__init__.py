"""Procedural shapes for the corpus, deterministic from a seed."""
