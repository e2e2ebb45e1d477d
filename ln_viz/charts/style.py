"""The look every chart shares: Okabe-Ito colours (one per norm position, on every chart), fonts that
start at 16 px and grow 1.4x in the lecture view (the margins do not), a small template of our own, and
`_layout`, which sets a figure's whole layout in one assignment at the height the page asks for."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import plotly.graph_objects as go

from ln_viz.i18n import t

# Okabe & Ito (2008), "Color Universal Design": distinguishable with every common colour-vision deficiency.
NORM_COLORS: dict[str, str] = {
    "post": "#D55E00",  # vermillion
    "pre": "#0072B2",  # blue
    "peri": "#009E73",  # bluish green
    "deepnorm": "#CC79A7",  # reddish purple
    "none": "#E69F00",  # orange
    "reordered": "#56B4E9",  # sky blue
    # The eighth Okabe-Ito colour left, yellow (#F0E442), reads at 1.3:1 on white: a line of it all but vanishes.
    # Grey is the ninth colour of R's palette.colors("Okabe-Ito"): 2.8:1 on white, apart from Post-LN's and
    # Pre-LN's colours (Mix-LN's partners) under deuteranopia and protanopia; its own dash keeps it apart in
    # greyscale and from the colours it nears there (tests/test_chart_accessibility.py).
    "mix": "#999999",  # grey
}
# And a dash per norm position, so that two placements differ without colour too (greyscale, a
# black-and-white handout, achromatopsia): Post-LN solid, Pre-LN long dashes. Runs that share a position
# take the next dashes of DASHES in turn (`charts.sample._run_styles`). The unigram reference line is grey
# "dash": no position's first line uses it but "none" (orange, rarely beside it).
DASH_DOT_DOT = "12px,4px,3px,4px,3px,4px"  # a seventh pattern (Plotly has six named ones): Mix-LN's
DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot", DASH_DOT_DOT)
NORM_DASHES: dict[str, str] = {
    "post": "solid",
    "pre": "longdash",
    "peri": "dot",
    "deepnorm": "dashdot",
    "none": "dash",
    "reordered": "longdashdot",
    "mix": DASH_DOT_DOT,
}
# The second run of a norm position on one chart (Compare's A and B both Post-LN, or both Pre-LN): black, an
# Okabe-Ito colour that stays apart from every position's colour under deuteranopia and protanopia (CIELAB
# ΔE 57-103 after Machado et al. 2009's simulation) and in greyscale (ΔE 46-71), where a lighter second colour
# (sky blue beside Pre-LN's blue, yellow) did not; tests/test_chart_accessibility.py measures it.
SECOND_COLOR = "#000000"
PARAM_COLORS: dict[str, str] = {
    "attn.q": "#56B4E9",
    "attn.k": "#009E73",
    "attn.v": "#E69F00",
    "attn.o": "#CC79A7",
    "ffn.w1": "#999999",
    "ffn.w2": "#000000",  # the paper's Figure 3 matrix: drawn thick, on top
}
# A matrix by its role (schema.PARAM_ROLES; a model of the user's own: its card's roles), so a SwiGLU's gate,
# up and down and a fused qkv get colours of their own, and ln-viz's w1 and w2 keep theirs.
ROLE_COLORS: dict[str, str] = {
    "attn.q": "#56B4E9",
    "attn.k": "#009E73",
    "attn.v": "#E69F00",
    "attn.o": "#CC79A7",
    "attn.qkv": "#56B4E9",  # q, k and v in one matrix: q's colour
    "ffn.gate": "#0072B2",  # apart from v (orange) and up (grey)
    "ffn.in": "#999999",
    "ffn.out": "#000000",
}
GREY = "#555555"
FAINT = "#BBBBBB"
GRID = "#E6E6E6"
FONT_FAMILY = 'Arial, "Noto Sans KR", "Nanum Gothic", "Malgun Gothic", "Apple SD Gothic Neo", sans-serif'
BASE_FONT = 16  # px; legible at 1280x720 on a projector
LECTURE_SCALE = 1.4
# A small template of our own: the built-in ones add ~8 KB of JSON to every figure on every redraw.
_AXIS_STYLE: dict[str, Any] = {
    "gridcolor": GRID,
    "linecolor": "#444444",
    "zeroline": False,
    "ticks": "outside",
    "automargin": True,
}
_TEMPLATE: dict[str, Any] = {
    "layout": {
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "colorway": list(NORM_COLORS.values()),
        "xaxis": dict(_AXIS_STYLE),
        "yaxis": dict(_AXIS_STYLE),
    }
}

# Built once: validating the template dict costs ~80 ms per figure, a live redraw makes six.
_TEMPLATE_OBJ = go.layout.Template(_TEMPLATE)


def _scale(lecture: bool) -> float:
    return LECTURE_SCALE if lecture else 1.0


def scaled_px(size: float, lecture: bool) -> int:
    return round(size * _scale(lecture))


LECTURE_MIN_TEXT = 24  # px: the back row's least (issue 21 N19: 2.2 % of a 1080-px screen's height)


def _text_px(size: float, lecture: bool) -> int:
    """A font size that must read from the back of a room: `scaled_px`, and in the lecture view at least
    LECTURE_MIN_TEXT (tick labels, legend entries, colour-bar labels)."""
    return max(scaled_px(size, lecture), LECTURE_MIN_TEXT) if lecture else scaled_px(size, lecture)


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`base` updated by `extra` as update_layout would: nested dicts merge, anything else replaces."""
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


