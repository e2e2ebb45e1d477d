"""A label is text, in a real browser: a run labelled with a Markdown image, a link, bold text, raw HTML, a
newline and Streamlit's own extensions shows exactly those characters on the Runs page, draws no element
of them, and makes the browser fetch nothing (tests/test_user_text.py checks the escaping itself)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ln_viz.runfile import read_run_file
from ln_viz.store import Store
from ln_viz.store.transfer import DEMO_DIR, add_loaded_run
from ln_viz.text import one_line
from ln_viz.ui.safe import WORD_JOINER
from tests.e2e.conftest import NOTHING_TRAINS, Server, stop_and_check, wait_idle

pytestmark = pytest.mark.e2e
HOST = "evil.invalid"
LABEL = f"![i](http://{HOST}/p.png) **bold** [link](http://{HOST}) <b>x</b>\n# out :red[r] $x$ :smile: a->b"


@pytest.fixture(scope="module")
def labelled_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, int]]:
    tmp = tmp_path_factory.mktemp("user_text_app")
    with Store(tmp / "runs.sqlite") as store:  # the path Server gives the app
        run_id, _ = add_loaded_run(store, read_run_file(next(DEMO_DIR.glob("*.json.gz"))))
        store.label(run_id, LABEL)
    s = Server(tmp, env=NOTHING_TRAINS)  # nothing trains here
    yield s, run_id
    stop_and_check(s)


def test_a_markdown_label_is_plain_text_in_the_browser(labelled_server, page) -> None:
    server, run_id = labelled_server
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if HOST in r.url else None)
    page.goto(server.url + "/runs")
    page.locator(".stDataFrame").first.wait_for(timeout=60_000)
    wait_idle(page, timeout=60_000)
    grid = page.locator(".stDataFrame [data-testid='stDataFrameResizable']").first
    box = grid.bounding_box()
    assert box is not None
    page.mouse.click(box["x"] + 18, box["y"] + 35 * 1.5)  # the first row's marker (the grid is a canvas)
    heading = page.locator("h3").filter(has_text=f"Run {run_id}:").first
    heading.wait_for(timeout=60_000)
    wait_idle(page, timeout=60_000)
    shown = heading.inner_text().replace(WORD_JOINER, "")
    assert shown == f"Run {run_id}: {one_line(LABEL)}"
    assert heading.locator("img, a, strong, b, em, code, .katex, span[style]").count() == 0
    assert page.locator("main img[src*='evil']").count() == 0
    assert fetched == []
