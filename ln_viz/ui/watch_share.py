"""Where a run's watch link is shown: a "Watch link" button (a popover) with the short link and its QR code,
beside Live's Start and Stop, in the lecture view's header (a QR large enough for the back of the room),
on a run opened on the Runs page, and on a watcher's own page (to pass it on)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from ln_viz.i18n import t
from ln_viz.runner import RunHandle
from ln_viz.watchlink import only_this_computer, qr_png, short_text, watch_url

# app.py's pages other than Live (their url paths): a link copied on one of them still opens Live
PAGE_PATHS = ("compare", "init-lab", "runs", "theory", "stability-map")
QR_SCALE = {False: 6, True: 12}  # px per module: ~250 px on a laptop, ~500 px on a projector (lecture view)
QR_WIDTH = {False: 260, True: 480}


def link(store_id: int, lang: str) -> str:
    """The watch link of stored run `store_id`: the address this visitor's browser shows (st.context.url),
    on Live, with `?watch=<id>&lang=<lang>`."""
    try:
        app_url = st.context.url
    except Exception:  # noqa: BLE001 -- no browser context (a bare script run): a relative link
        app_url = None
    return watch_url(app_url, store_id, lang, PAGE_PATHS, network_host())


def network_host() -> str | None:
    """Where students reach this server when it listens beyond this machine (`--server.address 0.0.0.0` or
    an address of its own): `browser.serverAddress` if the operator set one, else the listening address, else
    this machine's network address. None for a server bound to loopback (the default): only this machine
    reaches it, so its localhost link is the right one."""
    from streamlit import config, net_util

    from ln_viz.watchlink import is_loopback

    bound = (config.get_option("server.address") or "").strip()
    if is_loopback(bound) and bound != "0.0.0.0":
        return None
    named = (config.get_option("browser.serverAddress") or "").strip()
    if named and not is_loopback(named):
        return named
    if bound and bound not in ("0.0.0.0", "::"):
        return bound
    return net_util.get_internal_ip()


@st.cache_data(show_spinner=False, max_entries=64)
def _qr(url: str, scale: int) -> bytes:
    return qr_png(url, scale)  # pure Python: ~10 ms a code, once per link for every tab


def store_id_of(handle: RunHandle | None) -> int | None:
    """The store's number of a runner's run (what its watch link names); None before it is recorded, or
    when this server keeps no store."""
    from ln_viz.ui.storage import get_recorder

    recorder = get_recorder()
    if handle is None or recorder is None:
        return None
    return recorder.store_id(handle.run_id)


def draw(row: Any, store_id: int, lang: str, lecture: bool) -> None:
    """The "Watch link" button in `row` (a horizontal container); its popover holds the short link, the
    whole link to copy and the QR code."""
    url = link(store_id, lang)
    local = only_this_computer(url)  # the server listens on 127.0.0.1: a student's phone would open its own
    with row.popover(t("watch.share", lang), icon=":material/qr_code_2:", key="watch_share"):
        # no st.markdown here: a page's first one is its status
        st.caption(t("watch.share_local" if local else "watch.share_intro", lang, id=store_id))
        st.subheader(_plain(short_text(url)), anchor=False)  # large, to read off the projector
        st.code(url, language=None, wrap_lines=True)
        if not local:  # no QR code for an address nobody else can reach
            qr = _qr(url, QR_SCALE[lecture])  # PNG, kept PNG: a JPEG blurs the modules
            st.image(qr, width=QR_WIDTH[lecture], caption=t("watch.qr_caption", lang), output_format="PNG")


def popover_for(store_id: int | None, lang: str, lecture: bool) -> Callable[[Any], None]:
    """`draw` of this run for a row, or nothing to draw (a run not stored yet has no link)."""
    if store_id is None:
        return lambda row: None
    return lambda row: draw(row, store_id, lang, lecture)


def _plain(text: str) -> str:
    from ln_viz.ui.safe import md

    return md(text)  # the browser's address, as text: never a Markdown link or markup
