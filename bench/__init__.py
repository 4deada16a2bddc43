"""Benchmarks and the reference implementations they compare against."""
