"""Hypothesis settings for the property-based tests.

The default profile is derandomized: every run draws the same examples, so
``make test`` on a student's laptop, in CI and here gives the same verdict.
``HYPOTHESIS_PROFILE=explore make test`` draws fresh random examples on
every run, to hunt for new counterexamples.
"""

import os

from hypothesis import settings

settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))
