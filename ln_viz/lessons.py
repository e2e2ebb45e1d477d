"""Which preset or Compare scenario a run (or a pair) is, and which chart tells its lesson: shared by the
lecture view, the watch page, the lecture pack and the video (no streamlit here), so that a pack or a video
of a scenario shows what the lecture view shows.

    lesson_chart(scenario_of([a.config, b.config]), [a.config, b.config])  # "attn_logit", "log_z" or None
"""

from __future__ import annotations

from collections.abc import Sequence

from ln_viz.config import COMPARE_PRESETS, PRESETS, RunConfig

# A scenario or preset whose lesson is an instability probe shows that chart in the gradient heatmaps'
# place (the figure names of ln_viz.ui.live). A config with z-loss shows log Z without an entry.
LESSON_CHARTS = {
    "qk-norm-logits": "attn_logit",
    "qk-norm-rescue": "attn_logit",
    "high-lr": "attn_logit",
    "high-lr-qk-norm": "attn_logit",
    "very-high-lr": "attn_logit",
    "very-high-lr-qk-norm": "attn_logit",
    "warmup-angular": "angular_update",  # issue 33 (probes33): warm-up limits the angular update
    "high-lr-warmup": "angular_update",
    # issue 33 (helper muon): Muon and QK-Clip are about the attention logits too
    "muon-vs-adam": "attn_logit",
    "muon-qk-clip": "attn_logit",
    "muon-high-lr": "attn_logit",
    "muon-high-lr-qk-clip": "attn_logit",
    # issue 33: OLMo 2's reordered norm at lr 3e-2 beside Pre-LN, whose logits grow to thousands there
    "reordered-high-lr": "attn_logit",
    "high-lr-reordered": "attn_logit",
}


def lesson_chart(name: str | None, cfgs: Sequence[RunConfig]) -> str | None:
    """The instability chart that tells scenario or preset `name`'s lesson (its LESSON_CHARTS entry;
    "log_z" where a run has z-loss), or None: the gradient heatmaps."""
    if name in LESSON_CHARTS:
        return LESSON_CHARTS[name]
    return "log_z" if any(c.z_loss > 0 for c in cfgs) else None


def scenario_of(cfgs: Sequence[RunConfig]) -> str | None:
    """The preset (one run) or Compare scenario (two) whose configurations these are, seeds and the probes'
    cadence aside (what is measured, not what is trained: the README's GIF probes every 15 steps): the name
    of its takeaway (`lecture.takeaway.<name>`), or None for the user's own settings."""
    names = {name: p.config for name, p in PRESETS.items()}
    if len(cfgs) == 2:
        names = {name: (PRESETS[a].config, PRESETS[b].config) for name, (a, b, _) in COMPARE_PRESETS.items()}
    for name, want in names.items():
        wants = want if isinstance(want, tuple) else (want,)
        if len(wants) == len(cfgs) and all(
            c.replace(seed=w.seed, probe_every=w.probe_every) == w for c, w in zip(cfgs, wants)
        ):
            return name
    return None
