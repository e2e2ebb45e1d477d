"""ln-viz: `streamlit run app.py`. The router and the frame every page shares (language, presenter
mode). st.navigation, rather than the pages/ folder's automatic menu, so page titles follow the
language switch; the live training page is the default page."""

from pathlib import Path

import streamlit as st

from ln_viz.i18n import t
from ln_viz.ui import session

st.set_page_config(page_title="ln-viz", page_icon=":bar_chart:", layout="wide")

lang = session.current_lang()
PAGES = [  # file, title key, icon, url path
    ("pages/live.py", "nav.live", ":material/play_circle:", None),
    ("pages/compare.py", "nav.compare", ":material/compare:", "compare"),
    ("pages/init_lab.py", "nav.init_lab", ":material/science:", "init-lab"),
    ("pages/runs.py", "nav.runs", ":material/folder_open:", "runs"),
    ("pages/theory.py", "nav.theory", ":material/menu_book:", "theory"),
]
here = Path(__file__).parent
page = st.navigation(
    [
        st.Page(path, title=t(title, lang), icon=icon, url_path=url, default=url is None)
        for path, title, icon, url in PAGES
        if (here / path).exists()
    ]
)
session.lang_switch()
session.presenter_mode()
st.session_state[session.ROUTED] = st.session_state[session.SEEN] = True
page.run()
