"""Scoring a run against a gold set: the engine that aligns rows, ranks them and computes per-query metric values."""
