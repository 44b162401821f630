"""What every test shares: property tests without Hypothesis's per-example deadline (speed is
measured by the benchmarks in bench/; a loaded 2-core machine must not fail a test for being
slow)."""

from hypothesis import settings

settings.register_profile("strom", deadline=None)
settings.load_profile("strom")
