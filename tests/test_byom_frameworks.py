"""ln-viz attached through the Hugging Face Trainer (gradient accumulation 2, max_grad_norm 1.0) and Lightning
(gradient clipping), 20 optimizer steps each, and the plain-loop example run as a user runs it: probe steps
counted in optimizer steps, every recorded per-matrix gradient norm equal to the one the optimizer applied,
and the hook dictionaries as they were after training."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from ln_viz.store import Store
from tests.test_byom import hook_sizes, stored_probe

ROOT = Path(__file__).resolve().parents[1]


class Applied:
    """A step post-hook registered after ln-viz's on the same optimizer: the gradient norms the update used."""

    def __init__(self, model: torch.nn.Module, names: list[str], prefix: str) -> None:
        self.model, self.names, self.prefix = model, names, prefix
        self.norms: list[np.ndarray] = []

    def __call__(self, optimizer, args, kwargs) -> None:
        blocks = self.model.get_submodule(self.prefix)
        self.norms.append(
            np.array([[float(b.get_parameter(n).grad.norm()) for n in self.names] for b in blocks], np.float64)
        )


@pytest.mark.slow
def test_hf_trainer_probes_optimizer_steps_with_the_gradients_applied(tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-hf.txt)")
    from transformers import TrainerCallback

    from examples.hf_trainer import trainer
    from ln_viz.integrations.hf import LnVizCallback

    path = tmp_path / "runs.sqlite"
    state: dict = {}

    class Watch(TrainerCallback):
        def on_train_begin(self, args, st, control, model=None, optimizer=None, **kw):
            probe = next(c for c in state["t"].callback_handler.callbacks if isinstance(c, LnVizCallback)).probe
            state["applied"] = Applied(model, [m.name for m in probe.card.matrices], probe.card.blocks)
            state["handle"] = optimizer.optimizer.register_step_post_hook(state["applied"])
            state["probe"] = probe

        def on_train_end(self, args, st, control, **kw):
            state["handle"].remove()

    t = trainer(str(path), steps=20, every=5, callbacks=[Watch()], out=str(tmp_path / "out"))
    state["t"] = t
    model = t.model
    model(input_ids=torch.zeros(1, 4, dtype=torch.long))  # HF's own lazy hooks are part of the baseline
    baseline = hook_sizes(model)
    t.train()
    probe = state["probe"]
    assert probe.step == 20 and hook_sizes(model) == baseline
    with Store(path) as store:
        assert store.probe_steps(probe.run_id) == [1, 5, 10, 15, 20]
        assert store.summary(probe.run_id).steps_done == 20
    applied = state["applied"].norms
    assert len(applied) == 20  # one per optimizer step, not per micro-batch
    for step in (1, 5, 10, 15, 20):
        np.testing.assert_allclose(stored_probe(path, probe.run_id, "grad_norm", step), applied[step - 1], rtol=1e-5)
    with Store(path) as store:  # the scalars the Trainer logged: the pre-clip total norm among them
        run = (
            store._read()
            .__enter__()
            .execute("SELECT step, loss, grad_norm FROM scalars WHERE run_id = ? ORDER BY step", (probe.run_id,))
            .fetchall()
        )
    assert [r[0] for r in run] == list(range(1, 21)) and all(r[1] is not None and r[2] is not None for r in run)


@pytest.mark.slow
def test_lightning_probes_optimizer_steps_with_the_clipped_gradients(tmp_path: Path) -> None:
    pytest.importorskip("lightning", reason="lightning is not installed (pip install -r requirements-hf.txt)")
    from lightning.pytorch.callbacks import Callback

    from examples.lightning_module import LitGPT, loader, trainer

    path = tmp_path / "runs.sqlite"
    state: dict = {}

    class Watch(Callback):
        def on_train_start(self, tr, pl_module):
            probe = tr.callbacks[0].probe
            state["applied"] = Applied(pl_module.model, [m.name for m in probe.card.matrices], probe.card.blocks)
            state["handle"] = tr.optimizers[0].register_step_post_hook(state["applied"])
            state["probe"] = probe

    torch.manual_seed(0)
    module = LitGPT()
    t = trainer(str(path), steps=20, every=5, callbacks=[Watch()], root=str(tmp_path))
    baseline = hook_sizes(module)
    t.fit(module, loader())
    state["handle"].remove()
    probe = state["probe"]
    assert probe.step == 20 and hook_sizes(module) == baseline
    with Store(path) as store:
        assert store.probe_steps(probe.run_id) == [1, 5, 10, 15, 20]
    applied = state["applied"].norms
    assert len(applied) == 20
    for step in (1, 5, 10, 15, 20):
        np.testing.assert_allclose(stored_probe(path, probe.run_id, "grad_norm", step), applied[step - 1], rtol=1e-5)
        # clipped to 0.05 in total: what the update used, not the stale or un-clipped gradients
        assert np.sqrt(np.square(applied[step - 1]).sum()) <= 0.05 + 1e-6
        assert np.isfinite(stored_probe(path, probe.run_id, "attn_entropy", step)).all()  # the forward inside step()


