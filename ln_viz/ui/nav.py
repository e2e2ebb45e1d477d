"""The app's pages, named once: each page's file, its title's catalog key, its icon and its address (`url_path`;
None: the default page, at `/`). The router (app.py) builds its menu from PAGES; every link between pages
(the lecture view's header, the Runs page's "Compare these two") names a page from here."""

from __future__ import annotations

from dataclasses import dataclass

from ln_viz.cli import app_script

APP_ROOT = app_script().parent  # the app's folder: app.py and pages/ (the checkout, or ln_viz/webapp installed)


@dataclass(frozen=True)
class Page:
    file: str  # relative to the app's folder, as st.Page, st.page_link and st.switch_page take it
    title_key: str
    icon: str
    url_path: str | None  # None: the default page

    def exists(self) -> bool:
        """Whether the page's file is there (a trimmed checkout may leave a page out)."""
        return (APP_ROOT / self.file).exists()


LIVE = Page("pages/live.py", "nav.live", ":material/play_circle:", None)
COMPARE = Page("pages/compare.py", "nav.compare", ":material/compare:", "compare")
INIT_LAB = Page("pages/init_lab.py", "nav.init_lab", ":material/science:", "init-lab")
RUNS = Page("pages/runs.py", "nav.runs", ":material/folder_open:", "runs")
THEORY = Page("pages/theory.py", "nav.theory", ":material/menu_book:", "theory")
STABILITY_MAP = Page("pages/stability_map.py", "nav.stability_map", ":material/grid_on:", "stability-map")

PAGES = (LIVE, COMPARE, INIT_LAB, RUNS, THEORY, STABILITY_MAP)  # the menu's order
