"""Benchmarks: speed and accuracy tables, not tests. Each prints its tables and writes benchmarks/results/."""
