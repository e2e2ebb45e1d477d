"""How charts are sized and placed on a page: heights from the viewport (CSS), no Plotly modebar where it
would sit over a title, whole Korean words.

Streamlit cannot tell the server the browser's size, so a chart's height comes from CSS: each chart is
drawn in a box (a keyed container whose key starts with its size class) given a height in vh, and the
chart stretches to fill it (`st.plotly_chart(height="stretch")`, the figure sets no height)."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ln_viz.charts.axes import fit_to_height
from ln_viz.ui import keys

# Box size classes: the start of a container's key, hence of its `st-key-...` CSS class.
TALL, MID, SHORT = "tall__", "mid__", "short__"  # the laptop and phone views
LOSS = "loss__"  # Compare's losses: under its scenario row and settings, still in the first screen
FULL, HALF = "full__", "half__"  # the lecture view: the whole chart area, half of it
UPPER, LOWER = "upper__", "lower__"  # the lecture view's Compare, right column: 44 % / 56 % of the chart area

# Every page: Korean words stay whole (they wrap at spaces, as in print); on touch screens Plotly's
# modebar would sit for good over the chart's title, so it is not shown there; on a phone the page's side
# margins are narrow (8 px), so that charts get the screen's width (374 of 390 px).
# A phone's narrow side margins: in every page's frame, and again after PAGE_CSS's own margins.
_PHONE_MARGINS = """
@media (max-width: 640px) { [data-testid="stMainBlockContainer"] {padding-left: 0.5rem !important;
    padding-right: 0.5rem !important;} }
"""
# Accessibility on every page (issue 32): a focus outline on everything focusable, in Okabe-Ito blue
# (5.0:1 on white, 4.4:1 on the sidebar's grey; WCAG asks 3:1), off the element so that it shows on a red
# button too (Streamlit's own ring was a pale pink, ~2.2:1, and links had none); a toggle's or a check
# box's input is invisible, so its label carries the outline. Plotly's modebar (8 buttons a chart, each
# a Tab stop) shows only while the mouse is over its chart: hidden, it leaves the Tab order.
FOCUS_COLOUR = "#0072B2"
A11Y_CSS = f"""
.stApp :focus-visible {{outline: 3px solid {FOCUS_COLOUR} !important; outline-offset: 2px !important;}}
.stApp label:has(input:focus-visible) {{outline: 3px solid {FOCUS_COLOUR}; outline-offset: 2px;}}
.js-plotly-plot .modebar-container {{visibility: hidden;}}
.js-plotly-plot:hover .modebar-container {{visibility: visible;}}
.st-key-ln_chart_names, [data-testid="stLayoutWrapper"]:has(> .st-key-ln_chart_names) {{display: none !important;}}
"""
FRAME_CSS = (
    """
.stApp, .stApp p, .stApp li, .stApp span, .stApp label {word-break: keep-all; overflow-wrap: break-word;}
@media (hover: none) { .modebar-container {display: none !important;} }
"""
    + _PHONE_MARGINS
    + A11Y_CSS
)
# The lecture view on any page: larger text for the back of the room (charts scale their own fonts).
LECTURE_TEXT_CSS = """
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li {font-size: 1.3rem;}
[data-testid="stCaptionContainer"] {font-size: 1.1rem;}
[data-testid="stSliderThumbValue"]:not(.st-key-lecture_steps *) p,
[data-testid="stSliderTickBar"] p {font-size: 1.1rem;}
[data-testid="stSliderThumbValue"]:not(.st-key-lecture_steps *) {top: -1.9rem !important;}
"""
# (a slider's value is placed above its thumb for 14-px text: at 1.3rem it sat on the track, issue 21 N23;
# the lecture view's step row keeps its own)
# Chart boxes of the laptop and phone views: the first row (loss and gradient heatmap) fills the screen
# under the page's top (title, Start, status: ~240 px), the others have fixed heights.
BOX_CSS = f"""
[class*="st-key-{TALL}"] {{height: clamp(300px, calc(100vh - 250px), 640px); flex: 0 0 auto !important;}}
[class*="st-key-{LOSS}"] {{height: clamp(300px, calc(100vh - 380px), 600px); flex: 0 0 auto !important;}}
[class*="st-key-{MID}"] {{height: 440px; flex: 0 0 auto !important;}}
.st-key-run_notes {{min-height: 6.6rem;}}  /* a one-line warning, drawn when a run ends */
.st-key-live_status {{min-height: 3.4rem;}}
[class*="st-key-{SHORT}"] {{height: 320px; flex: 0 0 auto !important;}}
@media (max-width: 640px) {{ [class*="st-key-{TALL}"] {{height: 420px;}} }}
"""


# Live and Compare outside the lecture view: a shorter top and title, so Start and the first row of
# charts are in a 1280x720 laptop's first screen (a phone keeps its narrow side margins).
PAGE_CSS = (
    """
[data-testid="stMainBlockContainer"] {padding-top: 3.2rem !important; padding-left: 2rem !important;
    padding-right: 2rem !important;}