@pytest.mark.slow
def test_hf_trainer_s_steps_keep_their_own_loss_where_the_trainer_logs_a_mean_of_several(tmp_path: Path) -> None:
    """With logging_steps=4 the Trainer logs the mean loss of the last four steps: stored at the logging step, it
    replaced that step's own. Each step keeps its own loss: the Trainer gives the model num_items_in_batch, the
    label tokens of both batches of the step, so each batch's output loss is its share of the step's mean, and the
    step's loss is their sum (the mean of the two, as stored between logs before, was half of it)."""
    pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-hf.txt)")
    from examples.hf_trainer import trainer
    from tests.hf_ddp_run import training_losses

    path = tmp_path / "runs.sqlite"
    t = trainer(str(path), steps=8, every=4, out=str(tmp_path / "out"))
    t.args.logging_steps = 4
    batches, hook = training_losses(t.model)
    t.train()
    hook.remove()
    with Store(path) as store:
        data, _ = store.open_attached_run(store.list_runs()[0].id)
    want = [a + b for a, b in zip(batches[::2], batches[1::2])]
    assert len(want) == 8 and want[0] == pytest.approx(np.log(128), rel=0.05)  # a random model's: log of the vocabulary
    np.testing.assert_allclose(data.scalars["loss"], want, rtol=1e-5)


