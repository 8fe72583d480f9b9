"""Renderers: each turns a finished result into one medium (terminal, CSV/JSON, markdown, HTML)."""