DEFAULT_HEIGHT = 450  # px: Plotly's own default, what a chart gets when the page names no height
_MARGIN = {"l": 70, "r": 30, "b": 55}  # px, the same in the lecture view: automargin grows it for larger text


def _title_text(text: str) -> dict[str, Any]:
    """The title's text split at its first " · " into the title and a subtitle (for animation frames)."""
    head, _, tail = text.partition(" · ")
    return {"text": head, "subtitle": {"text": tail}}


def _title(text: str, lecture: bool, note: str | None = None) -> dict[str, Any]:
    """The chart title, split at its first " · ": the head large, the rest (step, settings) below it
    as a subtitle, so a half-width chart shows two short lines instead of cutting one long one. `note`
    (what the axes leave out: clipped values) is the subtitle's last line: stacked under the title, it
    cannot print over it at any width (a note at the plot's top right corner did, at half width)."""
    parts = _title_text(text)
    if note:
        tail = parts["subtitle"]["text"]
        parts["subtitle"]["text"] = f"{tail}<br>{note}" if tail else note
    title: dict[str, Any] = {
        "text": parts["text"],
        "font": {"size": scaled_px(20, lecture)},
        "x": 0.01,
        "xanchor": "left",
        "xref": "container",
        "y": 1,
        "yref": "container",
        "yanchor": "top",
        "pad": {"t": 8},
    }
    if parts["subtitle"]["text"]:
        title["subtitle"] = {**parts["subtitle"], "font": {"size": scaled_px(15, lecture), "color": GREY}}
    return title


def _note_lines(note: str, lecture: bool) -> str:
    """A title note (`_layout`'s `note`) in two lines outside the lecture view when it is long: Plotly does
    not wrap a subtitle, and a phone's chart is about 360 px wide (the English clipped-loss note, ~380 px,
    was cut at its edge)."""
    return note if lecture or _em(note) <= 19 else note.replace(" (", "<br>(", 1)


def _top_margin(text: str, lecture: bool, note: str | None = None) -> int:
    """Room above the plot for the title (and its subtitle, with a note's line): from the font sizes,
    not a scaled constant."""
    sub_lines = (" · " in text) + (note.count("<br>") + 1 if note else 0)
    lines = (
        scaled_px(20, lecture) * 1.4
        + scaled_px(15, lecture) * (1.7 if sub_lines else 0)
        + scaled_px(15, lecture) * 1.3 * max(sub_lines - 1, 0)
    )
    return round(lines + scaled_px(BASE_FONT, lecture) * 0.6 + 14)  # + half a tick label above the plot


def _plot_height(height: int | None, top: int, bottom: int) -> float:
    """About how tall the plot area is (px) in a figure `height` tall: for fitting axis titles and
    colourbar labels to it."""
    return max((height or DEFAULT_HEIGHT) - top - bottom, 40)


def _em(text: str) -> float:
    """About how wide a text is, in em: Arial's Latin letters ~0.56 em, Hangul and CJK a full em."""
    return sum(1.0 if ord(c) >= 0x2E80 else 0.56 for c in text)


