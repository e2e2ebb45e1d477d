"""Video and GIF export (ln_viz/video.py, `runs export --format mp4|gif`): the files decode with
imageio's ffmpeg and Pillow readers, hold a frame per probe step, move, have the asked size and speak the
asked language. The exports draw with kaleido (Chromium), so they are `e2e`; one tiny run, few frames."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import pytest
from PIL import Image

from ln_viz.cli import main
from ln_viz.i18n import LocalizedError
from ln_viz.snapshot import RunData
from ln_viz.store import Store
from ln_viz.train import run
from ln_viz.video import FPS, hold, parse_seconds, parse_size
from tests.runs import TINY

pytestmark = pytest.mark.filterwarnings("ignore:The kopts argument is ignored:UserWarning")


@pytest.fixture(scope="module", autouse=True)
def one_chromium():
    """One kaleido server (one Chromium) for the module's seven exports, as a long video's later batches
    share one (video._one_chromium); each one-shot start took 3-5 s here."""
    import kaleido

    kaleido.start_sync_server(silence_warnings=True)
    yield
    kaleido.stop_sync_server(silence_warnings=True)


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
    assert hold(3) * 3 == 15 * FPS and hold(1000) == 1  # about 15 s, and every probe step at least once
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
    """The default size, and `--seconds`: a 2-second clip (the default 15 s is `hold`'s, above; 450 frames of
    1080p to encode and decode took most of this test's 28 s on CI)."""
    data, args = stored
    code, out, err = cli("runs", "export", args[0], "--format", "mp4", "--seconds", "2", "--out", str(tmp_path),
                         *args[1:])  # fmt: skip
    assert (code, err) == (0, "") and out.split() == [str(tmp_path / "run.mp4")]
    with imageio.get_reader(tmp_path / "run.mp4", format="FFMPEG") as reader:
        assert reader.get_meta_data()["size"] == (1920, 1080) and reader.get_meta_data()["fps"] == FPS
        frames = [f for f in reader]
    n = len(data.probe_steps)
    assert len(frames) >= n and len(frames) == hold(n, 2) * n == 2 * FPS  # 2 s at 30 fps, each probe step held
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
    # The same run and step in the two languages: the loss chart's title (top left) is written differently.
    title = (slice(0, 30), slice(0, 200))
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
