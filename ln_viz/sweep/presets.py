"""The sweeps the stability map page offers by name, sized from measurement.

Both start from the Live page's preset size (depth 6, d_model 64, batch 16 x 32 characters, 300
steps, seed 0: ln_viz.config), at which the issue's single runs were measured:
- the warm-up map: Post-LN and Pre-LN x lr {3e-4, 1e-3, 3e-3, 1e-2} x warm-up {0, 30, 100, 200};
  Xiong et al. 2020 (Fig. 2): Post-LN needs warm-up, the longer the higher the lr; Pre-LN does not;
- the depth slice: Post-LN and Pre-LN x depth {2, 4, 6, 8} x warm-up {0, 100} at lr 3e-3; Nguyen &
  Salazar 2019 (Table 5): Post-LN without warm-up fails from a depth of about 5-6.
- QK-norm: Pre-LN x lr {3e-3, 1e-2, 3e-2, 1e-1} x QK-norm {none, LayerNorm}, no warm-up, 400 steps;
  Wortsman et al. 2023 (Fig. 1): QK-layernorm lowers the LR sensitivity (attention-logit growth).
- GI-Adam: the warm-up map's Post-LN half with Adam and with GI-Adam (v0 = g0^2); Kalra & Barkeshli 2024:
  GI-Adam gives much of warm-up's benefit. Its Adam panel is the warm-up map's Post-LN cells.
What these grids measured with this code is in the README ("The stability map") and shipped as the
page's default (ln_viz/data/stability_map_default.json).
"""

from __future__ import annotations

from pathlib import Path

from ln_viz.config import PRESETS
from ln_viz.sweep.spec import SweepConfig

BASE = PRESETS["pre-ln-no-warmup"].config  # the Live page's size; norm, lr, warm-up, depth are the axes

SWEEP_PRESETS: dict[str, SweepConfig] = {
    "warmup-map": SweepConfig(
        base=BASE,
        norm_position=("post", "pre"),
        lr=(3e-4, 1e-3, 3e-3, 1e-2),
        warmup_steps=(0, 30, 100, 200),
        depth=(6,),
        seeds=1,
        steps=300,
    ),
    "depth-slice": SweepConfig(
        base=BASE,
        norm_position=("post", "pre"),
        lr=(3e-3,),
        warmup_steps=(0, 100),
        depth=(2, 4, 6, 8),
        seeds=1,
        steps=300,
    ),
    "qk-norm": SweepConfig(
        base=BASE,
        norm_position=("pre",),
        lr=(3e-3, 1e-2, 3e-2, 1e-1),
        warmup_steps=(0,),
        depth=(6,),
        seeds=1,
        steps=400,
        qk_norm=("none", "layernorm"),
    ),
    "gi-adam-map": SweepConfig(
        base=BASE,
        norm_position=("post",),
        lr=(3e-4, 1e-3, 3e-3, 1e-2),
        warmup_steps=(0, 30, 100, 200),
        depth=(6,),
        seeds=1,
        steps=300,
        adam_init=("zero", "gi"),
    ),
}
DEFAULT_SWEEP = "warmup-map"
# The warm-up map measured with this code and shipped, so the page draws at once on a cold server (32 runs
# take minutes); made by scripts/make_stability_map_default.py, checked by tests/test_sweep.py.
DEFAULT_MAP = Path(__file__).resolve().parents[1] / "data" / "stability_map_default.json"
# Every map shipped measured, by preset: the page draws the one whose spec it shows (ln_viz.ui.stability_view).
SHIPPED_MAPS = {DEFAULT_SWEEP: DEFAULT_MAP, "gi-adam-map": DEFAULT_MAP.with_name("stability_map_gi_adam.json")}