def _fit_axis_title(axis: dict[str, Any], span_px: float, font_px: int, least_px: int = 10) -> None:
    """Fit a y axis title to its axis (a title longer than its axis runs past the plot's top into the
    chart title): first a smaller font, down to 0.8x (0.6x for Hangul: Plotly sets the lines of a
    rotated Hangul title so close they touch, so one line is preferred), on one line; then lines broken
    at spaces; past three lines the font shrinks further, never under `least_px` (the lecture view's
    LECTURE_MIN_TEXT: shrunk to 0.8x, the loss title was 21-22 px there and a Korean one 10-16 px, UX round 4
    L4, L5: such a title takes more lines instead)."""
    title = axis.get("title")
    text = title.get("text") if isinstance(title, dict) else None
    if not text or "<br>" in text or _em(text) * font_px <= span_px:
        return
    least = 0.6 if any("\uac00" <= c <= "\ud7a3" for c in text) else 0.8  # Hangul: lines would overlap
    size = max(round(least * font_px), math.floor(span_px / _em(text)), least_px)
    lines = _wrap_em(text, max(span_px / size, 4.0))
    while len(lines) > 3 and size > least_px:
        size -= 1
        lines = _wrap_em(text, max(span_px / size, 4.0))
    title["text"] = "<br>".join(lines)
    title["font"] = {**title.get("font", {}), "size": size}


def _wrap_em(text: str, budget: float) -> list[str]:
    """`text` broken at spaces into lines of at most `budget` em (a longer word stays whole)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and _em(lines[-1] + " " + word) <= budget:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def two_lines(text: str) -> str:
    """A label's text broken after its first ": " ("unigram loss:<br>letter frequencies only"), for a
    label that must fit a phone's plot area; a text without one is left whole."""
    head, sep, tail = text.partition(": ")
    return f"{head}:<br>{tail}" if sep and tail else text


def _wrap(text: str, width: int = 12) -> str:
    """Break a short label into lines of about `width` characters at spaces (Plotly's <br>)."""
    return "<br>".join(_wrap_em(text, width * 0.56))


_FITTED = "ln_viz_y_titles"  # layout.meta's record of the y titles as given, for fit_to_height


def _fit_y_titles(layout: dict[str, Any], plot_px: float, lecture: bool) -> None:
    """`_fit_axis_title` for every y axis of a merged layout, each over its share of the plot height; the titles
    as given are kept in the layout's meta (fit_to_height fits them again)."""
    given = {}
    for name, axis in layout.items():
        if name.startswith("yaxis") and isinstance(axis, dict) and isinstance(axis.get("title"), dict):
            title = axis["title"]
            given[name] = [title.get("text"), title.get("font", {}).get("size")]
            lo, hi = axis.get("domain", (0.0, 1.0))
            # Plotly draws axis titles at 1.2x the layout font (the default when none is set)
            least = LECTURE_MIN_TEXT if lecture else 10
            _fit_axis_title(axis, plot_px * (hi - lo), round(scaled_px(BASE_FONT, lecture) * 1.2), least)
    if given and isinstance(layout.get("meta", {}), dict):
        layout["meta"] = {**layout.get("meta", {}), _FITTED: given}


def _legend_px(fig: go.Figure, lecture: bool) -> float:
    """About how tall a legend under the plot is: two entries a row (Plotly aligns them in columns)."""
    n = sum(1 for tr in fig.data if tr.showlegend is not False and tr.name)
    return math.ceil(max(n, 1) / 2) * _text_px(14, lecture) * 1.9 + 10


def _layout(
    fig: go.Figure,
    title: str,
    lecture: bool,
    uirevision: str,
    legend_below: bool = True,
    height: int | None = None,
    note: str | None = None,
    **extra: Any,
) -> go.Figure:
    """Fonts, margins, legend and template shared by every chart, merged with the chart's own layout
    (`extra`, as update_layout takes it) and set in one assignment: each update_layout call costs
    3-5 ms on a figure with traces, and a live tab redraws six figures a second.
    The lecture view scales the text, not the margins (automargin makes room for larger tick labels).
    The legend (`legend_below`) sits at the figure's bottom edge, referred to the container: Plotly
    then reserves its room below the x axis title, so the two cannot overlap at any height (placed at a
    paper fraction under the plot, as before, it ran into the x title on short charts). `height` (px;
    None: Plotly's default, 450) is what the page gives the chart; `note`, a grey line under the title's
    subtitle (see `_title`)."""
    top = _top_margin(title, lecture, note)
    layout: dict[str, Any] = {
        "font": {"family": FONT_FAMILY, "size": _text_px(BASE_FONT, lecture), "color": "#222222"},
        "title": _title(title, lecture, note),
        "margin": {**_MARGIN, "t": top},
        "hoverlabel": {"font": {"size": scaled_px(15, lecture), "family": FONT_FAMILY}},
        "uirevision": uirevision,
        "showlegend": True,
    }
    if height is not None:
        layout["height"] = int(height)
    if legend_below:
        layout["legend"] = {
            "orientation": "h",
            "x": 0,
            "xanchor": "left",
            "y": 0,
            "yref": "container",
            "yanchor": "bottom",
            "font": {"size": _text_px(14, lecture)},
        }
    current = fig.layout.to_plotly_json()  # axes of subplots, shapes and annotations added so far
    current.pop("template", None)  # plotly's default, replaced by ours
    merged = _merge(_merge(current, layout), extra)
    bottom = merged["margin"].get("b", _MARGIN["b"]) + (_legend_px(fig, lecture) if legend_below else 0)
    _fit_y_titles(merged, _plot_height(height, merged["margin"].get("t", top), bottom + 40), lecture)
    fig.layout = {**merged, "template": _TEMPLATE_OBJ}
    return fig


