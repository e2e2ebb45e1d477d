"""The browser tests' server-log check leaves out only Streamlit's own dropped-websocket traceback
(tests/e2e/serverlog.py), the one CI met at stop 40, and keeps every other traceback."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.serverlog import tracebacks

CI_LOG = (Path(__file__).parent / "data" / "streamlit_client_gone.log").read_text()  # stop 40's server log


def test_streamlit_s_dropped_websocket_traceback_from_ci_is_left_out_and_the_rest_of_the_log_kept():
    assert "Traceback" in CI_LOG
    kept = tracebacks(CI_LOG)
    assert "Traceback" not in kept and "WebSocketDisconnected" not in kept
    assert "ln-viz: workers ready" in kept and "URL: http://127.0.0.1" in kept
    twice = tracebacks(CI_LOG + "ln-viz: a line after it\n" + CI_LOG)
    assert "Traceback" not in twice and "ln-viz: a line after it" in twice


def test_the_same_block_with_a_frame_of_ln_viz_is_kept():
    ours = CI_LOG.replace(
        '  File "/venv/lib/python3.11/site-packages/starlette/websockets.py", line 187, in close',
        '  File "/work/main/ln_viz/server/lifespan.py", line 12, in close',
    )
    assert ours != CI_LOG
    assert "Traceback" in tracebacks(ours)


def test_another_exception_in_the_same_place_is_kept():
    other = CI_LOG.replace(
        'starlette.websockets.WebSocketDisconnected: Cannot call "send"', 'RuntimeError: Cannot call "send"'
    )
    assert other != CI_LOG
    assert "RuntimeError" in tracebacks(other)


def test_a_traceback_of_the_app_is_kept_beside_a_dropped_websocket():
    app = (
        "Traceback (most recent call last):\n"
        '  File "/work/main/ln_viz/runner/process.py", line 3, in run\n'
        "    step()\n"
        "ValueError: boom\n"
    )
    kept = tracebacks(CI_LOG + app)
    assert kept.count("Traceback") == 1 and "ValueError: boom" in kept
    header = "Exception in ASGI application\n" + app  # even under the ASGI header
    assert "ValueError: boom" in tracebacks(header + CI_LOG)


def test_an_exception_group_a_renamed_exception_or_a_cut_off_log_after_the_dropped_websocket_is_kept():
    """What the filter must not hide (found in review): an exception group chained after it (anyio's task groups
    print their frames behind `|`), an exception whose name the line pattern does not read, a log cut off inside
    the chain, and an exception that only starts with the same name."""
    group = (
        "\nDuring handling of the above exception, another exception occurred:\n\n"
        "  + Exception Group Traceback (most recent call last):\n"
        '  |   File "/work/main/ln_viz/server/lifespan.py", line 9, in run\n'
        "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)\n"
        "  +-+---------------- 1 ----------------\n"
        "    | ValueError: boom\n"
        "    +------------------------------------\n"
    )
    assert "ValueError: boom" in tracebacks(CI_LOG + group)
    gone = 'starlette.websockets.WebSocketDisconnected: Cannot call "send"'
    renamed = CI_LOG.replace(gone, 'starlette.x.<locals>.Boom: Cannot call "send"')
    assert renamed != CI_LOG and "Traceback" in tracebacks(renamed)
    cut = CI_LOG[: CI_LOG.rindex("starlette.websockets.WebSocketDisconnected")]
    assert "Traceback" in tracebacks(cut)
    longer = CI_LOG.replace("WebSocketDisconnected: Cannot call", "WebSocketDisconnectedError: Cannot call")
    assert longer != CI_LOG and "Traceback" in tracebacks(longer)