[data-testid="stMainBlockContainer"] h1 {font-size: 2rem; padding: 0.2rem 0 0.4rem 0;}
"""
    + _PHONE_MARGINS
)


def scaled_charts(box: str) -> str:
    """CSS: the charts in the boxes keyed `box` drawn for a 1920x1080 screen and scaled to this one by
    --ln-zoom (the lecture view's): the chart's frame 1/z as wide and tall as its box, the chart scaled
    by z with a transform. Not CSS `zoom`: Plotly maps the mouse through transforms but not through zoom
    (plotly.js issue 6169), so at 1280x720 a click on a stability map's cell opened the cell above it and
    hover labels named other points than the one under the mouse; and the transform goes on the chart, not
    on the frame, whose width Streamlit measures for the figure."""
    frame = f'[class*="st-key-{box}"] [data-testid="stFullScreenFrame"]'
    return (
        f"{frame} {{width: calc(100% / var(--ln-zoom)) !important; height: calc(100% / var(--ln-zoom)) !important;}}\n"
        f'[class*="st-key-{box}"] .js-plotly-plot {{transform: scale(var(--ln-zoom)); transform-origin: 0 0;}}\n'
    )


def css(text: str) -> None:
    """Add a style sheet to the page (st.html with only a style element takes no space)."""
    st.html(f"<style>{text}</style>")


# Each box's height in the views it is designed for (the CSS above; the lecture view's boxes in its own
# 1920x1080 px, which it zooms: the same at 1280x720). A figure without a height is first painted at
# Plotly's default 450 px on every update, then stretched to its box: the charts pulsed once a second
# while a run trained (the lecture view's loss plot 632 -> 234 -> 632 px). Painted at its box's height
# first, there is nothing to see.
NOMINAL_PX = {TALL: 470, LOSS: 420, MID: 440, SHORT: 320, FULL: 848, HALF: 420, UPPER: 370, LOWER: 470}


def chart(fig: Any, key: str, box: str, lecture: bool = False) -> None:
    """Draw a Plotly figure filling a box of size class `box` (TALL, MID, SHORT, LOSS, FULL, HALF, UPPER, LOWER)."""
    config = {"displayModeBar": False} if lecture else {"displaylogo": False}
    if fig.layout.height is None:
        fit_to_height(fig, NOMINAL_PX[box], lecture)
    with st.container(key=box + key):
        st.plotly_chart(fig, key=key, width="stretch", height="stretch", theme=None, config=config)


# Names every Plotly chart for a screen reader: role "img" and an aria-label from the figure's title and
# subtitle (what the chart shows, in the page's language), on every chart of every page, also those
# Streamlit draws anew while a run streams. The title is read as text through an inert document (a run's
# label in it is the user's text: nothing of it runs or loads). No "<" before a letter in the script:
# Streamlit's sanitizer (DOMPurify) drops a script whose text has one.
_CHART_NAMES_JS = """<script>(() => { if (window.lnChartNames) return; window.lnChartNames = true;
  const plain = (html) => new DOMParser().parseFromString(String(html || '').replace(/\\x3cbr\\s*\\/?>/gi, ' '),
    'text/html').body.textContent.replace(/\\s+/g, ' ').trim();
  const name = (gd) => { const title = (gd.layout || {}).title || {};
    const head = plain(typeof title === 'string' ? title : title.text);
    const sub = plain(title.subtitle && title.subtitle.text);
    return head && sub ? head + '. ' + sub : head || sub; };
  let queued = false;
  const label = () => { queued = false;
    for (const gd of document.querySelectorAll('.js-plotly-plot')) {
      const title = (gd.layout || {}).title;  /* parsed again only when it changed: a run redraws often */
      if (gd.lnTitle === title && gd.hasAttribute('aria-label')) continue;
      gd.lnTitle = title; const text = name(gd);
      if (!text) continue;
      if (gd.getAttribute('role') !== 'img') gd.setAttribute('role', 'img');
      if (gd.getAttribute('aria-label') !== text) gd.setAttribute('aria-label', text); } };
  new MutationObserver(() => { if (!queued) { queued = true; requestAnimationFrame(label); } })
    .observe(document.body, {childList: true, subtree: true});
  label(); })();</script>"""


def chart_names() -> None:
    """Give every chart on the page an accessible name (`_CHART_NAMES_JS`); drawn once per page, in a
    hidden container (it and its wrapper: the script takes no room, not even the page's 16-px gap)."""
    with st.container(key="ln_chart_names"):
        st.html(_CHART_NAMES_JS, unsafe_allow_javascript=True)


# Scrolls the element with a Streamlit key into view once it is drawn (it may arrive after this script).
_SCROLL_JS = """<script>(() => {{ let tries = 0; /* {token} */
  const go = () => {{ const el = document.querySelector('.st-key-{key}');
    if (el) {{ el.style.scrollMarginTop = '4.5rem';  /* below Streamlit's fixed header */
      el.scrollIntoView({{behavior: 'smooth', block: 'start'}}); }} else if (tries++ < 100) setTimeout(go, 100); }};
  go(); }})();</script>"""


def scroll_into_view(key: str, token: int) -> None:
    """Bring the container with this key into view in the browser, once per `token` (a new token, a new
    scroll: e.g. the id of the run just opened). Streamlit has no scroll API: a small script does it.
    Its slot is drawn on every run, so the elements after it keep their place (an expander below stays
    open)."""
    slot = st.empty()
    if st.session_state.get(keys.SCROLLED + key) == token:
        return
    st.session_state[keys.SCROLLED + key] = token
    slot.html(_SCROLL_JS.format(key=key, token=int(token)), unsafe_allow_javascript=True)
