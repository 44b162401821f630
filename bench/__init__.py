"""Benchmarks that print figures (``.venv/bin/python bench/<name>.py``); never timed tests."""
