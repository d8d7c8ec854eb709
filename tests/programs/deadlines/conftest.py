"""conftest.py - the suite of tests/it/slow_suites.rs loads a hypothesis
profile of its own (5 examples, a 100 ms deadline), as real suites do from
their conftest."""
from hypothesis import settings

settings.register_profile("suite", max_examples=5, deadline=100)
settings.load_profile("suite")
