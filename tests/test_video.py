"""Video and GIF export (ln_viz/video.py, `runs export --format mp4|gif`): the files decode with
imageio's ffmpeg and Pillow readers, hold a frame per probe step (thinned to what `--seconds` asks for, at
most MAX_FRAMES), move, have the asked size and speak the asked language; a long video leaves the export
lock to others between its batches; a bad place, a full disk or a full temporary folder is one sentence,
said before drawing where it can be, and leaves no partial file. The exports draw with kaleido (Chromium),
so they are `e2e`; tiny runs, few frames."""

from __future__ import annotations

import dataclasses
import io
import subprocess
import threading
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import pytest
from PIL import Image

from ln_viz import video
from ln_viz.cli import main
from ln_viz.i18n import LocalizedError
from ln_viz.snapshot import RunData
from ln_viz.store import Store
from ln_viz.train import run
from ln_viz.video import FPS, MAX_FRAMES, STEP_RATE, export_video, parse_seconds, parse_size, video_steps
from tests.runs import TINY

pytestmark = pytest.mark.filterwarnings("ignore:The kopts argument is ignored:UserWarning")


@pytest.fixture(scope="module")
def kaleido_server(tmp_path_factory: pytest.TempPathFactory):
    """One kaleido server (one Chromium) for the module's seven exports, as a long video's later batches
    share one (video._one_chromium); each one-shot start took 3-5 s here. Its page and Chromium's profile are in
    a folder of its own, as the app's shared Chromium has them (`kaleido_options`): kaleido opens in a thread of its
    own, and made them in the temporary folder of that moment, which the first test had sometimes set to its full
    disk by then (`tempfile.tempdir`); once that disk was unmounted, the next test's tiles were never drawn
    (test_tiles_removed_while_drawing_are_one_sentence failed 2 times in 4 after test_a_full_temporary_folder_...)."""
    import kaleido

    from ln_viz.video_frames import kaleido_options

    kaleido.start_sync_server(silence_warnings=True, **kaleido_options(tmp_path_factory.mktemp("kaleido")))
    yield
    kaleido.stop_sync_server(silence_warnings=True)


@pytest.fixture(autouse=True)
def one_chromium(request: pytest.FixtureRequest) -> None:
    """The kaleido server for the tests that draw (`e2e`), started at the first of them; the fast lane's
    tests here draw nothing and start no Chromium (its start and stop took ~6 s of the fast lane)."""
    if request.node.get_closest_marker("e2e") is not None:
        request.getfixturevalue("kaleido_server")


SMALL = TINY.replace(steps=40, probe_every=20, eval_every=20)  # probe steps 1, 20, 40: three frames


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunData, list[str]]:
    data = run(SMALL)
    path = tmp_path_factory.mktemp("video") / "runs.sqlite"
    with Store(path) as store:
        run_id = store.add_run(data, label="video")
    return data, [str(run_id), "--store", str(path)]


def test_size_is_read_and_a_bad_one_is_one_sentence() -> None:
    assert parse_size("1280x720") == (1280, 720) and parse_size(" 1920X1080 ") == (1920, 1080)
    for bad in ("1920", "100x100", "1921x1080", "9000x5000", "axb"):
        with pytest.raises(LocalizedError, match="--size must be WIDTHxHEIGHT"):
            parse_size(bad)
    assert parse_seconds("8") == 8.0 and parse_seconds(" 2.5 ") == 2.5
    for bad in ("0", "0.5", "601", "nan", "inf", "-3", "ten", ""):
        with pytest.raises(LocalizedError, match="--seconds must be a number of seconds from 1 to 600"):
            parse_seconds(bad)


def test_cli_refuses_a_bad_size_in_one_line(stored: tuple[RunData, list[str]], tmp_path: Path) -> None:
    _, args = stored
    code, _, err = cli("runs", "export", args[0], "--format", "mp4", "--size", "640", "--out", str(tmp_path), *args[1:])
    assert code == 2 and "--size must be WIDTHxHEIGHT" in err and err.count("\n") == 1
    assert not list(tmp_path.iterdir())  # nothing half-written


