"""A run's (or a Compare pair's) animation as MP4 or GIF, made on the page (ln_viz/video.py) with a progress
bar, then offered for download: the Runs page and Compare."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from ln_viz.i18n import LocalizedError, t
from ln_viz.snapshot import RunData
from ln_viz.ui import keys
from ln_viz.ui.safe import md

MIMES = {"mp4": "video/mp4", "gif": "image/gif"}


def video_buttons(
    datas: Sequence[RunData],
    lang: str,
    key: str,
    file_stem: str,
    token: Any,
    labels: Sequence[str] | None = None,
    row: Any = None,
) -> None:
    """One button per format: "Make the video (MP4)" draws the frames under a progress bar that says how many
    and about how long (the server's time, so only on a click), then its download button
    replaces it. One made video per `key` is kept in the session, for `token` (what it is of: the run and
    its last change), its format and language. Nothing for runs with no probe step in common."""
    from ln_viz import video

    if not video.frame_steps(datas):
        return
    row = row if row is not None else st.container(horizontal=True)
    made = st.session_state.get(keys.VIDEO + key)
    for fmt in MIMES:
        if made is not None and made[0] == (token, fmt, lang):
            row.download_button(
                t(f"video.download_{fmt}", lang),
                data=made[1],
                file_name=f"{file_stem}.{lang}.{fmt}",
                mime=MIMES[fmt],
                key=f"{key}_dl_{fmt}",
                on_click="ignore",
                icon=":material/movie:",
                type="primary",
            )
        elif row.button(t(f"video.make_{fmt}", lang), key=f"{key}_make_{fmt}", icon=":material/movie:"):
            blob = _make(datas, fmt, lang, labels)
            if blob is not None:
                st.session_state[keys.VIDEO + key] = ((token, fmt, lang), blob)  # one at a time: videos are MBs
                st.rerun()


def _duration(seconds: float, lang: str) -> str:
    """'about 2 min' / '40 s' in the page's words."""
    if seconds >= 90:
        return t("video.minutes", lang, n=round(seconds / 60))
    return t("video.seconds", lang, n=max(5, int(round(seconds / 5) * 5)))


def _make(datas: Sequence[RunData], fmt: str, lang: str, labels: Sequence[str] | None) -> bytes | None:
    """The video's bytes, drawn under a progress bar that says how many frames and about how long (from the
    measured time a frame, then from this video's own frames); None (and the reason shown) when it cannot
    be made."""
    from ln_viz import video

    frames = video.frame_count(len(video.frame_steps(datas)))
    bar = st.progress(
        0.0, text=t("video.drawing", lang, frames=frames, time=_duration(video.estimate_seconds(datas, fmt), lang))
    )
    start = time.monotonic()

    def progress(share: float) -> None:
        done = min(frames, round(share / 0.97 * frames))
        if 0 < done < frames:
            left = (time.monotonic() - start) / done * (frames - done)
            text = t("video.progress", lang, done=done, frames=frames, time=_duration(left, lang))
            bar.progress(min(1.0, max(0.0, share)), text=text)

    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = video.export_video(list(datas), Path(tmp) / f"video.{fmt}", fmt, lang=lang, labels=labels,
                                      progress=progress)  # fmt: skip
            return path.read_bytes()
    except LocalizedError as e:
        bar.empty()
        st.error(md(e.message(lang)))
        return None
    except OSError as e:  # the page's own temporary folder (full, removed): one sentence, no server paths
        bar.empty()
        st.error(
            md(LocalizedError("err.video_temp", path=tempfile.gettempdir(), reason=video.os_reason(e)).message(lang))
        )
        return None
