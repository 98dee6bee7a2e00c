"""Fixtures of the learning-loop tests (a settable clock and a pipeline on it)."""

from tests.support.learning import clock, pipeline  # noqa: F401  (fixtures, found by name)
