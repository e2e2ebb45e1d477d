"""What a rendered page's Plotly charts put where: the text boxes of every chart, read from the SVG
Plotly.js drew in the browser, and the checks a layout must pass (no text on text, no text cut by its
chart's edge, charts inside the viewport).

`MEASURE` runs in the page (Playwright's `evaluate`). It returns null while the page is not settled (a
stale element left by a fragment rerun, a chart still hidden while it mounts), so that
`page.wait_for_function(MEASURE)` gives one consistent reading. Only what a viewer sees is measured:
hover labels, empty texts and anything hidden (display, visibility, opacity 0, zero size) are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

TOLERANCE_PX = 1.0  # boxes touching or overlapping by a pixel are not a collision (antialiasing, rounding)

MEASURE = """() => {
  if (document.querySelector('[data-stale="true"]')) return null;
  const shown = el => {
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0) return false;
    }
    return true;
  };
  const rect = el => { const r = el.getBoundingClientRect();
    return {left: r.left, top: r.top, right: r.right, bottom: r.bottom}; };
  const union = els => {
    const rs = els.map(rect).filter(r => r.right > r.left && r.bottom > r.top);
    if (!rs.length) return null;
    return {left: Math.min(...rs.map(r => r.left)), top: Math.min(...rs.map(r => r.top)),
            right: Math.max(...rs.map(r => r.right)), bottom: Math.max(...rs.map(r => r.bottom))};
  };
  const words = el => {  // a multi-line SVG text is one tspan.line per line
    const lines = [...el.querySelectorAll('tspan.line')];
    const text = lines.length ? lines.map(l => l.textContent).join(' ') : el.textContent;
    return (text || '').replace(/\\s+/g, ' ').trim();
  };
  const charts = [];
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    if (!shown(gd)) { if (gd.getBoundingClientRect().width > 0) return null; continue; }
    const keyed = gd.closest('[class*="st-key-"]');
    const key = keyed ? [...keyed.classList].find(c => c.startsWith('st-key-')).slice(7) : '';
    const items = [];
    const add = (kind, box, text) => {
      if (box && text && box.right - box.left > 0 && box.bottom - box.top > 0) items.push({kind, text, box});
    };
    const texts = (sel, kind) => gd.querySelectorAll(sel).forEach(el => {
      if (!el.closest('.hoverlayer') && shown(el)) add(kind, rect(el), words(el));
    });
    texts('.infolayer .g-gtitle text.gtitle', 'title');
    gd.querySelectorAll('.infolayer text').forEach(el => {
      const m = [...el.classList].find(c => /^[xy][0-9]*title$/.test(c));
      if (m && shown(el)) add(m.replace('title', ' title'), rect(el), words(el));
    });
    gd.querySelectorAll('.legend .traces').forEach(tr => {
      if (!shown(tr)) return;
      add('legend item', union([...tr.children].filter(c => !c.classList.contains('legendtoggle'))),
          words(tr.querySelector('.legendtext') || tr));
    });
    texts('.legend .legendtitletext', 'legend title');
    texts('.colorbar .cbtitle text', 'colourbar title');
    gd.querySelectorAll('.colorbar text').forEach(el => {
      if (!el.closest('.cbtitle') && shown(el)) add('colourbar label', rect(el), words(el));
    });
    texts('.annotation text.annotation-text', 'annotation');
    texts('.cartesianlayer .xtick text, .cartesianlayer .ytick text', 'tick label');
    gd.querySelectorAll('.updatemenu-container').forEach(m => {
      if (shown(m)) add('buttons', union([...m.querySelectorAll('.updatemenu-button')]), words(m));
    });
    gd.querySelectorAll('.slider-container').forEach(s => {
      if (shown(s)) add('slider', rect(s), 'step slider');
    });
    // Plotly fades the modebar's groups in on hover (their opacity, not the bar's): only shown ones count
    add('modebar', union([...gd.querySelectorAll('.modebar-group')].filter(shown)), 'modebar');
    const title = gd.querySelector('.g-gtitle text.gtitle');
    const drag = gd.querySelector('.draglayer .xy .nsewdrag') || gd.querySelector('.nsewdrag');
    charts.push({key, title: title ? words(title) : '', box: rect(gd.querySelector('.svg-container') || gd),
                 plot: drag ? rect(drag) : null, items});
  }
  return {charts, innerWidth: window.innerWidth, innerHeight: window.innerHeight};
}"""

# Scroll every scrolled element (Streamlit scrolls its main section, not the window) back to the top,
# so that chart positions read afterwards are those of the first screen.
SCROLL_TOP = """() => { window.scrollTo(0, 0);
  document.querySelectorAll('*').forEach(el => { if (el.scrollTop) el.scrollTop = 0; }); }"""


@dataclass(frozen=True)
class Box:
    left: float
    top: float
    right: float
    bottom: float

    def overlap(self, other: Box) -> tuple[float, float]:
        """Width and height of the intersection (negative when apart)."""
        w = min(self.right, other.right) - max(self.left, other.left)
        h = min(self.bottom, other.bottom) - max(self.top, other.top)
        return w, h

    def sticks_out_of(self, outer: Box) -> float:
        """How many pixels of this box lie outside `outer`, at most (0 when inside)."""
        sides = (outer.left - self.left, self.right - outer.right, outer.top - self.top, self.bottom - outer.bottom)
        return max(*sides, 0)

    def __str__(self) -> str:
        return f"x {self.left:.0f}-{self.right:.0f}, y {self.top:.0f}-{self.bottom:.0f}"


def _box(d: dict) -> Box:
    return Box(d["left"], d["top"], d["right"], d["bottom"])


def _name(chart: dict) -> str:
    return f"chart {chart['title']!r} ({chart['key'] or 'no key'})"


def _label(item: dict) -> str:
    text = item["text"] if len(item["text"]) <= 60 else item["text"][:57] + "..."
    return f"{item['kind']} {text!r} [{_box(item['box'])}]"


def overlaps(chart: dict) -> list[str]:
    """Every pair of text boxes of one chart that overlap by more than the tolerance in both directions.
    Tick labels are not compared with each other (Plotly spaces them itself); with everything else they are."""
    found = []
    items = chart["items"]
    for i, a in enumerate(items):
        for b in items[i + 1 :]:
            if a["kind"] == b["kind"] == "tick label":
                continue
            w, h = _box(a["box"]).overlap(_box(b["box"]))
            if w > TOLERANCE_PX and h > TOLERANCE_PX:
                found.append(f"{_name(chart)}: {_label(a)} overlaps {_label(b)} by {w:.0f}x{h:.0f} px")
    return found


def cut_texts(chart: dict) -> list[str]:
    """Every text box that sticks out of its chart's drawing area (the part outside is not drawn)."""
    outer = _box(chart["box"])
    found = []
    for item in chart["items"]:
        out = _box(item["box"]).sticks_out_of(outer)
        if out > TOLERANCE_PX:
            found.append(f"{_name(chart)}: {_label(item)} is cut by the chart's edge [{outer}] ({out:.0f} px out)")
    return found


def outside_viewport(reading: dict) -> list[str]:
    """Every chart not wholly inside the first screen (after scrolling to the top)."""
    width, height = reading["innerWidth"], reading["innerHeight"]
    screen = Box(0, 0, width, height)
    found = []
    for chart in reading["charts"]:
        box = _box(chart["box"])
        if box.sticks_out_of(screen) > TOLERANCE_PX:
            found.append(f"{_name(chart)} [{box}] is not inside the {width}x{height} viewport without scrolling")
    return found


def plot_height(reading: dict, key: str) -> float | None:
    """Height in px of the plot area (Plotly's main drag rectangle) of the chart with this Streamlit key."""
    for chart in reading["charts"]:
        if chart["key"] == key and chart["plot"]:
            return chart["plot"]["bottom"] - chart["plot"]["top"]
    return None
