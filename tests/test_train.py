import math

import numpy as np
import pytest

from ln_viz.config import NORM_POSITIONS, RunConfig
from ln_viz.corpus import markov
from ln_viz.schedule import lr_at, lr_schedule
from ln_viz.schema import PROBE_NAMES, PROBES
from ln_viz.snapshot import RunData
from ln_viz.train import STALL_MARGIN, STALL_MIN_STEPS, Trainer, run

TINY = RunConfig(
    depth=2,
    d_model=32,
    heads=2,
    batch_size=8,
    seq_len=32,
    steps=30,
    probe_every=5,
    eval_every=10,
)


def test_warmup_is_linear_from_zero_then_the_schedule():
    cfg = RunConfig(lr=1e-3, warmup_steps=10, steps=100)
    assert [lr_at(cfg, t) for t in (1, 5, 10, 50)] == pytest.approx([1e-4, 5e-4, 1e-3, 1e-3])
    inv = cfg.replace(schedule="inverse_sqrt")
    assert lr_at(inv, 40) == pytest.approx(1e-3 * math.sqrt(10 / 40))
    cos = lr_schedule(cfg.replace(schedule="cosine"))
    assert cos[9] == pytest.approx(1e-3) and cos[-1] == pytest.approx(0, abs=1e-12)
    assert (np.diff(cos[10:]) <= 1e-15).all()


def test_same_seed_same_config_identical_loss_curves():
    a = run(TINY.replace(norm_position="post"))
    b = run(TINY.replace(norm_position="post"))
    assert a.scalars["loss"] == b.scalars["loss"]
    assert np.array_equal(a.probe("grad_norm"), b.probe("grad_norm"))
    c = run(TINY.replace(norm_position="post", seed=1))
    assert a.scalars["loss"] != c.scalars["loss"]


@pytest.mark.parametrize("pos", NORM_POSITIONS)
def test_snapshots_every_step_probes_at_their_cadence_numpy_only(pos):
    trainer = Trainer(TINY.replace(norm_position=pos))
    snaps = list(trainer)
    assert [s.step for s in snaps] == list(range(1, 31))
    probed = [s.step for s in snaps if s.probes is not None]
    assert probed == [1, 5, 10, 15, 20, 25, 30]
    assert [s.step for s in snaps if s.eval_loss is not None] == [10, 20, 30]
    assert snaps[-1].status in ("completed", "stalled") and all(s.status == "running" for s in snaps[:-1])
    p = snaps[0].probes
    L = TINY.depth
    assert p["grad_norm"].shape == (L, 6) and p["resid_hist"].shape == (L, 128)
    assert p["norm_in_hist"].shape[:2] == (L, len(trainer.model.norm_names()))
    assert all(isinstance(v, np.ndarray) for v in p.values())  # nothing keeps tensors alive
    shapes = trainer.info.probe_shapes()  # the schema's, in the run's named dimensions
    assert set(p) == set(PROBE_NAMES)
    assert {n: (v.shape, v.dtype.name) for n, v in p.items()} == {n: (shapes[n], PROBES[n].dtype) for n in p}
    assert (p["update_ratio"] > 0).all() and (p["grad_norm"] > 0).all()
    assert all(s.steps_per_sec > 0 for s in snaps)


def test_probes_off_means_no_probe_records():
    assert run(TINY.replace(probe_every=0)).probe_steps == []


def test_a_caller_can_stop_between_any_two_steps():
    it = iter(Trainer(TINY))
    first = [next(it) for _ in range(3)]
    it.close()
    assert [s.step for s in first] == [1, 2, 3]


@pytest.mark.parametrize("pos", NORM_POSITIONS)
def test_divergence_ends_the_run_at_that_step_without_an_exception(pos):
    data = run(TINY.replace(norm_position=pos, optimizer="sgd", lr=10.0, steps=60))
    assert data.status == "diverged"
    assert data.diverged_at == data.steps_done < 60
    losses = data.scalars["loss"]
    assert all(math.isfinite(x) for x in losses[:-1])  # everything before is kept
    assert data.message == "msg.diverged"


def test_a_run_stuck_at_the_unigram_loss_is_flagged_stalled():
    # lr so small nothing is learnt: the loss stays where it starts, near the unigram entropy or above
    cfg = TINY.replace(
        lr=1e-7,
        steps=STALL_MIN_STEPS + 20,
        probe_every=0,
        eval_every=0,
        corpus="markov",
    )
    data = run(cfg)
    assert data.status == "stalled" and data.stalled_since == STALL_MIN_STEPS
    assert data.message == "msg.stalled"


def _scripted_run(monkeypatch, tail: list[float]) -> RunData:
    """A TINY run on the English text whose losses are `tail` at the end, the unigram loss before it."""
    trainer = Trainer(TINY.replace(steps=STALL_MIN_STEPS + 40, probe_every=0, eval_every=0))
    unigram = trainer.info.unigram_entropy
    losses = iter([unigram] * (trainer.cfg.steps - len(tail)) + [unigram * x for x in tail])
    monkeypatch.setattr(trainer, "_forward_backward", lambda x, y, probe: (next(losses), 1.0, None))
    data = RunData(trainer.info)
    for snap in trainer:
        data.append(snap)
    return data


@pytest.mark.parametrize(
    ("tail", "status"),
    [
        ([0.99] * 10 + [0.93] * 10, "completed"),  # the shown final loss 7 % below unigram (a 20-step mean 4 %)
        ([0.90] * 10 + [0.96] * 10, "stalled"),  # 4 % below (a 20-step mean 7 % below)
        ([1.17] * 20, "stalled"),  # above unigram
    ],
)
def test_the_stall_verdict_agrees_with_the_final_loss_shown_beside_it(monkeypatch, tail, status):
    # issue 21 N10: the verdict came from a 20-step mean, the final loss shown from 10 steps; the no-norm
    # demo was "stalled" at a final loss 5.6 % below the unigram loss
    data = _scripted_run(monkeypatch, tail)
    unigram, final = data.info.unigram_entropy, data.final_loss()
    assert data.status == status
    assert (final >= unigram * (1 - STALL_MARGIN)) == (status == "stalled")


def test_markov_run_reports_the_floor():
    data = run(TINY.replace(corpus="markov", steps=5))
    assert data.info.floor == pytest.approx(markov().floor(32))
    assert data.info.floor < data.info.unigram_entropy


@pytest.mark.parametrize("pos", NORM_POSITIONS)
@pytest.mark.parametrize("norm_type", ["layernorm", "rmsnorm", "dyt"])
@pytest.mark.parametrize("qk_norm", ["none", "layernorm", "rmsnorm"])
def test_the_servers_preview_header_matches_the_workers(pos, norm_type, qk_norm):
    from ln_viz.snapshot import RunInfo

    cfg = TINY.replace(norm_position=pos, norm_type=norm_type, qk_norm=qk_norm)
    real, preview = Trainer(cfg).info, RunInfo.preview(cfg)
    assert preview.to_dict() == real.to_dict()
