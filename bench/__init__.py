"""Benchmarks run on demand: ``python -m bench <name>`` (or ``make bench NAME=<name>``)."""
