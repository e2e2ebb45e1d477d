"""A run's (or a Compare pair's) animation as MP4 or GIF (ln_viz/video.py), drawn in a thread of its own while the
page stays usable, its progress bar redrawn each second by a fragment, then offered for download: the Runs page
and Compare (its page view and its lecture view). Drawn in the page's own script run, it greyed the page for
minutes (UX round 4 M9)."""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from ln_viz.i18n import LocalizedError, t
from ln_viz.snapshot import RunData
from ln_viz.ui import keys
from ln_viz.ui.safe import md

log = logging.getLogger(__name__)

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
    """One button per format: "Make the video (MP4)" starts drawing the frames in a thread (`VideoRender`); a
    progress bar that says how many and about how long takes the buttons' place until it is made, then its
    download button replaces the button. One made video per `key` is kept in the session, for `token` (what it
    is of: the run and its last change), its format and language. Nothing for runs with no probe step in common."""
    from ln_viz import video

    if not video.frame_steps(datas):
        return
    row = row if row is not None else st.container(horizontal=True)
    job = st.session_state.get(keys.VIDEO_JOB + key)
    if job is not None and job.thread.is_alive():  # one being drawn: its progress, redrawn every second
        with row:
            _follow(key)
        return
    if job is not None:  # drawn: kept for its download button, or why it could not be made, said once
        del st.session_state[keys.VIDEO_JOB + key]
        if job.blob is not None:
            st.session_state[keys.VIDEO + key] = ((job.token, job.fmt, job.lang), job.blob)  # one at a time: MBs
        else:
            st.error(md(job.error or ""))
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
            st.session_state[keys.VIDEO_JOB + key] = VideoRender(datas, fmt, lang, labels, token)
            st.rerun()


def _duration(seconds: float, lang: str) -> str:
    """'about 2 min' / '40 s' in the page's words."""
    if seconds >= 90:
        return t("video.minutes", lang, n=round(seconds / 60))
    return t("video.seconds", lang, n=max(5, int(round(seconds / 5) * 5)))


class VideoRender:
    """A video drawn in a thread of its own: how far it is (`share`), then its bytes or the sentence that says why
    it could not be made (in its language). The thread touches no session state: the fragment reads this."""

    def __init__(self, datas: Sequence[RunData], fmt: str, lang: str, labels: Sequence[str] | None, token: Any):
        from ln_viz import video

        self.fmt, self.lang, self.token = fmt, lang, token
        self.frames = video.frame_count(len(video.frame_steps(datas)))
        self.estimate = video.estimate_seconds(datas, fmt)
        self.share, self.start = 0.0, time.monotonic()
        self.blob: bytes | None = None
        self.error: str | None = None
        args = (list(datas), list(labels) if labels is not None else None)
        self.thread = threading.Thread(target=self._draw, args=args, name="ln-viz-video", daemon=True)
        self.thread.start()

    def _draw(self, datas: list[RunData], labels: list[str] | None) -> None:
        from ln_viz import video

        def progress(share: float) -> None:
            self.share = min(1.0, max(0.0, share))

        try:
            with tempfile.TemporaryDirectory() as tmp:
                path = video.export_video(datas, Path(tmp) / f"video.{self.fmt}", self.fmt, lang=self.lang,
                                          labels=labels, progress=progress)  # fmt: skip
                self.blob = path.read_bytes()
        except LocalizedError as e:
            self.error = e.message(self.lang)
        except OSError as e:  # the server's own temporary folder (full, removed): one sentence, no server paths
            self.error = LocalizedError(
                "err.video_temp", path=tempfile.gettempdir(), reason=video.os_reason(e)
            ).message(self.lang)
        except Exception as e:  # noqa: BLE001 -- a bug: in this thread it would vanish, the page waiting on nothing
            log.exception("the video thread failed")
            self.error = LocalizedError("err.video_failed", reason=type(e).__name__).message(self.lang)

    def text(self) -> str:
        """'Drawing 60 frames, about 40 s' at first, then how many are drawn and about how long is left."""
        done = min(self.frames, round(self.share / 0.97 * self.frames))
        if 0 < done < self.frames:
            left = (time.monotonic() - self.start) / done * (self.frames - done)
            return t("video.progress", self.lang, done=done, frames=self.frames, time=_duration(left, self.lang))
        return t("video.drawing", self.lang, frames=self.frames, time=_duration(self.estimate, self.lang))


@st.fragment(run_every=1.0)
def _follow(key: str) -> None:
    """The video being drawn for `key`: its progress bar each second; once drawn, the page is drawn again (its
    download button, or the sentence that says why it could not be made: `video_buttons`)."""
    job = st.session_state.get(keys.VIDEO_JOB + key)
    if job is None:
        return
    if job.thread.is_alive():
        st.progress(job.share, text=job.text())
        return
    st.rerun(scope="app")