@pytest.mark.e2e
def test_mp4_is_1080p_by_default_and_moves(stored: tuple[RunData, list[str]], tmp_path: Path) -> None:
    """The default size, and `--seconds`: a 2-second clip (the default is 15 s; 450 frames of
    1080p to encode and decode took most of this test's 28 s on CI)."""
    data, args = stored
    code, out, err = cli("runs", "export", args[0], "--format", "mp4", "--seconds", "2", "--out", str(tmp_path),
                         *args[1:])  # fmt: skip
    assert (code, err) == (0, "") and out.split() == [str(tmp_path / "run.mp4")]
    with imageio.get_reader(tmp_path / "run.mp4", format="FFMPEG") as reader:
        assert reader.get_meta_data()["size"] == (1920, 1080) and reader.get_meta_data()["fps"] == FPS
        frames = [f for f in reader]
    assert len(frames) == 2 * FPS  # 2 s at 30 fps, each probe step held for its share
    assert frames[0].shape == (1080, 1920, 3)
    assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).mean() > 1  # it moves
    code, _, err = cli("runs", "export", args[0], "--format", "gif", "--seconds", "0", "--out", str(tmp_path / "x"),
                       *args[1:])  # fmt: skip
    assert code == 2 and "--seconds must be" in err and err.count("\n") == 1 and not (tmp_path / "x").exists()


@pytest.mark.e2e
def test_gif_has_a_frame_per_probe_step_its_size_and_its_language(
    stored: tuple[RunData, list[str]], tmp_path: Path
) -> None:
    data, args = stored
    gifs = {}
    for lang in ("en", "ko"):
        out = tmp_path / f"{lang}.gif"
        code, _, err = cli(
            "runs", "export", args[0], "--format", "gif", "--size", "640x360", "--lang", lang, "--out", str(out),
            *args[1:],
        )  # fmt: skip
        assert (code, err) == (0, "")
        gifs[lang] = [np.asarray(f)[..., :3].astype(int) for f in imageio.mimread(out)]
    en, ko = gifs["en"], gifs["ko"]
    assert len(en) == len(data.probe_steps) and en[0].shape == (360, 640, 3)
    assert np.abs(en[0] - en[-1]).mean() > 1  # it moves
    # The same run and step in the two languages: the header line and the loss chart's title (top left) are
    # written differently.
    title = (slice(0, 60), slice(0, 640))
    assert np.abs(en[0][title] - ko[0][title]).mean() > 5