def _distributed(script: str, store: Path, out: Path, timeout: float = 300) -> None:
    """`tests/<script>` under torch.distributed.run, 2 processes; `--standalone`: torchrun takes a free port itself
    (none picked here and given back, for another process to take first). In a process group of its own: on a
    timeout the workers end with the launcher."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
         str(ROOT / "tests" / script), str(store), str(out)],
        cwd=ROOT, env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"{script} did not end in {timeout} s:\n{output[-3000:]}")
    assert proc.returncode == 0, output[-6000:]


@pytest.mark.slow  # transformers imported, five tiny models attached: ~10 s
def test_the_hf_callback_scales_the_shares_by_the_processes_that_counted_their_tokens(tmp_path: Path) -> None:
    """The step loss's factor over the sum of its batches' shares, as the Trainer scales a rank's loss: the
    processes under DDP with average_tokens_across_devices (over the tensor-parallel size: those ranks share a
    batch), 1 where the count is the process's own (the option off, or one process), and no run off the main
    process."""
    pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-hf.txt)")
    from types import SimpleNamespace

    from examples.hf_trainer import tiny_llama
    from ln_viz.integrations.hf import LnVizCallback

    def scale(world: int, average: bool, tp: int | None = None, main: bool = True) -> int | None:
        model = tiny_llama()
        if tp is not None:
            model._tp_size = tp
        callback = LnVizCallback(store=str(tmp_path / "runs.sqlite"), every=1)
        args = SimpleNamespace(world_size=world, average_tokens_across_devices=average, torch_compile=False)
        state = SimpleNamespace(is_world_process_zero=main, global_step=0, max_steps=3)
        callback.on_train_begin(args, state, None, model=model, optimizer=torch.optim.SGD(model.parameters(), 0.1))
        if callback.probe is None:
            return None
        callback.probe.close()
        return callback.probe.share_scale

    assert scale(4, True) == 4 and scale(4, True, tp=2) == 2
    assert scale(4, False) == 1 and scale(1, True) == 1
    assert scale(4, True, main=False) is None


@pytest.mark.slow
def test_hf_trainer_under_ddp_records_one_run_whose_step_loss_is_the_main_process_s_own(tmp_path: Path) -> None:
    """Two processes (gloo, CPU) under torch.distributed.run, gradient accumulation 2: the Trainer counts the label
    tokens of every process's batches (num_items_in_batch, average_tokens_across_devices), so each batch's output
    loss is its share of the mean over both ranks' tokens, and a rank's step loss was stored at half its value
    (and each rank recorded a run of its own). Now one run, the main process's, whose step loss is its own batches'
    (the sum of its shares times the number of processes: the Trainer's count of a rank's loss), near the logged
    mean over both ranks."""
    pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-hf.txt)")
    path, out = tmp_path / "runs.sqlite", tmp_path / "out"
    out.mkdir()
    _distributed("hf_ddp_run.py", path, out)
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["world"] == 2 and len(ranks[0]["returned"]) == 12  # two batches a step, six steps
    with Store(path) as store:
        runs = store.list_runs()
        assert len(runs) == 1  # the main process's alone
        data, _ = store.open_attached_run(runs[0].id)
    shares = ranks[0]["returned"]
    want = [2 * (a + b) for a, b in zip(shares[::2], shares[1::2])]
    np.testing.assert_allclose(data.scalars["loss"], want, rtol=1e-5)
    assert min(want) > 0.8 * np.log(128)  # a random model's loss is about log(128): not halved
    both = [sum(r["returned"][2 * i] + r["returned"][2 * i + 1] for r in ranks) for i in range(6)]  # the mean of all
    for step, logged in json.loads((out / "logs.json").read_text()):  # the Trainer's mean over 3 steps and the ranks
        assert np.mean(both[step - 3 : step]) == pytest.approx(logged, rel=1e-3)
        assert np.mean(want[step - 3 : step]) == pytest.approx(logged, rel=0.05)


@pytest.mark.slow
def test_lightning_under_ddp_records_one_run_with_the_main_process_s_losses(tmp_path: Path) -> None:
    """Lightning's DDP (2 processes, gloo, CPU): each rank recorded a run of its own; now one, the main process's,
    whose step losses are those its training_step returned."""
    pytest.importorskip("lightning", reason="lightning is not installed (pip install -r requirements-hf.txt)")
    path, out = tmp_path / "runs.sqlite", tmp_path / "out"
    out.mkdir()
    _distributed("lightning_ddp_run.py", path, out)
    returned = json.loads((out / "rank0.json").read_text())
    assert len(returned) == 4 and len(json.loads((out / "rank1.json").read_text())) == 4
    with Store(path) as store:
        runs = store.list_runs()
        assert len(runs) == 1  # the main process's alone
        data, _ = store.open_attached_run(runs[0].id)
    np.testing.assert_allclose(data.scalars["loss"], returned, rtol=1e-6)


@pytest.mark.slow
def test_lightning_s_step_loss_is_the_mean_of_its_accumulated_batches_losses(tmp_path: Path) -> None:
    """Under accumulate_grad_batches=2 the stored loss of a step was the next step's first batch's, halved (Lightning
    hands callbacks the loss divided by the accumulation count): now the mean of the step's own two batches'."""
    pytest.importorskip("lightning", reason="lightning is not installed (pip install -r requirements-hf.txt)")
    import lightning as L

    from examples.lightning_module import loader
    from ln_viz.integrations.lightning import LnVizCallback
    from tests.lightning_ddp_run import Recorded

    path = tmp_path / "runs.sqlite"
    torch.manual_seed(0)
    trainer = L.Trainer(
        max_steps=6, accumulate_grad_batches=2, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, default_root_dir=str(tmp_path),
        callbacks=[LnVizCallback(store=str(path), every=3, module="model")],
    )  # fmt: skip
    module = Recorded()
    trainer.fit(module, loader())
    returned = module.returned
    assert len(returned) == 12  # two batches a step
    with Store(path) as store:
        data, _ = store.open_attached_run(store.list_runs()[0].id)
    want = [(a + b) / 2 for a, b in zip(returned[::2], returned[1::2])]
    np.testing.assert_allclose(data.scalars["loss"], want, rtol=1e-6)
    assert min(want) > 3.5  # about log(64) at the start: not halved


@pytest.mark.slow
@pytest.mark.parametrize(
    "example, extra",
    [("plain_loop.py", []), pytest.param("plain_loop.py", ["--compile", "aot_eager"], marks=pytest.mark.slow)],
)
def test_the_examples_run_as_a_user_runs_them(example: str, extra: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    args = [sys.executable, str(ROOT / "examples" / example), "--store", str(tmp_path / "runs.sqlite"), "--steps", "12"]
    done = subprocess.run(args + extra, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "probe failed" not in done.stderr
    with Store(tmp_path / "runs.sqlite") as store:
        (run,) = store.list_runs()
        assert (run.source, run.steps_done, run.status) == ("attach", 12, "completed")
        assert store.probe_steps(run.id) == [1, 10, 12]
    # the sdpa tap saw every layer (in the shadow forward when compiled)
    assert np.isfinite(stored_probe(tmp_path / "runs.sqlite", run.id, "attn_logit_max", 12)).all()


@pytest.mark.slow
def test_the_overhead_benchmark_runs_in_its_quick_mode() -> None:
    pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-hf.txt)")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    args = [sys.executable, str(ROOT / "benchmarks" / "byom_overhead.py"), "--quick"]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert all(c in done.stdout for c in ("ln-viz/10", "ln-viz/1", "tensorboard/10", "tensorboard/1"))
    try:  # wandb's watch beside them where it is installed; else one line says how to add it
        import wandb  # noqa: F401

        assert "wandb/10" in done.stdout and "wandb/1 " in done.stdout
    except ImportError:
        assert "wandb is not installed (pip install wandb)" in done.stdout


def _probes_agree(path: Path, eager: int, compiled: int, steps: tuple[int, ...]) -> None:
    """The compiled run's stored probes are the eager run's (same weights, same batches), the activation and
    attention ones among them: the shadow forward saw what the compiled step computed."""
    with Store(path) as store, store._read() as db:
        names = [
            {r[0] for r in db.execute("SELECT DISTINCT name FROM probes WHERE run_id = ?", (i,))}
            for i in (eager, compiled)
        ]
    assert names[0] == names[1] >= {"resid_stats", "norm_in_hist", "attn_entropy", "logz_stats"}, names
    for name in sorted(names[0]):
        for step in steps:
            want, got = (stored_probe(path, i, name, step) for i in (eager, compiled))
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} at step {step}")
    assert np.isfinite(stored_probe(path, compiled, "attn_entropy", steps[-1])).all()


@pytest.mark.slow  # an eager and a compiled (aot_eager) Trainer, 3 steps: ~15 s
def test_hf_trainer_with_torch_compile_records_the_activations_by_a_shadow_forward(tmp_path: Path) -> None:
    pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-hf.txt)")
    import warnings

    from examples.hf_trainer import trainer
    from ln_viz.integrations.hf import LnVizCallback

    path = tmp_path / "runs.sqlite"
    runs = []
    for backend in (None, "aot_eager"):
        t = trainer(str(path), steps=3, every=1, out=str(tmp_path / "out"), compile_backend=backend)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no probe failed, nothing 'compiled after attach'
            t.train()
        runs.append(next(c.probe for c in t.callback_handler.callbacks if isinstance(c, LnVizCallback)))
    assert runs[1].compiled is not None and runs[1].compiled is not runs[1].model  # attached to the wrapper
    _probes_agree(path, runs[0].run_id, runs[1].run_id, (1, 2, 3))


@pytest.mark.slow  # an eager and a compiled (aot_eager) fit, 3 steps: ~20 s at load 9 (the shadow's random state
# and buffers: test_a_compiled_model_s_dropout_draws_the_same_with_and_without_the_shadow, the same path)
def test_lightning_fit_of_a_compiled_module_records_the_activations_by_a_shadow_forward(tmp_path: Path) -> None:
    pytest.importorskip("lightning", reason="lightning is not installed (pip install -r requirements-hf.txt)")
    import warnings

    from examples.lightning_module import LitGPT, loader, trainer

    path = tmp_path / "runs.sqlite"
    runs = []
    for compiled in (False, True):
        torch.manual_seed(0)
        module = LitGPT()
        t = trainer(str(path), steps=3, every=1, root=str(tmp_path))
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no probe failed, nothing 'compiled after attach'
            t.fit(torch.compile(module, backend="aot_eager") if compiled else module, loader())
        runs.append(t.callbacks[0].probe)
    assert runs[1].shadowed and not runs[0].shadowed
    _probes_agree(path, runs[0].run_id, runs[1].run_id, (1, 2, 3))
