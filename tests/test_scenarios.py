"""What each Compare scenario's text says (ln_viz/locales/*.toml: compare.*, preset.*, lecture.takeaway.*), measured:
the slow tests train the scenario's two presets, or shorter runs of them where the effect already holds (each test
says which), and assert the stated outcome with a margin (depth and warm-up: tests/test_scenarios_deep.py, the other
core's half under `--dist loadfile`). The figures the texts cite come from `scripts/measure_scenarios.py` (one thread,
seed 0); the margins here leave room for another thread count.
The fast tests check that each scenario's two presets differ in exactly what its text is about, and that every
preset and scenario has all its texts in both languages."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ln_viz.config import COMPARE_PRESETS, PRESETS, RunConfig
from ln_viz.i18n import EN, KO, t
from ln_viz.snapshot import RunData

# The fields in which each scenario's B differs from its A, and a word its text uses for them in both languages.
SCENARIO_FIELDS: dict[str, dict[str, str]] = {
    "post-vs-pre": {"norm_position": "Pre-LN"},
    "warmup-vs-none": {"warmup_steps": "100"},
    "deep-post-vs-pre": {"norm_position": "Pre-LN"},
    "deepnorm-rescue": {"norm_position": "DeepNorm"},
    "qk-norm-logits": {"qk_norm": "QK-norm"},
    "qk-norm-rescue": {"qk_norm": "QK-norm"},
    "z-loss-logz": {"z_loss": "z-loss"},
    "dyt-vs-ln": {"norm_type": "DyT"},
    "mix-ln": {"norm_position": "Mix-LN"},
    "lns-deep": {"ln_scaling": "LayerNorm Scaling"},
    "warmup-angular": {"warmup_steps": "100"},  # probes33's; measured in tests/test_update_probes.py
    "muon-vs-adam": {"optimizer": "Muon"},  # issue 33 (helper muon): measured in tests/test_muon.py
    "muon-qk-clip": {"qk_clip": "QK-Clip"},
    "gi-adam": {"adam_init": "GI-Adam"},
    "reordered-deep": {"norm_position": "OLMo 2"},
    "reordered-high-lr": {"norm_position": "OLMo 2"},
}


def test_every_scenario_changes_exactly_what_its_text_is_about():
    assert set(SCENARIO_FIELDS) == set(COMPARE_PRESETS)
    for name, (a, b, key) in COMPARE_PRESETS.items():
        cfg_a, cfg_b = PRESETS[a].config, PRESETS[b].config
        changed = {f for f in RunConfig.__dataclass_fields__ if getattr(cfg_a, f) != getattr(cfg_b, f)}
        assert changed == set(SCENARIO_FIELDS[name]), (name, changed)
        for word in SCENARIO_FIELDS[name].values():
            assert word in EN[key] and word in KO[key], (name, word)


def test_every_preset_and_scenario_has_its_texts_in_both_languages():
    keys = [
        k for p in PRESETS.values() for k in (p.expect_key, f"lecture.preset.{p.name}", f"lecture.takeaway.{p.name}")
    ]
    keys += [k for name, (*_, key) in COMPARE_PRESETS.items() for k in (key, f"lecture.scenario.{name}")]
    keys += [f"lecture.takeaway.{name}" for name in COMPARE_PRESETS]
    missing = [(k, lang) for k in keys for lang, catalog in (("en", EN), ("ko", KO)) if not catalog.get(k)]
    assert missing == [], missing
    assert set(PRESETS).isdisjoint(COMPARE_PRESETS)  # lecture.takeaway.<name> holds both: one name, one sentence


def test_compares_caption_and_header_name_gi_adam_and_the_reordered_norm_in_words():
    """Compare's caption under the GI-Adam scenario read "Adam's second moment at the start zero / gi", and
    `compare`'s table "Post-LN (adam_init=zero)": the code's names. They and the lecture view's header say Adam
    and GI-Adam (and the reordered norm by its name) in both languages."""
    from ln_viz.sweep.compare import side_names
    from ln_viz.views.run_frames import differences
    from ln_viz.words import describe

    for lang in ("en", "ko"):
        reordered = (t("chart.norm.pre", lang), t("chart.norm.reordered", lang))
        for name, words in (("gi-adam", ("(Adam)", "(GI-Adam)")), ("reordered-high-lr", reordered)):
            a, b, _ = COMPARE_PRESETS[name]
            caption = differences(PRESETS[a].config, PRESETS[b].config, lang)
            assert all(w in caption for w in words) and " zero " not in caption and " gi" not in caption, caption
        gi = PRESETS["post-ln-gi-adam"].config
        assert side_names(gi.replace(adam_init="zero"), gi, lang) == ("Post-LN (Adam)", "Post-LN (GI-Adam)")
        header = describe([PRESETS["post-ln-no-warmup"].config, PRESETS["post-ln-gi-adam"].config], lang)
        lr = t("lecture.lr", lang, lr="3e-3")
        assert f"Adam {lr}{t('lecture.vs', lang)}GI-Adam {lr}" in header, header


# --- the measured outcomes (slow) ----------------------------------------------------------------------------
def held_out(data: RunData) -> float:
    """The last held-out loss of a run."""
    return [e for e in data.scalars["eval_loss"] if math.isfinite(e)][-1]


def attn_logit(data: RunData) -> float:
    """The largest attention logit of any layer at the last probe step."""
    return float(np.nanmax(data.probe("attn_logit_max")[-1]))


def log_z(data: RunData) -> float:
    """The batch's mean log Z at the last probe step."""
    return float(data.probe("logz_stats")[-1, 0])


