"""Speed, memory and load measurements; each runs from the checkout's root as `.venv/bin/python -m benchmarks.NAME`
(the load tests import the test helpers in tests/, so the root must be on the path)."""
