import io
import json
import os
import shutil
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pandas as pd
import pytest

from ln_viz.cli import main
from ln_viz.config import RunConfig
from ln_viz.init_grads import init_grads

ROOT = Path(__file__).resolve().parents[1]
SMALL = [
    "--depth",
    "2",
    "--d-model",
    "32",
    "--heads",
    "2",
    "--batch-size",
    "8",
    "--seq-len",
    "32",
]


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_train_json_reports_status_loss_per_step_and_final_loss():
    code, out, err = cli(
        "train",
        "--norm-position",
        "post",
        *SMALL,
        "--lr",
        "3e-3",
        "--warmup",
        "0",
        "--steps",
        "25",
        "--seed",
        "0",
        "--probe-every",
        "0",
        "--json",
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["status"] in ("completed", "stalled") and report["steps_done"] == 25
    assert len(report["loss"]) == 25
    assert report["final_loss"] == pytest.approx(sum(report["loss"][-10:]) / 10)
    assert report["config"]["norm_position"] == "post" and report["config"]["probe_every"] == 0
    assert err == ""  # no progress bar in JSON mode


def test_train_shows_a_progress_bar_on_stderr_and_a_summary_on_stdout():
    code, out, err = cli("train", *SMALL, "--steps", "12", "--probe-every", "3")
    assert code == 0
    assert "12/12" in err and "steps/s" in err
    assert out.startswith("status ") and "final loss" in out


def test_train_json_of_a_diverged_run_is_valid_json():
    code, out, _ = cli(
        "train",
        *SMALL,
        "--optimizer",
        "sgd",
        "--lr",
        "10",
        "--norm-position",
        "none",
        "--steps",
        "50",
        "--json",
    )
    report = json.loads(out)  # NaN would not be JSON: non-finite values are null
    assert code == 0 and report["status"] == "diverged" and report["steps_done"] < 50
    assert report["loss"][-1] is None or report["loss"][-1] > 1e3


def test_init_grads_csv_matches_the_library():
    code, out, _ = cli("init-grads", "--norm-position", "post", *SMALL, "--seeds", "2", "--csv")
    assert code == 0
    df = pd.read_csv(io.StringIO(out))
    assert list(df.columns) == ["seed", "layer", "param", "grad_norm"]
    assert sorted(df.layer.unique()) == [1, 2] and sorted(df.seed.unique()) == [0, 1]
    assert set(df.param) == {"attn.q", "attn.k", "attn.v", "attn.o", "ffn.w1", "ffn.w2"}
    lib, _ = init_grads(
        RunConfig(norm_position="post", depth=2, d_model=32, heads=2, batch_size=8, seq_len=32),
        range(2),
    )
    assert df.grad_norm.to_numpy() == pytest.approx(lib.grad_norm.to_numpy(), rel=1e-5)


def test_init_grads_table_without_csv():
    code, out, _ = cli("init-grads", *SMALL, "--seeds", "1")
    assert code == 0 and "ffn.w2" in out and "mean over 1 seeds" in out


BAD_FLAGS = [
    (["train", "--depth", "0"], "depth must be between 1 and 48"),
    (["train", "--depth", "-2"], "depth must be between 1 and 48"),
    (["train", "--depth", "49"], "depth must be between 1 and 48"),
    (["train", "--depth", "six"], "invalid int value"),
    (["train", "--d-model", "65", "--heads", "4"], "divisible by heads"),
    (["train", "--lr", "0"], "lr must be greater than 0"),
    (["train", "--lr", "-1"], "lr must be greater than 0"),
    (["train", "--lr", "nan"], "finite"),
    (["train", "--lr", "inf"], "finite"),
    (["train", "--lr", "11"], "at most 10"),
    (["train", "--warmup", "500", "--steps", "100"], "longer than the run"),
    (["train", "--steps", "0"], "steps must be between"),
    (["train", "--batch-size", "4096", "--seq-len", "4096"], "of memory to train"),
    (["train", "--norm-position", "middle"], "norm_position must be one of"),
    (["train", "--schedule", "step"], "schedule must be one of"),
    (["train", "--optimizer", "lion"], "optimizer must be one of"),
    (["train", "--corpus", "wiki"], "corpus must be one of"),
    (["train", "--preset", "fastest"], "unknown preset"),
    (["train", "--probe-every", "-1"], "probe_every must be between"),
    (["train", "--threads", "0", "--steps", "1"], "--threads must be at least 1"),
    (["train", "--text-file", "/no/such/file.txt"], "does not exist"),
    (["train", "--unknown-flag"], "unrecognized arguments"),
    (["init-grads", "--seeds", "0"], "--seeds must be between 1 and 100"),
    (["init-grads", "--depth", "100"], "depth must be between 1 and 48"),
    (["explode"], "invalid choice"),
    ([], "required"),
]


@pytest.mark.parametrize("argv,text", BAD_FLAGS, ids=[" ".join(a) or "nothing" for a, _ in BAD_FLAGS])
def test_bad_flags_exit_2_with_one_error_line(argv, text):
    code, out, err = cli(*argv)
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert text in err
    assert out == ""


@pytest.mark.parametrize(
    "content,text",
    [
        (b"", "empty"),
        (b"\xff\xfe bad", "not UTF-8"),
        (b"ab\x00" * 500, "binary"),
        (b"too short", "needs at least"),
    ],
)
def test_bad_text_files_exit_2(tmp_path, content, text):
    f = tmp_path / "t.txt"
    f.write_bytes(content)
    code, _, err = cli("train", "--text-file", str(f), "--steps", "1")
    assert code == 2 and text in err and err.count("\n") == 1


def test_a_text_file_trains():
    code, out, err = cli("train", *SMALL, "--text-file", __file__, "--steps", "3", "--json")
    assert code == 0, err
    assert json.loads(out)["config"]["corpus"] == "user"


@pytest.mark.slow  # a Python process of its own importing torch
def test_the_real_entry_point_prints_no_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "ln_viz", "train", "--lr", "nan"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr == "error: lr must be a finite number, got nan.\n"


def test_an_unusable_text_file_is_one_error_line_naming_what_it_is(tmp_path):
    cases = {str(tmp_path): "is a directory", "/dev/zero": "is not a regular file", "/proc/self/mem": "cannot read"}
    for path, text in cases.items():
        code, out, err = cli("train", "--text-file", path, "--steps", "1")
        assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and text in err, err


def test_runs_import_of_a_path_that_is_no_run_file_says_what_it_is(tmp_path):
    """Issue 21 M7: a folder, a FIFO or a device was "does not exist"; /proc/self/mem (a regular file
    whose read fails, for root too) was a traceback (T1). Each is one line now, as `--text-file` says it,
    and nothing is opened that could block (the FIFO has no writer)."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    cases = {
        str(tmp_path): "is a directory, not a run file",
        str(fifo): "is not a regular file (a FIFO, a device or a socket)",
        "/dev/zero": "is not a regular file",
        "/dev/null": "is not a regular file",
        "/proc/self/mem": "cannot read /proc/self/mem (Input/output error)",
    }
    store = tmp_path / "runs.sqlite"
    for path, text in cases.items():
        code, out, err = cli("runs", "import", path, "--store", str(store))
        assert code == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1 and text in err, err
    assert not store.exists()


@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None, reason="root reads any file without setpriv")
def test_runs_import_of_a_file_it_may_not_read_is_one_sentence(tmp_path):
    """Issue 21 T1: a file of mode 0000 was a PermissionError traceback. Root reads any file whatever its
    mode, so as root the command runs without the two capabilities that let it (setpriv), as anyone else."""
    f = tmp_path / "noperm.json.gz"
    f.write_bytes(b"{}")
    f.chmod(0)
    caps = "-dac_override,-dac_read_search"
    drop = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}"] if os.geteuid() == 0 else []
    store = tmp_path / "runs.sqlite"
    argv = [*drop, sys.executable, "-m", "ln_viz", "runs", "import", str(f), "--store", str(store)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert (
        proc.stderr == f"error: cannot read {f} (Permission denied); check that it exists and that you may read it.\n"
    )
    assert not store.exists()


def test_arguments_that_are_not_utf8_are_one_error_line(tmp_path):
    """Issue 21 T3: non-UTF-8 bytes in a label or a filter (Python keeps them as lone surrogates) were
    UnicodeEncodeError tracebacks from SQLite. The label is refused in one sentence, before any training;
    a filter is one of its choices; a path's bytes are echoed as escapes."""
    from ln_viz.store import Store
    from ln_viz.store.transfer import DEMO_DIR

    store = tmp_path / "runs.sqlite"
    demo = next(DEMO_DIR.glob("*.json.gz"))
    odd = tmp_path / os.fsdecode(b"run\xff.json.gz")
    odd.write_bytes(demo.read_bytes())
    code, out, err = cli("runs", "import", str(odd), "--store", str(store))
    assert code == 0 and out == f"imported run 1 from {tmp_path}/run\\udcff.json.gz\n", err
    proc = subprocess.run(  # the bytes as a shell passes them
        [sys.executable, "-m", "ln_viz", "runs", "label", "--store", str(store), "1", b"bad\xff\xfebytes"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        "error: a label must be Unicode text, but character 4 is a lone surrogate (a byte that is not UTF-8, "
        "or half of a UTF-16 pair); give the label as UTF-8 text.\n"
    )
    with Store(store) as opened:
        assert opened.summary(1).label == demo.name.removesuffix(".json.gz")  # unchanged
    code, out, err = cli("runs", "list", "--store", str(store), "--status", os.fsdecode(b"x\xff"))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("error: argument --status: invalid choice: 'x\\udcff' (choose from 'queued'"), err
    label = os.fsdecode(b"x\xffy")
    code, out, err = cli("train", *SMALL, "--steps", "2", "--store", str(store), "--label", label)
    assert code == 2 and out == "" and err.startswith("error: a label must be Unicode text, but character 2"), err
    with Store(store) as opened:
        assert [r.id for r in opened.list_runs()] == [1]  # nothing trained or stored


def test_a_sweep_on_user_text_is_refused_in_one_sentence():
    """Issue 21 M10: `sweep --corpus user` said "corpus 'user' needs user_text (a string or a file)", and no
    sweep flag gives one."""
    code, out, err = cli("sweep", "--corpus", "user", "--steps", "10", "--quiet")
    assert (code, out) == (2, "")
    assert err == (
        "error: the sweep cannot train on user text (it has no --text-file); choose --corpus english or markov.\n"
    )


def test_a_text_file_with_another_corpus_is_refused():
    code, out, err = cli("train", *SMALL, "--corpus", "markov", "--text-file", __file__, "--steps", "1")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--text-file trains on that file, which contradicts --corpus markov" in err
    code, out, err = cli("train", *SMALL, "--corpus", "user", "--text-file", __file__, "--steps", "2", "--json")
    assert code == 0, err


@pytest.mark.parametrize("run_id", [str(2**63), str(10**30), "0", "-5"])
@pytest.mark.parametrize("command", [["export", "--format", "csv", "--out", "x"], ["label", "x"], ["delete"]])
def test_run_ids_no_run_can_have_are_refused_with_one_sentence(tmp_path, run_id, command):
    store = tmp_path / "runs.sqlite"
    code, out, err = cli("runs", command[0], run_id, *command[1:], "--store", str(store))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "is out of range; a run id is a whole number from 1 to 9,223,372,036,854,775,807." in err
    assert not store.exists()  # refused before any store was opened


def test_runs_list_shows_a_label_s_control_characters_as_escapes(tmp_path):
    from ln_viz.runfile import read_run_file
    from ln_viz.store import Store
    from ln_viz.store.transfer import DEMO_DIR, add_loaded_run

    path = tmp_path / "runs.sqlite"
    label = "ok\n   9  2020-01-01 00:00  completed  pre  fake\x1b[2J\x1b]0;title\x07\r\t\u202e"
    with Store(path) as store:
        run_id, _ = add_loaded_run(store, read_run_file(next(DEMO_DIR.glob("*.json.gz"))))
        store.label(run_id, label)
    code, out, err = cli("runs", "list", "--store", str(path))
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 2 and "\x1b" not in out and "\r" not in out and "\x07" not in out and "\u202e" not in out
    assert lines[1].endswith(r"ok\n   9  2020-01-01 00:00  completed  pre  fake\x1b[2J\x1b]0;title\x07\r\t\u202e")
    code, out, _ = cli("runs", "list", "--json", "--store", str(path))
    assert json.loads(out)[0]["label"] == label  # JSON keeps the label exact, escaped by JSON itself


def test_a_huge_bad_flag_value_is_echoed_short():
    code, out, err = cli("train", "--depth", "x" * 100_000)
    assert code == 2 and err.count("\n") == 1 and len(err) < 1100 and "characters)" in err


def _commands(parser, prefix=()):
    """Every command line that ends in a parser: (), ("train",), ("runs", "export"), ..."""
    import argparse

    yield prefix
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*prefix, name))


def test_every_help_prints_its_usage_and_exits_0():
    """`python -m ln_viz --help` once died with a TypeError: the compare command's help said "95 % interval",
    which argparse reads as a format (found by the hostile re-check of issue 21)."""
    from ln_viz.cli import build_parser

    commands = list(_commands(build_parser()))
    assert ("runs", "export") in commands and ("compare",) in commands
    for cmd in commands:
        out = io.StringIO()
        with redirect_stdout(out), pytest.raises(SystemExit) as exit_:
            main([*cmd, "--help"])
        assert exit_.value.code == 0, cmd
        assert out.getvalue().startswith("usage: "), (cmd, out.getvalue()[:200])
