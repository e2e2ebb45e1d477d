"""Where the `ray` executor connects (ln_viz/sweep/ray_address.py), without Ray: a bad address or port is
refused at parse time, and an address where no Ray cluster answers (nothing listening, an HTTP server, a
server that takes the connection and says nothing) gets one sentence in seconds (issue 21, M2), against
real sockets on 127.0.0.1. The operator's $LN_VIZ_RAY_ADDRESS is the page's only cluster (S1)."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from ln_viz.cli import main
from ln_viz.i18n import t
from ln_viz.sweep.ray_address import configured_address, parse_address, probe
from ln_viz.sweep.spec import SweepError

TINY = ["--norm-position", "pre", "--lr", "1e-3", "--warmup", "0", "--depth", "1", "--steps", "5", "--quiet"]


@pytest.mark.parametrize(
    "raw", ["local", "auto", "10.0.0.5:6379", "head.example.org:1", "[::1]:65535", " 127.0.0.1:6379 "]
)
def test_good_addresses_pass(raw):
    assert parse_address(raw) == raw.strip()


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("127.0.0.1:99999", "names port 99999; a port is a whole number from 1 to 65535"),
        ("127.0.0.1:0", "names port 0"),
        ("junk", "is not a Ray cluster address"),
        (":::", "is not a Ray cluster address"),
        ("http://10.0.0.5:6379", "is not a Ray cluster address"),
        ("ray://10.0.0.5:10001", "is not a Ray cluster address"),
        ("10.0.0.5", "is not a Ray cluster address"),
    ],
)
def test_bad_addresses_and_ports_are_refused_at_once(raw, words):
    with pytest.raises(SweepError) as err:
        parse_address(raw, "$RAY_ADDRESS")
    assert words in str(err.value) and str(err.value).startswith("$RAY_ADDRESS ")


def test_a_long_address_is_echoed_cut_to_80_characters_with_its_length(capsys):
    """It was echoed to 1,000 characters without its length (M11)."""
    assert main(["sweep", "--executor", "ray", "--address", "a" * 5000]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --address " + "a" * 80 + "… (5,000 characters) is not a Ray cluster address")
    assert "\n" not in err and len(err) < 300


def test_a_port_out_of_range_is_refused_before_anything_starts(capsys, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:99999")
    assert main(["sweep", "--executor", "ray", *TINY]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: $RAY_ADDRESS 127.0.0.1:99999 names port 99999; a port is a whole number from 1 to 65535."


# --- the probe, against real sockets ----------------------------------------------------------------------------
@pytest.fixture
def closed_port() -> int:
    """A port of 127.0.0.1 that nothing listens on (bound, so no one else takes it, but not listening)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def _serve(handler) -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def loop() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                handler(conn, stop)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        server.close()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A server that takes the connection and never says a word."""
    yield from _serve(lambda conn, stop: stop.wait(10))


@pytest.fixture
def grpc_like_port() -> Iterator[int]:
    """A server that answers the HTTP/2 preface with a SETTINGS frame, as a gRPC server does first."""

    def answer(conn, stop):
        conn.recv(64)
        conn.sendall(b"\x00\x00\x06\x04\x00\x00\x00\x00\x00" + b"\x00\x03\x00\x00\x00\x64")

    yield from _serve(answer)


@pytest.fixture
def http_port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _refusal(address: str, timeout: float = 3.0) -> tuple[str, float]:
    t0 = time.monotonic()
    with pytest.raises(SweepError) as err:
        probe(address, timeout)
    return str(err.value), time.monotonic() - t0


def test_a_closed_port_says_no_cluster_answers_at_once(closed_port):
    text, seconds = _refusal(f"127.0.0.1:{closed_port}")
    where = f"127.0.0.1:{closed_port}"
    assert (
        text == f"no Ray cluster answers at {where} (Connection refused); check the address and that the cluster runs."
    )
    assert seconds < 1.0


def test_an_http_server_is_not_a_ray_cluster(http_port):
    text, seconds = _refusal(f"127.0.0.1:{http_port}")
    assert text.startswith(f"something listens at 127.0.0.1:{http_port}, but it is not a Ray cluster (it answered b")
    assert "ray start --head --port" in text and seconds < 3.0


def test_a_silent_server_is_said_after_the_timeout(silent_port):
    text, seconds = _refusal(f"127.0.0.1:{silent_port}", timeout=1.0)
    assert "it is not a Ray cluster (it took the connection, then no answer in 1 s)" in text
    assert 0.9 < seconds < 2.5


def test_a_server_that_speaks_grpc_passes_the_probe(grpc_like_port):
    probe(f"127.0.0.1:{grpc_like_port}", 3.0)  # no error: ray.init is asked next


def test_the_cli_says_a_closed_port_in_one_line(closed_port, capsys):
    """`--address 127.0.0.1:1` waited 590 s without an answer (M2); the sentence comes from the probe, before
    Ray is asked anything (Ray is imported only when it is installed: the executor needs it)."""
    pytest.importorskip("ray")
    t0 = time.monotonic()
    code = main(["sweep", "--executor", "ray", "--address", f"127.0.0.1:{closed_port}", *TINY])
    seconds = time.monotonic() - t0
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: no Ray cluster answers at") and "\n" not in err
    assert seconds < 10  # mostly importing Ray


# --- the operator's setting for the app -------------------------------------------------------------------------
def test_the_page_cluster_is_the_operators_setting_and_never_auto(monkeypatch):
    monkeypatch.delenv("LN_VIZ_RAY_ADDRESS", raising=False)
    assert configured_address() == (None, None)
    monkeypatch.setenv("LN_VIZ_RAY_ADDRESS", "10.0.0.5:6379")
    assert configured_address() == ("10.0.0.5:6379", None)
    monkeypatch.setenv("LN_VIZ_RAY_ADDRESS", "local")
    assert configured_address() == ("local", None)
    monkeypatch.setenv("LN_VIZ_RAY_ADDRESS", "auto")
    address, problem = configured_address()
    assert address is None and "$LN_VIZ_RAY_ADDRESS=auto is not used" in str(problem)
    monkeypatch.setenv("LN_VIZ_RAY_ADDRESS", "10.0.0.5:70000")
    address, problem = configured_address()
    assert address is None and "names port 70000" in str(problem)


# --- a connection that hangs never holds the server's sweep slot (X3) ----------------------------------------------
def hang_connect(address: str, num_cpus: int | None = None) -> None:
    """A Ray host's connect that never returns (as a `ray.init` that hangs); runs in the host process."""
    time.sleep(600)