def plain_layout(fig: go.Figure, title: str, lecture: bool, height: int, **extra: Any) -> go.Figure:
    """The layout of a chart drawn once, not streamed (the stability map's): Plotly's own template, a
    one-line title, margins that grow in the lecture view like the text; `extra` as update_layout takes
    it, replacing any key it names."""
    layout: dict[str, Any] = {
        "font": {"family": FONT_FAMILY, "size": _text_px(BASE_FONT, lecture), "color": "#222222"},
        "title": {"text": title, "font": {"size": scaled_px(19, lecture)}, "x": 0.01, "xanchor": "left"},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "height": scaled_px(height, lecture),
        "margin": margin(lecture, top=70),
        "hoverlabel": {"font": {"size": scaled_px(14, lecture), "family": FONT_FAMILY}},
    }
    fig.update_layout(**{**layout, **extra})
    return fig


def margin(lecture: bool, top: int, bottom: int = 60, left: int = 70, right: int = 20) -> dict[str, int]:
    """Plot margins (px at normal size) scaled as the text is in the lecture view (for `plain_layout`)."""
    return {
        "l": scaled_px(left, lecture),
        "r": scaled_px(right, lecture),
        "t": scaled_px(top, lecture),
        "b": scaled_px(bottom, lecture),
    }


def step_line(fig: go.Figure, step: int, lecture: bool = False) -> go.Figure:
    """A copy of a chart over training steps (the loss, a gradient heatmap, a probe over steps) with a
    vertical line at `step`: the step the step-dependent charts show (the step control's, during Play), so
    a room sees where the profile is on the loss and the heatmaps. `fig` itself is left as it was (a
    finished run's figures are cached and shared)."""
    marked = go.Figure(fig)
    marked.add_vline(x=step, line={"color": GREY, "width": scaled_px(2, lecture), "dash": "dot"}, layer="above")
    return marked


def _f32(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def norm_label(position: str, lang: str) -> str:
    """The short name of a norm position on charts ("Post-LN")."""
    return t(f"chart.norm.{position}", lang)


def _hover(lang: str, *parts: tuple[str, str]) -> str:
    """A hovertemplate from (label key, value format) pairs, e.g. ("chart.step", "%{x}")."""
    return "<br>".join(f"{t(key, lang)} {fmt}" for key, fmt in parts) + "<extra></extra>"


def _empty_note(
    fig: go.Figure, lang: str, lecture: bool, key: str = "chart.waiting", xref: str = "paper", yref: str = "paper"
) -> None:
    """A grey note in the middle of an empty chart ("waiting for the first step")."""
    fig.add_annotation(
        text=t(key, lang),
        xref=xref,
        yref=yref,
        x=0.5,
        y=0.5,
        showarrow=False,
        font={"size": scaled_px(18, lecture), "color": GREY},
        bgcolor="white",  # readable over reference lines
    )


def _corner_note(fig: go.Figure, text: str, lecture: bool, inside: str) -> None:
    """A small grey note inside the lower right corner of the subplot `inside` (an axis pair, "x y"), on a
    white ground (the profile's floor note). A loss chart's clipped values are said in its title instead
    (`_title`: a note above the plot's corner met a long subtitle)."""
    xref, yref = (f"{a} domain" for a in inside.split())
    fig.add_annotation(
        xref=xref,
        yref=yref,
        x=1,
        y=0,
        xanchor="right",
        yanchor="bottom",
        showarrow=False,
        text=text,
        font={"size": scaled_px(13, lecture), "color": GREY},
        bgcolor="rgba(255,255,255,0.8)",
    )