@pytest.mark.e2e
def test_the_runs_page_makes_the_gif_under_a_progress_bar_then_offers_it(
    stored: tuple[RunData, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Runs page's "Make the GIF": the frames drawn on the click, then "Download the GIF" in the button's
    place, holding a GIF of a frame per probe step."""
    from PIL import Image
    from streamlit.testing.v1 import AppTest

    from ln_viz.i18n import t
    from tests.test_runs_page import APP, PAGE, select

    data, args = stored
    monkeypatch.setenv("LN_VIZ_STORE", args[-1])
    at = AppTest.from_file(APP, default_timeout=180)
    at.switch_page(PAGE).run()
    at = select(at, 0)
    labels = [b.proto.label for b in at.button]
    assert t("video.make_gif", "en") in labels and t("video.make_mp4", "en") in labels
    at.button(key="runs_video_make_gif").click().run()
    assert not at.exception, at.exception
    job = at.session_state["_video_job_runs_video"]  # drawn in a thread of its own: the page stays usable (M9)
    assert job.thread.is_alive() and [p.proto.text for p in at.get("progress")]  # a progress bar, no greyed page
    job.thread.join(180)
    at.run()
    assert t("video.download_gif", "en") in [b.proto.label for b in at.get("download_button")]
    gif = Image.open(io.BytesIO(at.session_state["_video_runs_video"][1]))
    assert gif.format == "GIF" and gif.n_frames == len(data.probe_steps)


@pytest.mark.e2e
def test_a_pair_is_one_gif_with_both_runs(stored: tuple[RunData, list[str]], tmp_path: Path) -> None:
    """`--vs`: Compare's pair as one animation, drawn as the lecture view's Compare (both losses on one axis,
    the two heatmaps, both profiles): here the run against itself; its frames are not the run's own."""
    data, args = stored
    code, out, err = cli(
        "runs", "export", args[0], "--vs", args[0], "--format", "gif", "--size", "640x360", "--out", str(tmp_path),
        *args[1:],
    )  # fmt: skip
    assert (code, err) == (0, "") and out.split() == [str(tmp_path / f"ln-viz-{args[0]}-vs-{args[0]}.gif")]
    frames = [np.asarray(f)[..., :3].astype(int) for f in imageio.mimread(out.strip())]
    assert len(frames) == len(data.probe_steps) and frames[0].shape == (360, 640, 3)
    assert np.abs(frames[0] - frames[-1]).mean() > 1  # it moves
    Image.fromarray(frames[-1].astype(np.uint8)).save(tmp_path / "pair_last.png")
    code, _, _ = cli(
        "runs", "export", args[0], "--format", "gif", "--size", "640x360", "--out", str(tmp_path / "one"), *args[1:]
    )
    one = [np.asarray(f)[..., :3].astype(int) for f in imageio.mimread(tmp_path / "one" / "run.gif")]
    assert code == 0 and np.abs(one[-1] - frames[-1]).mean() > 5  # another layout: the pair's


def test_frames_are_what_the_seconds_ask_for_thinned_evenly_and_capped(stored: tuple[RunData, list[str]]) -> None:
    """Hostile round 4 (H1, M5, L7): a 640-probe-step run made a 640-frame video (14 min of drawing, every
    frame in memory) whatever `--seconds` said. Now STEP_RATE probe steps a second, at most MAX_FRAMES, the
    first and the last step kept; the video lasts `--seconds`, its last frame (the takeaway) longest."""
    data, _ = stored
    long = dataclasses.replace(data, probe_steps=list(range(1, 641)))
    assert video_steps([data], 15) == data.probe_steps  # a short run: every step
    eight = video_steps([long], 2)
    assert len(eight) == 2 * STEP_RATE and eight[0] == 1 and eight[-1] == 640
    assert len(video_steps([long], 15)) == 15 * STEP_RATE
    capped = video_steps([long], 600)
    assert len(capped) == MAX_FRAMES and capped[0] == 1 and capped[-1] == 640 and capped == sorted(set(capped))
    for n, seconds in ((8, 2.0), (3, 15.0), (MAX_FRAMES, 600.0), (1, 1.0)):
        shown = video.durations(n, seconds)
        assert len(shown) == n and sum(shown) == pytest.approx(seconds) and shown[-1] >= shown[0]
        assert sum(video.hold_counts(n, seconds)) == round(seconds * FPS)


def _long_run() -> RunData:
    return run(TINY.replace(steps=60, probe_every=2, eval_every=30))  # 31 probe steps


@pytest.mark.e2e
def test_a_long_run_draws_only_the_frames_its_seconds_allow(tmp_path: Path) -> None:
    """31 probe steps at `--seconds 2`: 8 GIF frames (before: 31), lasting 2 s in all."""
    data = _long_run()
    path = export_video(data, tmp_path / "a.gif", "gif", size=(640, 360), seconds=2)
    gif = Image.open(path)
    shown = []
    for i in range(gif.n_frames):
        gif.seek(i)
        shown.append(gif.info["duration"])
    assert gif.n_frames == 2 * STEP_RATE and sum(shown) == pytest.approx(2000, abs=40)
    assert [p.name for p in tmp_path.iterdir()] == ["a.gif"]  # no part file left beside it


@pytest.mark.slow
@pytest.mark.e2e
def test_a_second_export_is_drawn_between_a_long_one_s_frames(stored: tuple[RunData, list[str]], tmp_path) -> None:
    """Hostile round 4, H1: a long video held the export lock for all its frames, and a second visitor's
    small video waited at 0 % until it ended (390 s against 72 s alone). Now the lock is taken per batch,
    in turn: the small one, started while the long one draws, ends first."""
    small, _ = stored
    long = _long_run()
    ended: dict[str, float] = {}
    drawing = threading.Event()
    errors: list[BaseException] = []

    def make(name: str, data: RunData, seconds: float, progress=None) -> None:
        try:
            export_video(data, tmp_path / f"{name}.gif", "gif", size=(640, 360), seconds=seconds, progress=progress)
            ended[name] = time.monotonic()
        except BaseException as e:  # noqa: BLE001 - said by the test below
            errors.append(e)

    t0 = time.monotonic()
    # 3.5 s: 14 frames in 4 batches (BATCH 4): after the first, three more for the small one to go between
    a = threading.Thread(target=make, args=("long", long, 3.5, lambda share: drawing.set()))
    a.start()
    assert drawing.wait(120), "the long video drew no batch in 120 s"
    started = time.monotonic()
    b = threading.Thread(target=make, args=("small", small, 5))
    b.start()
    a.join(300)
    b.join(300)
    assert not errors, errors
    print(f"long: {ended['long'] - t0:.1f} s; small: {ended['small'] - started:.1f} s after its start")
    assert ended["small"] < ended["long"]


def _one_line(err: str) -> bool:
    return err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err


def test_a_bad_out_is_said_before_any_frame_is_drawn(
    stored: tuple[RunData, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hostile round 4, M3 and L4: `--out /proc/x.gif` and `a file/x.mp4` were checked after every frame was
    drawn (14 min for 512), and ended in tracebacks. Now one sentence at once: no tile folder is made."""
    _, args = stored
    tiles = tmp_path / "tmp"
    tiles.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tiles))
    a_file = tmp_path / "a file"
    a_file.write_text("x")
    cases = {
        "/proc/x.gif": "cannot write /proc/x.gif",
        str(a_file / "x.mp4"): f"{a_file} is a file, not a folder",
        "/dev/null": "--out /dev/null is not a regular file",
    }
    for out, said in cases.items():
        code, _, err = cli("runs", "export", args[0], "--format", out[-3:] if out[-4] == "." else "mp4", "--out", out,
                           *args[1:])  # fmt: skip
        assert code == 2 and _one_line(err) and said in err, (out, err)
    assert not list(tiles.iterdir())  # nothing was drawn
    assert a_file.read_text() == "x"


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 200 KiB tmpfs (root only; skipped elsewhere), unmounted afterwards."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield disk
    finally:
        if subprocess.run(["umount", str(disk)], capture_output=True).returncode:  # a file still open in it
            subprocess.run(["umount", "-l", str(disk)], check=True)


@pytest.mark.e2e
@pytest.mark.parametrize("fmt", ["mp4", "gif"])
def test_a_full_disk_is_one_sentence_and_leaves_no_partial_file(
    stored: tuple[RunData, list[str]], small_disk: Path, fmt: str, capfd: pytest.CaptureFixture
) -> None:
    """Hostile round 4, M2: an MP4 to a full disk printed ffmpeg's 33 lines and `cannot write ... (None)`, a
    GIF a PluginV3.__del__ traceback; both left a truncated 200 KB file."""
    _, args = stored
    (small_disk / "filler").write_bytes(b"\0" * (200 * 1024 - 4096))  # a page left: not one video
    out = small_disk / f"a.{fmt}"
    code, _, err = cli("runs", "export", args[0], "--format", fmt, "--size", "1280x720", "--out", str(out), *args[1:])
    leaked = capfd.readouterr().err  # what ffmpeg or a __del__ wrote past redirect_stderr
    assert code == 2 and _one_line(err) and "(No space left on device)" in err, err
    assert "Traceback" not in leaked and "Error" not in leaked, leaked
    assert [p.name for p in small_disk.iterdir()] == ["filler"]  # no truncated video, no part file


@pytest.mark.e2e
def test_a_full_temporary_folder_is_said_as_such(
    stored: tuple[RunData, list[str]], small_disk: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Hostile round 4, M4: with TMPDIR full, a video export said it "needs Chromium" (installed)."""
    _, args = stored
    (small_disk / "filler").write_bytes(b"\0" * (200 * 1024 - 4096))
    monkeypatch.setattr("tempfile.tempdir", str(small_disk))
    code, _, err = cli("runs", "export", args[0], "--format", "gif", "--out", str(tmp_path / "a.gif"), *args[1:])
    assert code == 2 and _one_line(err) and "temporary folder" in err and "Chromium" not in err, err
    assert not (tmp_path / "a.gif").exists()


@pytest.mark.e2e
def test_tiles_removed_while_drawing_are_one_sentence(
    stored: tuple[RunData, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """UX round 4, H2: another process removed the export's temporary folder, and the page showed
    `FileNotFoundError ... 280_loss.png` with a stack naming the server's paths."""
    import shutil

    from ln_viz.i18n import t

    long = _long_run()
    tiles = tmp_path / "tmp"
    tiles.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tiles))

    def remove_tiles(share: float) -> None:
        for folder in tiles.glob("ln-viz-video-*"):
            shutil.rmtree(folder)

    with pytest.raises(LocalizedError) as caught:
        export_video(long, tmp_path / "a.gif", "gif", size=(640, 360), seconds=4, progress=remove_tiles)
    assert caught.value.message("en") == t("err.video_tiles_lost", "en")
    assert caught.value.message("ko") == t("err.video_tiles_lost", "ko")
    assert not list(tmp_path.glob("*.gif")) and not list(tmp_path.glob(".a-*"))


def _chromium_under(folder: Path) -> list[int]:
    """Processes whose command line names `folder` (a Chromium whose profile is in it)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and str(folder).encode() in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def _wait(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.slow  # one or two Chromium starts in a process of its own: 8-30 s
def test_a_sigkilled_video_export_leaves_nothing_once_the_next_one_has_swept(tmp_path: Path, monkeypatch) -> None:
    """Hostile round 4, L5 (its rest; `test_the_next_video_export_sweeps_what_a_killed_one_left` has the sweep's
    rules): an export SIGKILLed while Chromium drew left kaleido's two folders (the page Chromium loads, Chromium's
    profile) in the temporary folder under Python's `tmp…` names, which nothing could tell from another program's.
    They are made inside the export's own `ln-viz-video-<pid>-…` folders now: the next export sweeps them all."""
    import os
    import shutil
    import signal
    import sys
    import tempfile

    # a short path: Chromium puts its singleton socket in TMPDIR, and a socket's path has at most 107 bytes
    tmp = Path(tempfile.mkdtemp(prefix="lnv-"))
    code = (
        "from tests.runs import train_tiny; from ln_viz.video import export_video; "
        f"export_video(train_tiny(), {str(tmp_path / 'k.mp4')!r}, seconds=2)"
    )
    root = Path(__file__).resolve().parents[1]
    try:
        proc = subprocess.Popen([sys.executable, "-c", code], cwd=root, env=os.environ | {"TMPDIR": str(tmp)})
        try:  # killed once a batch is drawn and a Chromium draws (the next batch's, or the first's closing)
            tiles = lambda: any(tmp.glob("ln-viz-video-*/*.png")) and bool(_chromium_under(tmp))  # noqa: E731
            _wait(lambda: tiles() or proc.poll() is not None, 180)
            assert proc.poll() is None, "the export ended before it could be killed"
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        left = _wait(lambda: not _chromium_under(tmp), 30)  # Chromium leaves when its pipe closes
        for pid in _chromium_under(tmp):
            os.kill(pid, signal.SIGKILL)
        assert left, "Chromium outlived the killed export"
        assert list(tmp.iterdir()), "the killed export left nothing to sweep: the test saw no export"
        monkeypatch.setattr(tempfile, "tempdir", str(tmp))
        with pytest.raises(LocalizedError):  # a run with no probe step: refused after the sweep
            export_video(RunData(run(TINY.replace(steps=2, probe_every=0)).info), tmp_path / "k.mp4")
        assert sorted(p.name for p in tmp.iterdir()) == []
        assert not list(tmp_path.glob(".k-*")), "the part file"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
