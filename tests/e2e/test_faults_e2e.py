"""The server itself killed mid-run (SIGKILL: no shutdown code runs): nothing it stored is lost, the
run it was training is marked `interrupted`, and no worker process outlives it."""

import os
import signal
import time

import pytest

from ln_viz.store import Store
from tests.e2e.conftest import NO_INIT_LAB, Server
from tests.e2e.serverlog import tracebacks
from tests.e2e.test_live_e2e import open_app, status_step, status_text

pytestmark = pytest.mark.e2e


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def test_sigkill_of_the_server_mid_run_keeps_the_store_and_leaves_no_worker(browser, tmp_path):
    server = Server(tmp_path)  # with the Init lab's warm workers too: none may outlive the server's SIGKILL
    context = browser.new_context(viewport={"width": 1280, "height": 720}, locale="en-US")
    try:
        page = context.new_page()
        open_app(page, server.url + "/?steps=40&probe=10")  # a short run that completes
        page.locator(".st-key-start button").click()
        deadline = time.monotonic() + 60
        while "completed" not in status_text(page) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert "completed" in status_text(page)
        open_app(page, server.url + "/?steps=5000&probe=10")  # a long one, killed mid-run
        page.locator(".st-key-start button").click()
        deadline = time.monotonic() + 60
        while status_step(page) < 30 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)  # the recorder commits every 0.5 s
        seen = status_step(page)
        assert seen >= 30
        time.sleep(0.6)  # a commit (every 0.5 s) after the step on screen
        workers = server.children()
        assert workers, "no worker process under the server"
        os.kill(server.proc.pid, signal.SIGKILL)
        server.proc.wait(10)
    finally:
        context.close()
        server.stop()
    deadline = time.monotonic() + 15
    while any(alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [p for p in workers if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"{len(left)} worker process(es) outlived the server"

    with Store(server.store) as store:  # opening it marks runs whose writer died
        first, killed = sorted(store.list_runs(), key=lambda r: r.created)
        assert (first.status, first.steps_done) == ("completed", 40)
        assert first.final_loss is not None
        assert (killed.status, killed.message) == ("interrupted", "msg.interrupted")
        assert seen <= killed.steps_done < 5000
        data = store.open_run(killed.id)
        assert data.scalars["step"] == list(range(1, killed.steps_done + 1))  # every stored step, in order
        assert store.open_run(first.id).scalars["step"] == list(range(1, 41))
    print(f"\nkilled at step {seen} on screen; the store kept {killed.steps_done}; {len(workers)} workers all gone")


def test_a_disk_that_fills_under_the_server_is_said_once_and_sigterm_leaves_no_running_row(browser, tmp_path):
    """The store on a 3 MiB tmpfs filled mid-run: the page says so in one red sentence, the server's log
    grows by a bounded number of lines (it grew 212 MB in 40 s before), and after SIGTERM the row has a
    terminal status and every step committed before the disk filled."""
    from ln_viz.store import LIVE_STATUSES
    from tests.test_store_faults import fill, mounted_tmpfs

    with mounted_tmpfs("3m") as disk:
        store_path = disk / "runs.sqlite"
        env = {"LN_VIZ_STORE": str(store_path)} | NO_INIT_LAB
        server = Server(tmp_path, env=env)  # the log stays off the full disk
        context = browser.new_context(viewport={"width": 1280, "height": 720}, locale="en-US")
        try:
            page = context.new_page()
            open_app(page, server.url + "/?steps=5000&probe=10")
            page.locator(".st-key-start button").click()
            deadline = time.monotonic() + 60
            while status_step(page) < 40 and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(1.0)  # committed (every 0.5 s)
            lines_before = len(server.log().splitlines())
            filler = fill(disk)
            sentence = page.get_by_text("cannot be stored in", exact=False)
            sentence.first.wait_for(timeout=30_000)
            assert "database or disk is full" in sentence.first.inner_text()
            time.sleep(3)  # more steps fail to store: still one sentence, still a few log lines
            assert sentence.count() == 1
            step_at_sigterm = status_step(page)
            os.kill(server.proc.pid, signal.SIGTERM)
            server.proc.wait(30)
            grown = len(server.log().splitlines()) - lines_before
        finally:
            context.close()
            server.stop()
        filler.unlink(missing_ok=True)
        with Store(store_path, readonly=True) as store:
            [row] = store.list_runs()
            steps = store.open_run(row.id).scalars["step"]
    log = server.log_path.read_text()
    assert "Traceback" not in tracebacks(log), log[-3000:]
    assert row.status not in LIVE_STATUSES and row.message == "msg.store_incomplete", row
    assert 40 <= row.steps_done < step_at_sigterm
    assert steps == list(range(1, row.steps_done + 1))
    assert grown <= 10, log[-3000:]
    print(f"\n{row.steps_done} steps stored of {step_at_sigterm} trained; status {row.status}; log +{grown} lines")
