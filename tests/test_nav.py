"""The one registry of the app's pages (ln_viz.ui.nav): every page file is in it once, with its address and
title, and no module names a page's file or address but through it (issue 30: page paths were written in six
places, and a renamed page left a link to nowhere)."""

import re
from pathlib import Path

from ln_viz.i18n import EN
from ln_viz.ui import nav

ROOT = Path(__file__).resolve().parent.parent


def test_every_page_file_is_registered_once_with_a_title_and_one_default():
    files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "pages").glob("*.py"))
    assert sorted(p.file for p in nav.PAGES) == files
    assert all(p.exists() and p.title_key in EN for p in nav.PAGES)
    urls = [p.url_path for p in nav.PAGES]
    assert urls.count(None) == 1 and len(set(urls)) == len(urls)  # one default page, addresses unique


def test_no_page_path_is_written_outside_the_registry():
    literal = re.compile(r"""["']pages/\w+\.py["']""")
    sources = [ROOT / "app.py", *ROOT.glob("pages/*.py"), *ROOT.glob("ln_viz/**/*.py")]
    found = [f"{p.relative_to(ROOT)}: {m}" for p in sources if p.name != "nav.py"
             for m in literal.findall(p.read_text(encoding="utf-8"))]  # fmt: skip
    assert found == []
