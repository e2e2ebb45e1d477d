"""The page's language: the sidebar's switch, the URL's `lang`, and widgets whose labels are translated."""

from __future__ import annotations

import streamlit as st
from streamlit.errors import StreamlitAPIException

from ln_viz.i18n import LANGS, t
from ln_viz.ui import keys
from ln_viz.ui.links import note_link
from ln_viz.urlstate import lang_from_query

LANG_NAMES = {"ko": "한국어", "en": "English"}


def current_lang() -> str:
    """The language picked in the sidebar, else the URL's `lang`, else English (a `lang` that is not one
    of the languages leaves a notice for `link_notices`). Called first thing on every page."""
    lang = st.session_state.get(keys.LANG)
    if lang not in LANGS:
        lang, notice = lang_from_query(st.query_params.get_all("lang") or None)
        note_link(notice)
        st.session_state[keys.LANG] = lang
    _keep_translated_values(lang)
    return lang


# Widgets whose options are shown in the page's language (`translated(key)`). Streamlit keeps a keyed
# widget's identity when its labels change and reads what the browser sends back by label: after a
# language switch the browser sent the label it last showed, in the old language, which matched no option,
# so the box fell back to its first one (the chosen preset became "Pre-LN, no warm-up", the lecture view's
# takeaway went blank, the corpus became the string "영어 텍스트").


def translated(key: str) -> str:
    """`key`, noted as the key of a widget whose option labels are translated: on the first run in another
    language its value is set again before it is drawn, so the browser is sent the new labels."""
    st.session_state.setdefault(keys.TRANSLATED, set()).add(key)
    return key


def _keep_translated_values(lang: str) -> None:
    if st.session_state.get(keys.WIDGETS_LANG, lang) != lang:
        for key in st.session_state.get(keys.TRANSLATED, ()):
            try:
                st.session_state[key] = st.session_state[key]  # read through the labels of the run that drew it
            except (KeyError, StreamlitAPIException):  # not drawn yet, or already drawn in this run
                continue
    st.session_state[keys.WIDGETS_LANG] = lang


def _pick_lang() -> None:
    st.session_state[keys.LANG] = st.session_state[keys.LANG_CHOICE]


def lang_switch() -> str:
    """The language radio at the top of the sidebar; the choice goes into the URL too. The choice is
    kept under `lang`, a plain session key: a widget's own key is dropped when a page switch does not
    draw it in time, and the language must survive every page switch."""
    lang = current_lang()
    st.session_state[keys.LANG_CHOICE] = lang
    st.sidebar.radio(
        t("ui.lang_label", lang),
        list(LANG_NAMES),
        key=keys.LANG_CHOICE,
        format_func=LANG_NAMES.__getitem__,
        horizontal=True,
        on_change=_pick_lang,
    )
    st.query_params["lang"] = lang
    return lang