@pytest.mark.slow
def test_qk_norm_bounds_the_attention_logits_at_lr_3e_2(trained):
    """The presets themselves (300 steps): the loss ends lower only after ~300 steps (at 150 both are at 2.63).
    Measured: largest logit 2,238 vs 9.3 (at most 15 over the run), final loss 2.53 vs 2.33."""
    plain, qk = trained("high-lr"), trained("high-lr-qk-norm")
    assert plain.status == qk.status == "completed"
    assert attn_logit(plain) >= 20 * attn_logit(qk), (attn_logit(plain), attn_logit(qk))
    assert attn_logit(plain) > 1000 and np.nanmax(qk.probe("attn_logit_max")) < 25
    assert qk.final_loss() < plain.final_loss() - 0.1, (qk.final_loss(), plain.final_loss())


@pytest.mark.slow
def test_qk_norm_rescues_lr_1e_1(trained):
    """200 of the presets' 300 steps (at 150 the QK-norm run is only 0.2 below the unigram loss): the run without
    QK-norm has stalled since step 60. Measured at 300 steps: 2.81 stalled, largest logit 85,303; with QK-norm
    2.40, logit 28."""
    plain, qk = trained("very-high-lr", steps=200), trained("very-high-lr-qk-norm", steps=200)
    unigram = plain.info.unigram_entropy
    assert plain.status == "stalled" and plain.final_loss() > unigram - 0.2, plain.final_loss()
    assert qk.status == "completed" and qk.final_loss() < unigram - 0.3, (qk.final_loss(), unigram)
    assert attn_logit(plain) > 10_000 and attn_logit(qk) < 100, (attn_logit(plain), attn_logit(qk))
    # "the attention saturates": one-hot in the first layer, and far less spread than with QK-norm (measured at
    # step 200: mean entropy 0.54 vs 1.87 nats; at the preset's step 300 below 0.4 nats in every layer)
    saturated, spread = plain.probe("attn_entropy")[-1], qk.probe("attn_entropy")[-1]  # nats, per layer
    assert saturated[0] < 0.01 and saturated.mean() < spread.mean() / 2, (saturated, spread)


@pytest.mark.slow
def test_z_loss_pulls_log_z_to_0_and_leaves_the_loss(trained):
    """The presets themselves (300 steps; the Pre-LN run is DyT's baseline too). Measured: log Z 0.48 vs 6.18 at
    step 300, final loss 1.968 vs 1.964."""
    plain, z = trained("pre-ln-no-warmup"), trained("z-loss")
    assert abs(log_z(z)) < 1.0 and log_z(plain) > 5.0, (log_z(z), log_z(plain))
    assert abs(z.final_loss() - plain.final_loss()) < 0.05, (z.final_loss(), plain.final_loss())


@pytest.mark.slow
def test_dyt_learns_without_normalising_a_little_behind_layernorm(trained):
    """The presets themselves (300 steps; at 150 the two are level, held-out 2.24 vs 2.25). Measured: held-out
    2.083 vs 2.028, 22 % of the tanh inputs saturated at step 300."""
    ln, dyt = trained("pre-ln-no-warmup"), trained("dyt")
    assert dyt.status == "completed" and dyt.final_loss() < dyt.info.unigram_entropy - 0.7, dyt.final_loss()
    assert held_out(ln) < held_out(dyt) < held_out(ln) + 0.15, (held_out(ln), held_out(dyt))
    saturated = float(np.nanmean(dyt.probe("dyt_saturation")[-1]))
    assert 0.1 < saturated < 0.35, saturated
    assert np.isnan(ln.probe("dyt_saturation")).all()  # LayerNorm has no tanh


# --- issue 33: each over 3 seeds ------------------------------------------------------------------------------
SEEDS = (0, 1, 2)


def over_seeds(trained, name: str, **changes) -> list[RunData]:
    """The preset trained at seeds 0, 1 and 2 (seed 0 without a `seed` change: the run the tests above share)."""
    return [trained(name, **changes, **({"seed": s} if s else {})) for s in SEEDS]


def final_losses(runs: list[RunData]) -> list[float]:
    return [r.final_loss() for r in runs]


@pytest.mark.slow
def test_the_reordered_norm_ends_lower_than_pre_ln_at_lr_3e_2(trained):
    """The presets themselves (300 steps), 3 seeds (seed 0's Pre-LN run is the QK-norm test's). Measured with
    `compare --preset reordered-high-lr`: Pre-LN 2.463, 2.509, 2.486, reordered 2.334, 2.323, 2.317, 95 % CI of the
    gap 0.09-0.23; seed 0's largest attention logit at step 300: 12,455 reordered, Pre-LN 2,114 (one thread)."""
    pre, reordered = over_seeds(trained, "high-lr"), over_seeds(trained, "high-lr-reordered")
    assert all(r.status == "completed" for r in pre + reordered)
    gaps = [p - r for p, r in zip(final_losses(pre), final_losses(reordered))]
    assert min(gaps) > 0 and sum(gaps) / 3 > 0.08, gaps
    assert attn_logit(reordered[0]) > 3 * attn_logit(pre[0]), (attn_logit(reordered[0]), attn_logit(pre[0]))
