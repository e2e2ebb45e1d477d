"""ln-viz: `streamlit run app.py` from a checkout, `ln-viz app` installed (the wheel carries this file, pages/
and .streamlit/ as ln_viz/webapp/: pyproject.toml).

This file is read twice. Streamlit's `run` finds the st.App `app` below and serves it; its lifespan
runs once, when the server starts, and begins warming the worker processes (torch takes seconds to
import), so the first Start of the first visitor shows its first step at once. Each visit then runs
this file as its script (`__name__ == "__main__"`): the router and the frame every page shares
(language, the lecture view). st.navigation, rather than the pages/ folder's automatic menu, so page
titles follow the language switch; the live training page is the default page."""

from contextlib import asynccontextmanager

import streamlit as st

if __name__ != "__main__":  # imported by `streamlit run` to be served

    @asynccontextmanager
    async def _lifespan(_app):
        from ln_viz.ui import first_visit, server

        first_visit.route_first_visits_through_app()  # before the first session: see its docstring
        server.prepare_first_visit()
        server.prewarm()  # returns at once; the workers start in the background
        server.open_browser()
        yield
        server.shutdown_workers()  # on SIGINT/SIGTERM too: uvicorn shuts down, then re-raises the signal

    app = st.App(__file__, lifespan=_lifespan)

else:  # a visit: the router
    from ln_viz.server import lifespan

    lifespan.wait_imported()  # the prewarm thread's imports first: no module is imported by two threads at once
    from ln_viz.i18n import t
    from ln_viz.ui import language, lecture_switch, loss_view, nav, page_state, storage

    st.set_page_config(page_title="ln-viz", page_icon=":bar_chart:", layout="wide")

    lang = language.current_lang()
    page = st.navigation(
        [
            st.Page(p.file, title=t(p.title_key, lang), icon=p.icon, url_path=p.url_path, default=p.url_path is None)
            for p in nav.PAGES
            if p.exists()
        ]
    )
    language.lang_switch()
    lecture_switch.style_and_toggle()
    storage.store_notice(lang)  # the store file deleted or replaced under the server: said on every page
    loss_view.read_link()  # the loss charts' smoothing and log axis from the link, once per session
    page_state.carry()  # each page's settings, dropped by a visit to another page, back before it draws
    page.run()
