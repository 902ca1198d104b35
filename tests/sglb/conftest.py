"""Fixtures of the SGLB packet tests (helpers live in sglb_harness.py)."""

from sglb_harness import leaf, program  # noqa: F401  (fixtures)
