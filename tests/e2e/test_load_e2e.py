"""The classroom load test (benchmarks/load_test.py) at a small size, so that it keeps working: three
websocket sessions press Start at once on a server with a cap of one. It checks that at most one run
trained at a time, that the others showed their place in the queue and started in turn, that every
run ended, that no page showed an exception and the health check never failed, and that no worker
was left once the sessions closed. Its times are printed here; the full runs (10 and 30 sessions)
judge them and their figures are in the README."""

import pytest

from benchmarks import load_test

pytestmark = pytest.mark.e2e


def test_three_sessions_queue_behind_a_cap_of_one_and_leave_nothing(capsys):
    code = load_test.main(["--sessions", "3", "--cap", "1", "--steps", "200", "--smoke", "--time-limit", "180"])
    out = capsys.readouterr().out
    print(out)
    assert code == 0, out
    assert "at most: 1;" in out and "queue places seen: ['1', '2']" in out
