"""A browser tab as the server sees it, for the load tests (benchmarks/load_test.py, benchmarks/watch_load.py)
and tests/test_package.py: a websocket client that speaks Streamlit's protocol (the page's script runs, its
fragments re-run as the server asks, a click is a widget change) without rendering anything. Its own module, so
that the two load tests share it without importing each other."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

STATUS_LINE = re.compile(r"\||Queued: place")  # `Step 12/400 | ...` or the queue place
SMALL_RUN = "depth=2&d=32&heads=2&steps={steps}&probe=10"  # 1,000 steps: ~6 s alone on 2 cores


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Tab:
    """One browser tab as the server sees it: a websocket speaking Streamlit's protocol. It runs the
    page with a query string, re-runs the page's fragments as the server asks (auto_rerun, as the
    browser's timer does), presses buttons and changes widgets, and reads the markdown it is sent."""

    def __init__(self, url: str, query: str, page: str = "") -> None:
        self.ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
        self.query = query
        self.page = page  # the page's url path ("runs"): the first run opens it; "" is the default page
        self.ws = None
        self.page_hash = ""
        self.widget_ids: dict[str, str] = {}  # user key -> widget id
        self.widget_states: dict[str, object] = {}  # widget id -> its WidgetState, sent with every rerun
        self.texts: list[str] = []  # markdown bodies seen (newest last)
        self.finished = asyncio.Event()  # the full script run started after the last rerun() finished
        self.exceptions = 0
        self.folded = 0  # reruns answered by the run under way when they were asked for
        self._awaiting = False  # a full rerun was asked for; its run id is not known yet
        self._run_id: str | None = None  # the run answering the last full rerun asked for
        self._timers: dict[str, asyncio.Task] = {}
        self._intervals: dict[str, float] = {}
        self._reader: asyncio.Task | None = None

    async def open(self) -> None:
        import websockets

        self.ws = await websockets.connect(self.ws_url, subprotocols=["streamlit"], max_size=None)
        self._reader = asyncio.create_task(self._read())
        await self.rerun()
        await asyncio.wait_for(self.finished.wait(), 120)

    async def rerun(self, widgets: list | None = None, fragment_id: str = "") -> None:
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = self.query
        state.page_script_hash = self.page_hash
        if not self.page_hash:
            state.page_name = self.page
        if fragment_id:
            state.fragment_id = fragment_id
            state.is_auto_rerun = True
        else:
            self.finished.clear()
            self._awaiting, self._run_id = True, None
        # As the browser does: the value of every widget on the page, these ones changed.
        changed = {w.id: w for w in widgets or []}
        for w in [*(v for k, v in self.widget_states.items() if k not in changed), *changed.values()]:
            state.widget_states.widgets.append(w)
        for w in changed.values():
            if not w.HasField("trigger_value"):
                self.widget_states[w.id] = w
        await self.ws.send(msg.SerializeToString())

    async def click(self, key: str) -> None:
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        await self.rerun([WidgetState(id=self.widget_ids[key], trigger_value=True)])

    async def set_number(self, key: str, value: float) -> None:
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        await self.rerun([WidgetState(id=self.widget_ids[key], double_value=value)])

    def status(self) -> str | None:
        return next((t for t in reversed(self.texts) if STATUS_LINE.search(t)), None)

    async def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        if self._reader is not None:
            self._reader.cancel()
        await self.ws.close()

    async def _read(self) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        async for data in self.ws:
            msg = ForwardMsg()
            msg.ParseFromString(data)
            kind = msg.WhichOneof("type")
            if kind == "new_session":
                self.page_hash = msg.new_session.page_script_hash
                if not msg.metadata.run.fragment_ids:  # a full run: the browser drops every timer, and
                    self._stop_timers()  # the fragments that still want one ask again (auto_rerun)
                    if self._awaiting or self._run_id is not None:
                        # The latest full run started since the request answers it: a newer one
                        # interrupts the older (which then sends no script_finished at all).
                        self._awaiting, self._run_id = False, msg.metadata.run.script_run_id
            elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                element = msg.delta.new_element
                body = getattr(element, element.WhichOneof("type"))
                widget_id = getattr(body, "id", "")
                if widget_id and "-" in widget_id:
                    self.widget_ids[widget_id.rsplit("-", 1)[1]] = widget_id
                    state = widget_state(element)
                    # The browser keeps its own value unless the server sets one (set_value).
                    if state is not None and (widget_id not in self.widget_states or getattr(body, "set_value", False)):
                        self.widget_states[widget_id] = state
                self._seen_element(element)
            elif self._timer_message(msg, kind):
                pass
            elif kind == "script_finished":
                full = not msg.metadata.run.fragment_ids
                ours = self._run_id is not None and msg.metadata.run.script_run_id == self._run_id
                success = msg.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY
                if ours and success:
                    self.finished.set()
                    self._run_id = None
                elif ours:  # interrupted by a newer rerun (the page's own st.rerun): that one answers
                    self._awaiting, self._run_id = True, None
                elif full and success and self._awaiting:
                    # No run started since the request: Streamlit folded it into the run under way
                    # (a rerun request restarts a running script in place); that run's end answers.
                    self._awaiting = False
                    self.folded += 1
                    self.finished.set()

    def _seen_element(self, element) -> None:
        """What a tab keeps of a new element: the latest markdown texts, and a count of exceptions shown."""
        if element.WhichOneof("type") == "markdown":
            self.texts = [*self.texts[-20:], element.markdown.body]
        elif element.WhichOneof("type") == "exception":
            self.exceptions += 1

    def _timer_message(self, msg, kind: str) -> bool:
        """A fragment timer's start or stop (auto_rerun, stop_auto_rerun), handled as a browser does; False
        for any other message."""
        if kind == "auto_rerun":
            self._every(msg.auto_rerun.fragment_id, msg.auto_rerun.interval)
        elif kind == "stop_auto_rerun":
            for fragment_id in msg.stop_auto_rerun.fragment_ids:
                self._stop_timer(fragment_id)
        else:
            return False
        return True

    def _every(self, fragment_id: str, interval: float) -> None:
        """Re-run a fragment every `interval` seconds until told otherwise (as the browser does: a
        new interval replaces the timer)."""
        if self._intervals.get(fragment_id) == interval:
            return
        self._stop_timer(fragment_id)
        self._intervals[fragment_id] = interval

        async def tick() -> None:
            while True:
                await asyncio.sleep(interval)
                await self.rerun(fragment_id=fragment_id)

        self._timers[fragment_id] = asyncio.create_task(tick())

    def _stop_timer(self, fragment_id: str) -> None:
        self._intervals.pop(fragment_id, None)
        timer = self._timers.pop(fragment_id, None)
        if timer is not None:
            timer.cancel()

    def _stop_timers(self) -> None:
        for fragment_id in list(self._timers):
            self._stop_timer(fragment_id)


def widget_state(element) -> object | None:
    """The value a browser would report for a widget element just drawn: the value the server set,
    else the widget's default, in the form its type reports it. None for buttons (triggers) and for
    elements that hold no value."""
    from streamlit.proto.Slider_pb2 import Slider
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    kind = element.WhichOneof("type")
    w = getattr(element, kind)
    state = WidgetState(id=w.id)
    if kind == "number_input":
        state.double_value = w.value if w.set_value else w.default
    elif kind == "slider" and w.type == Slider.SELECT_SLIDER:
        state.string_array_value.data.extend(
            list(w.raw_value) if w.set_value else [w.options[int(i)] for i in w.default]
        )
    elif kind == "slider":
        state.double_array_value.data.extend(list(w.value) if w.set_value else list(w.default))
    elif kind in ("selectbox", "radio"):
        state.string_value = w.raw_value if w.set_value else w.options[w.default]
    elif kind == "multiselect":
        state.string_array_value.data.extend(list(w.raw_values) if w.set_value else [w.options[i] for i in w.default])
    elif kind == "checkbox":
        state.bool_value = w.value if w.set_value else w.default
    else:
        return None
    return state