@pytest.mark.slow  # a Ray host process
def test_stop_frees_the_sweep_slot_while_a_ray_connection_hangs(monkeypatch, tmp_path):
    """`127.0.0.1:1` on the page kept the server's only sweep slot busy after Stop, until a restart (X3). The
    probe now answers such addresses at once, so the hang is made here: the Ray host process's connect
    blocks (as `ray.init` does, uninterruptibly). Stop frees the slot within a second; the host is ended."""
    from ln_viz.config import RunConfig
    from ln_viz.runner.ray_host import RayHost
    from ln_viz.server.sweeps import SweepService
    from ln_viz.sweep import ray_exec
    from ln_viz.sweep.spec import SweepConfig

    monkeypatch.setenv("LN_VIZ_STORE", str(tmp_path / "runs.sqlite"))
    monkeypatch.setattr(ray_exec, "probe", lambda address: None)  # as if something answered there
    monkeypatch.setattr(ray_exec, "connect_here", hang_connect)  # sent to the host process by name
    base = RunConfig(depth=1, d_model=16, heads=2, seq_len=16, batch_size=4)
    spec = SweepConfig(base=base, norm_position=("pre",), lr=(1e-3,), warmup_steps=(0,), depth=(1,), steps=5)
    svc = SweepService()
    try:
        assert svc.start(spec, "ray", "10.0.0.5:6379", owner="me")
        deadline = time.monotonic() + 30
        while not RayHost._shared and time.monotonic() < deadline:
            time.sleep(0.05)
        (host,) = RayHost._shared.values()
        time.sleep(1.0)
        assert svc.busy() and not host.ready.is_set()  # connecting, in the host
        t0 = time.monotonic()
        svc.stop("me")  # the session that started it (issue 21, X2)
        svc.thread.join(5)
        seconds = time.monotonic() - t0
        assert not svc.busy() and seconds < 1.0, seconds
        assert svc.sweep.progress().state == "stopped" and svc.error is None
    finally:
        RayHost.end_all(timeout=1.0)  # the hung host process, ours, by its pid


@pytest.mark.parametrize(
    ("address", "said", "said_at_start"),
    [
        ("junk", "LN_VIZ_RAY_ADDRESS junk is not a Ray cluster address", "junk is not a Ray cluster address"),
        ("closed", "does not answer; runs cannot train until it is back", "does not answer (Connection refused)"),
    ],
)
def test_an_unusable_ray_address_is_one_sentence_on_live_and_compare_not_a_traceback(
    start_app, monkeypatch, closed_port, address, said, said_at_start
) -> None:
    """Issue 32, hostile M1: with LN_VIZ_EXECUTOR=ray and an address that cannot be used, every visitor of
    Live and Compare got Streamlit's exception box with the server's paths, and no Start button. Now the
    pages draw, the line under Start says why in one sentence, and a Start fails with it (no Ray needed)."""
    from ln_viz.ui import training

    monkeypatch.setenv("LN_VIZ_EXECUTOR", "ray")
    monkeypatch.setenv("LN_VIZ_RAY_ADDRESS", f"127.0.0.1:{closed_port}" if address == "closed" else address)
    monkeypatch.setenv("LN_VIZ_WARM_WORKERS", "0")
    at = start_app(60)
    assert not at.exception, at.exception
    page = " ".join(e.value for e in [*at.caption, *at.error, *at.warning, *at.markdown] if isinstance(e.value, str))
    assert said in page and "Traceback" not in page
    at.button(key="start").click().run()
    assert not at.exception
    handle = training.get_runner().get(at.session_state["live_run_id"])
    assert handle.wait(30)
    view = handle.view()
    assert view.status == "failed" and said_at_start in t(view.message, "en", **view.message_params)
    assert t(view.message, "ko", **view.message_params) != t(view.message, "en", **view.message_params)
    compare = start_app(60, "pages/compare.py")
    assert not compare.exception, compare.exception
