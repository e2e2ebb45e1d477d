"""Re-run round four's reproductions (../shared/reviews/ux-review-turn4.md, hostile-round-4.md) against this
checkout and print what each shows now, as JSON lines (id, what was seen). The verdicts and the table are in
docs/round-four-recheck.md; this script is how its figures were taken, so that anyone can take them again.

    PYTHONPATH=$PWD .venv/bin/python scripts/recheck_round4.py browser   # one server, one Chromium
    PYTHONPATH=$PWD .venv/bin/python scripts/recheck_round4.py hostile   # the hostile page cases, one server
    PYTHONPATH=$PWD .venv/bin/python scripts/recheck_round4.py cases     # the refused values, in this process
    PYTHONPATH=$PWD .venv/bin/python scripts/recheck_round4.py ray       # hostile H2: a Ray head killed

Screenshots go to $RECHECK_SHOTS (default /tmp/recheck-round4). The browser part starts one server with a
store of its own and ends it by its pid; `ray` starts a Ray head as a child process group and ends it so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHOTS = Path(os.environ.get("RECHECK_SHOTS", "/tmp/recheck-round4"))
QUERY = "() => Object.fromEntries(new URL(location.href).searchParams)"
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def report(case: str, **seen) -> None:
    print(json.dumps({"id": case, **seen}, ensure_ascii=False), flush=True)


def idle(page, timeout: float = 180_000) -> None:
    page.wait_for_selector(IDLE, timeout=timeout)


def shot(page, name: str) -> str:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.mouse.move(0, 0)
    page.screenshot(path=str(path), full_page=False)
    return str(path)


def status(page) -> str:
    for sel in (".st-key-live_status", ".st-key-lecture_status"):
        loc = page.locator(sel)
        if loc.count():
            return loc.first.inner_text().replace("\n", " ")[:200]
    return ""


def wait_running(page, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = status(page)
        if "Step" in s or "단계" in s:
            return s
        time.sleep(0.5)
    return status(page)


def ux_first_start(page, url: str) -> None:
    """M5: the first screen of a fresh server, 1280x720, `/`."""
    page.goto(url + "/")
    idle(page)
    page.wait_for_selector(".st-key-start button", timeout=120_000)
    lead = page.locator(".st-key-lead_compare")
    report("UX-M5", lead_button=lead.count() and lead.first.inner_text(), shot=shot(page, "m5_first_screen"))
    chart_names = page.evaluate(
        "() => [...document.querySelectorAll('.js-plotly-plot')].map(g => g.getAttribute('aria-label'))"
    )
    live_region = page.locator("[role=status][aria-live=polite]").count()
    report("UX-M11", chart_aria_labels=chart_names, live_regions=live_region)
    tabbable = page.evaluate(
        "() => [...document.querySelectorAll('.modebar-btn')].filter(b => b.tabIndex >= 0 && "
        "getComputedStyle(b.closest('.modebar-container')).visibility !== 'hidden').length"
    )
    total = page.evaluate("() => document.querySelectorAll('.modebar-btn').length")
    report("UX-L12", modebar_buttons=total, modebar_buttons_tabbable_and_visible=tabbable)


def ux_stop_after_switch(page, url: str) -> None:
    """H1: Start -> Theory -> Live -> Stop (24 layers Pre-LN), then a reload."""
    page.goto(url + "/?preset=deep-pre-ln")
    idle(page)
    before = page.evaluate(QUERY)
    page.locator(".st-key-start button").click()
    running = wait_running(page)
    idle(page)
    side = page.get_by_test_id("stSidebar")
    side.get_by_role("link", name="Theory").first.click()
    time.sleep(1)
    idle(page)
    side.get_by_role("link", name="Live training").first.click()
    time.sleep(1)
    idle(page)
    back = page.evaluate(QUERY)
    preset_box = page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stSidebar] input[role=combobox]')].map(e => e.value)"
    )
    page.locator(".st-key-stop button").click()
    time.sleep(2)
    idle(page)
    after = page.evaluate(QUERY)
    st_after = status(page)
    path = shot(page, "h1_after_stop")
    page.reload()
    idle(page)
    time.sleep(2)
    reloaded = page.evaluate(QUERY)
    report("UX-H1", before=before, running=running, back=back, preset_box=preset_box, after_stop=after,
           status_after_stop=st_after, after_reload=reloaded, shot=path)  # fmt: skip


def ux_reload_keeps_run(page, url: str) -> None:
    """M7: `/` -> Start -> F5."""
    page.goto(url + "/?preset=deep-pre-ln")
    idle(page)
    page.locator(".st-key-start button").click()
    first = wait_running(page)
    page.reload()
    idle(page)
    time.sleep(3)
    again = wait_running(page, 60)
    report("UX-M7", before_reload=first, after_reload=again, address=page.evaluate(QUERY),
           shot=shot(page, "m7_after_reload"))  # fmt: skip
    page.locator(".st-key-stop button").click()
    idle(page)


def ux_watch_link(page, url: str) -> None:
    """H3: `/?present=1` -> Start -> Watch link (server on 127.0.0.1)."""
    page.goto(url + "/?present=1&preset=deep-pre-ln")
    idle(page)
    page.locator(".st-key-start button").click()
    wait_running(page)
    page.locator(".st-key-watch_share button").first.click()
    pop = page.locator("[data-testid='stPopoverBody']")
    pop.locator("[data-testid='stCode'] code").first.wait_for(timeout=60_000)
    report("UX-H3", popover=pop.inner_text().replace("\n", " ")[:400],
           qr_images=pop.locator("[data-testid='stImage'] img").count(), shot=shot(page, "h3_popover"))  # fmt: skip
    page.keyboard.press("Escape")
    # M10: focus on a button and on a link, by keyboard
    page.locator(".st-key-stop button").click()
    idle(page)
    page.keyboard.press("Tab")
    focus = []
    for _ in range(8):
        focus.append(
            page.evaluate(
                "() => { const e = document.activeElement; const s = getComputedStyle(e);"
                " return [e.tagName, (e.innerText||'').slice(0,30), s.outlineStyle, s.outlineWidth, s.outlineColor,"
                " s.boxShadow.slice(0,60)]; }"
            )
        )
        page.keyboard.press("Tab")
    report("UX-M10", focused=focus, shot=shot(page, "m10_focus"))


def ux_compare(page, url: str) -> None:
    """M3 (+ warm-up, two Post-LN), M4 (header links), M8 (seeds), L9 (status before Start)."""
    page.goto(url + "/compare?present=1&cpreset=warmup-vs-none")
    idle(page)
    top = page.locator(".st-key-lecture_top")
    links = [a.inner_text() for a in top.get_by_role("link").all()]
    seeds = page.locator(".st-key-cseeds")
    report("UX-M4", lecture_header_links=links)
    report("UX-M8", seeds_control=seeds.count(), seeds_text=seeds.count() and seeds.first.inner_text()[:80],
           title=page.locator(".st-key-lecture_title").inner_text()[:200])  # fmt: skip
    report("UX-L9", status_before_start=status(page))
    page.get_by_role("button", name="Start both").click()
    time.sleep(20)
    colours = page.evaluate(
        "() => { const g = document.querySelector('.st-key-compare_loss .js-plotly-plot');"
        " return g && g._fullData.filter(t => t.mode && t.mode.includes('lines')).map("
        "t => [t.name, t.line.color, t.line.dash, (t.x||[]).length]); }"
    )
    report("UX-M3", traces=colours, shot=shot(page, "m3_warmup_pair"))
    page.get_by_role("button", name="Stop both").click()
    idle(page)


def ux_init_lab(page, url: str) -> None:
    """M4: `/init-lab?present=1` at 1920x1080."""
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.goto(url + "/init-lab?present=1")
    idle(page, 300_000)
    time.sleep(2)
    report("UX-M4b", scroll_height=page.evaluate("() => document.querySelector('[data-testid=stMain]').scrollHeight"),
           sidebar_visible=page.get_by_test_id("stSidebar").is_visible(), shot=shot(page, "m4_init_lab"))  # fmt: skip


def ux_phone(page, url: str) -> None:
    """L8: Compare's lecture view on a 390x844 phone: what is cut (the layout test's PHONE_CUTS), en and ko."""
    from tests.e2e.test_layout_e2e import PHONE_CUTS

    page.set_viewport_size({"width": 390, "height": 844})
    for lang in ("en", "ko"):
        page.goto(url + f"/compare?present=1&lang={lang}")
        idle(page)
        report("UX-L8", lang=lang, status=status(page), cut=page.evaluate(PHONE_CUTS),
               shot=shot(page, f"l8_phone_compare_present_{lang}"))  # fmt: skip


def hostile_pages(page, url: str) -> None:
    """Hostile M1 (an unusable LN_VIZ_RAY_ADDRESS: Live and Compare), L1 (a damaged row's watch page), L2
    (Live's parameters beside watch=), L3 (a CLI writer killed while watched)."""
    for path in ("/", "/compare"):
        page.goto(url + path)
        idle(page)
        found = page.locator("[data-testid=stException]").count()
        starts = (
            page.get_by_role("button", name="Start").count() + page.get_by_role("button", name="Start both").count()
        )
        report(
            "H-M1", page=path, exceptions=found, start_buttons=starts, shot=shot(page, f"hm1{path.replace('/', '_')}")
        )
    page.goto(url + "/?depth=1&steps=50")
    idle(page)
    page.locator(".st-key-start button").click()
    time.sleep(8)
    idle(page)
    alerts = [a.inner_text()[:300] for a in page.get_by_test_id("stAlert").all()]
    report(
        "H-M1-start", status=status(page), alerts=alerts, exceptions=page.locator("[data-testid=stException]").count()
    )
    page.goto(url + "/?watch=1")
    idle(page)
    text = page.get_by_test_id("stMain").inner_text()
    report("H-L1", text=text[:500], store_path_shown=str(Path(os.environ["RECHECK_STORE"]).parent) in text)
    page.goto(url + "/?watch=2&norm=<b>x</b>&steps=0")
    idle(page)
    report("H-L2", alerts=[a.inner_text()[:300] for a in page.get_by_test_id("stAlert").all()])
    page.goto(url + "/?watch=4")
    idle(page)
    time.sleep(12)
    report("H-L3", status=status(page) or page.get_by_test_id("stMain").inner_text()[:300], shot=shot(page, "hl3"))


def hostile() -> None:
    """One server on a prepared store (run 1 damaged, run 4 written by a CLI run killed mid-way) with
    LN_VIZ_EXECUTOR=ray and an address where nothing listens."""
    import shutil
    import signal
    import sqlite3

    from tests.e2e.conftest import free_port

    tmp = Path(tempfile.mkdtemp(prefix="recheck-h-"))
    store = tmp / "runs.sqlite"
    env = {**os.environ, "LN_VIZ_STORE": str(store)}
    tiny = "--depth 1 --d-model 16 --heads 2 --batch-size 4 --seq-len 16 --probe-every 5".split()
    for extra in (["--steps", "20"], ["--steps", "20"], ["--steps", "20"]):
        subprocess.run([sys.executable, "-m", "ln_viz", "train", *tiny, *extra], env=env, check=True,
                       capture_output=True)  # fmt: skip
    writer = subprocess.Popen([sys.executable, "-m", "ln_viz", "train", *tiny, "--steps", "100000", "--threads", "1"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    time.sleep(15)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    with sqlite3.connect(store) as c:
        c.execute("update runs set config = '{not json' where id = 1")
    os.environ["RECHECK_STORE"] = str(store)
    _serve(tmp, [hostile_pages], {"LN_VIZ_EXECUTOR": "ray", "LN_VIZ_RAY_ADDRESS": f"127.0.0.1:{free_port()}"}, [])
    shutil.rmtree(tmp, ignore_errors=True)


# hostile round 4's refused values, as its areas 1, 2, 4 and 5 list them: each must give one sentence
WATCH_IDS = ["-1", "0", "00", "1e3", "0x1", "1 2", "\u0661", "\uff11", "abc", "1' OR '1'='1", "1;DELETE FROM runs",
             "1%00", "\x00", "9" * 13, "2**63", "", "1.0", "+1", "\u202e1", "\U0001f600", "<script>alert(1)</script>",
             "A" * 10_000]  # fmt: skip
SECONDS = ["0", "-1", "nan", "inf", "1e308", "601", "", "abc", "9" * 5000, "1_0", "\u0663"]
SIZES = ["0x0", "321x240", "3842x2160", "x", "640"]
FIELD_VALUES = ["0", "-1", "-0.0", "inf", "nan", "1e308", "abc", "", "1e-320", "1_0"]
COMPARE_ARGS = [["--a", "foo=1", "--b", "lr=1e-3"], ["--a", "lr=1,lr=2", "--b", "lr=1e-3"],
                ["--a", "user_text=x", "--b", "lr=1e-3"], ["--a", "lr=", "--b", "lr=1e-3"],
                ["--a", "post", "--b", "lr=1"],
                ["--a", "norm_position=\uff50re", "--b", "lr=1e-3"], ["--a", "lr=nan", "--b", "lr=1e-3"],
                ["--a", "steps=100001", "--b", "lr=1e-3"], ["--a", "seed=1", "--b", "seed=2"],
                ["--a", "corpus=user", "--b", "lr=1e-3"], ["--a", "ln_scaling=maybe", "--b", "lr=1e-3"],
                ["--preset", "post-vs-pre", "--seeds", "0"], ["--preset", "post-vs-pre", "--seeds", "17"],
                ["--a", "lr=1e-3"], ["--preset", "nope"], ["--preset", "post-vs-pre", "--workers", "0"],
                ["--a", "", "--b", ""],
                ["--preset", "post-vs-pre", "--seeds", "3", "--seed", "2147483647"]]  # fmt: skip


def cases() -> None:
    """The refused values of hostile round 4's areas 1 (watch ids), 2 (--seconds, --size), 4 (compare's
    refusals, no run trained) and 5 (the instability fields, as a flag or a link parses them): each counted
    as held when it is refused with one sentence (no traceback), as the report counted them."""
    import contextlib
    import io

    from ln_viz.cli import main
    from ln_viz.config import FIELDS
    from ln_viz.i18n import LocalizedError
    from ln_viz.video import parse_seconds, parse_size
    from ln_viz.watchlink import parse_watch_id

    def refused(call, value) -> bool:
        try:
            call(value)
        except LocalizedError as e:
            return len(e.message("en").splitlines()) == 1
        return False

    def check(field: str, value: str) -> None:
        spec = FIELDS[field]
        spec.check(spec.parse(value))

    fields = [(f, v) for f in ("z_loss", "weight_decay", "grad_clip", "dyt_alpha") for v in FIELD_VALUES
              if not (v in ("0", "-0.0") and FIELDS[f].closed)]  # 0 turns weight decay, clip, z-loss off  # fmt: skip
    results = {
        "watch ids": [refused(parse_watch_id, v) for v in WATCH_IDS],
        "--seconds": [refused(parse_seconds, v) for v in SECONDS],
        "--size": [refused(parse_size, v) for v in SIZES],
        "instability fields": [refused(lambda v, f=f: check(f, v), v) for f, v in fields],
    }
    compare = []
    for args in COMPARE_ARGS:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = main(["compare", *args, "--steps", "5"])
            except SystemExit as e:  # argparse's own refusal
                code = e.code
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        compare.append(code == 2 and "Traceback" not in err.getvalue() and len(lines) <= 3)
    results["compare refusals"] = compare
    inputs = {"watch ids": WATCH_IDS, "--seconds": SECONDS, "--size": SIZES, "instability fields": fields,
              "compare refusals": COMPARE_ARGS}  # fmt: skip
    for area, held in results.items():
        broke = [inputs[area][i] for i, ok in enumerate(held) if not ok]
        report(f"cases: {area}", tried=len(held), held=sum(held), accepted=[str(b)[:60] for b in broke])


def ray_head() -> None:
    """Hostile H2: a Live run on a Ray head (a child process group, tests/ray_cluster.py), the head SIGKILLed,
    a Start while it is gone, the server's health past Ray's GCS timeout (5 s here, as the project's test sets
    it), then a head restarted on the same port and a Start on it. What the page says at each point."""
    import signal
    import urllib.request

    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import BROWSER_ARGS, CHROMIUM, Server
    from tests.ray_cluster import HeadNode

    def main_text(page) -> str:
        return page.get_by_test_id("stMain").inner_text().replace("\n", " ")

    def start(page, url: str) -> None:
        page.goto(url)
        idle(page)
        page.locator(".st-key-start button").click()

    def wait_text(page, words: str, timeout: float) -> float | None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if words in main_text(page):
                return round(time.monotonic() - t0, 1)
            time.sleep(0.5)
        return None

    head = HeadNode(cpus=2).start()
    tmp = Path(tempfile.mkdtemp(prefix="recheck-ray-"))
    env = {"LN_VIZ_EXECUTOR": "ray", "LN_VIZ_RAY_ADDRESS": head.address, "RAY_AUTH_MODE": "disabled",
           "RAY_gcs_rpc_server_reconnect_timeout_s": "5"}  # fmt: skip
    server = Server(tmp, env=env, wait_workers=False)
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
            page = b.new_page(viewport={"width": 1280, "height": 720})
            page.set_default_timeout(180_000)
            start(page, server.url + "/?depth=2&steps=10000")
            report("H-H2-start", first_step_s=wait_text(page, "Step 6/", 240), status=status(page))
            killed = time.monotonic()
            head.stop(signal.SIGKILL)
            said = wait_text(page, "The Ray cluster stopped answering", 120)
            report("H-H2-killed", sentence_after_s=said, status=status(page),
                   exceptions=page.locator("[data-testid=stException]").count())  # fmt: skip
            start(page, server.url + "/?depth=2&steps=10000")
            report("H-H2-start-while-gone", said_s=wait_text(page, "does not answer (", 60), status=status(page))
            time.sleep(max(0.0, killed + 30 - time.monotonic()))
            with urllib.request.urlopen(server.url + "/_stcore/health", timeout=10) as r:
                healthy = r.read() == b"ok"
            report("H-H2-alive", seconds_after_kill=round(time.monotonic() - killed), server_rc=server.proc.poll(),
                   health=healthy)  # fmt: skip
            head = HeadNode(cpus=2, port=head.port).start()
            start(page, server.url + "/?depth=2&steps=10000")
            report("H-H2-restarted", first_step_s=wait_text(page, "Step 6/", 240), status=status(page),
                   server_rc=server.proc.poll())  # fmt: skip
            b.close()
    finally:
        code = server.stop()
        head.stop()
        report("H-H2-end", server_rc=code, tracebacks=server.log_path.read_text().count("Traceback"),
               ray_left=sorted(head.left))  # fmt: skip


def browser(only: list[str]) -> None:
    checks = (ux_first_start, ux_stop_after_switch, ux_reload_keeps_run, ux_watch_link, ux_compare, ux_init_lab,
              ux_phone)  # fmt: skip
    _serve(Path(tempfile.mkdtemp(prefix="recheck-")), checks, {}, only)


def _serve(tmp: Path, checks, env: dict[str, str], only: list[str]) -> None:
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import BROWSER_ARGS, CHROMIUM, Server

    server = Server(tmp, env=env, wait_workers=False)
    report("server", url=server.url, pid=server.proc.pid, log=str(server.log_path))
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
            for check in checks:
                if only and check.__name__ not in only:
                    continue
                ctx = b.new_context(viewport={"width": 1280, "height": 720}, locale="en-US")
                page = ctx.new_page()
                page.set_default_timeout(180_000)  # a loaded machine (load 20-40 here) redraws slowly
                errors: list[str] = []
                page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                t0 = time.monotonic()
                try:
                    check(page, server.url)
                except Exception as e:  # noqa: BLE001 - one check's failure must not hide the others'
                    report(
                        check.__name__, failed=f"{type(e).__name__}: {str(e)[:300]}", shot=shot(page, check.__name__)
                    )
                report(check.__name__, seconds=round(time.monotonic() - t0, 1), page_errors=errors,
                       exceptions=page.locator("[data-testid=stException]").count())  # fmt: skip
                ctx.close()
            b.close()
    finally:
        code = server.stop()
        log = server.log_path.read_text()
        report("server-log", rc=code, tracebacks=log.count("Traceback"),
               probe_step_idle_warning="probe_step_idle" in log, tail=log[-600:])  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1] == "hostile":
        hostile()
    elif sys.argv[1] == "ray":
        ray_head()
    elif sys.argv[1] == "cases":
        cases()
    else:
        browser(sys.argv[2:])
