"""Plotly figure builders: RunData (or Init lab DataFrames) in, `plotly.graph_objects.Figure` out.

Pure functions, no streamlit, no tensors. Every visible string comes from the i18n catalog (`chart.*`).
Built for a live page that redraws about once a second and for a projector:
- axis ranges are fixed from the config and from theory (or rounded out to whole decades) so nothing
  jumps while data streams in; `uirevision` keeps the user's zoom across redraws;
- long series are downsampled (`downsample`), arrays go out as float32 numpy (Plotly sends them as
  binary), traces stay few;
- fonts start at 16 px (`lecture=True`: 1.4x, margins unscaled), colours are Okabe-Ito (colour-blind safe) and each
  norm position keeps its colour on every chart (`NORM_COLORS`).

The package: `style` (colours, fonts, the shared layout, the lecture view's scaling), `axes` (ranges, ticks,
colorbars), `sample` (downsampling, which probe step), and one module per family of views: `loss`,
`grads` (gradient heatmap, update ratio), `dist` (activation distributions), `profile` (per-layer
profile), `entropy` (attention entropy per layer), `instability` (attention logits, log Z, massive
activations, DyT saturation), `updates` (angular update, Adam's preconditioner lag, the norms' smallest
per-token input scale), `init_lab` (the Init lab), `seeds` (several seeds of a setting: the mean
loss with its band, the median seed). Every public builder takes
`height` (px; None = Plotly's default): the page decides how tall each chart is. In each module, a
`_prepare_*` step computes what is drawn, apart from the drawing; `loss_chart`, `layer_profile`,
`attn_logit_chart` and `log_z_chart` take one run (its full view) or a sequence of runs (compared).
"""

from ln_viz.charts.dist import ACT_CODES, ACT_LOG_MIN, act_dist
from ln_viz.charts.entropy import attention_entropy_chart, uniform_entropy
from ln_viz.charts.grads import MAX_RATIO_LAYERS, UPDATE_RATIO_REF, grad_heatmap, shared_zrange, update_ratio_chart
from ln_viz.charts.init_lab import init_grad_profile, last_layer_vs_depth_chart, resid_growth_chart
from ln_viz.charts.instability import (
    attn_logit_chart,
    dyt_saturation_chart,
    has_instability_probes,
    is_dyt,
    log_z_chart,
    massive_act_chart,
)
from ln_viz.charts.loss import loss_chart
from ln_viz.charts.profile import PROFILE_HEIGHTS, PROFILE_SPACING, layer_profile
from ln_viz.charts.sample import (
    MAX_HEATMAP_COLUMNS,
    MAX_LOSS_POINTS,
    MAX_LR_POINTS,
    downsample,
    downsample_index,
)
from ln_viz.charts.seeds import SD_FROM, band_kind, median_seed, seed_band, seed_loss_chart
from ln_viz.charts.style import (
    BASE_FONT,
    FAINT,
    FONT_FAMILY,
    GREY,
    LECTURE_SCALE,
    NORM_COLORS,
    NORM_DASHES,
    PARAM_COLORS,
    norm_label,
    step_line,
)
from ln_viz.charts.updates import (
    LAG_BOUND,
    angular_update_chart,
    has_update_probes,
    is_adam,
    norm_min_rms_chart,
    precond_lag_chart,
)

__all__ = [
    "ACT_CODES",
    "ACT_LOG_MIN",
    "BASE_FONT",
    "FAINT",
    "FONT_FAMILY",
    "GREY",
    "MAX_HEATMAP_COLUMNS",
    "MAX_LOSS_POINTS",
    "MAX_LR_POINTS",
    "MAX_RATIO_LAYERS",
    "NORM_COLORS",
    "NORM_DASHES",
    "PARAM_COLORS",
    "LECTURE_SCALE",
    "PROFILE_HEIGHTS",
    "PROFILE_SPACING",
    "UPDATE_RATIO_REF",
    "LAG_BOUND",
    "act_dist",
    "angular_update_chart",
    "has_update_probes",
    "is_adam",
    "norm_min_rms_chart",
    "precond_lag_chart",
    "attention_entropy_chart",
    "attn_logit_chart",
    "dyt_saturation_chart",
    "has_instability_probes",
    "is_dyt",
    "log_z_chart",
    "massive_act_chart",
    "downsample",
    "downsample_index",
    "grad_heatmap",
    "init_grad_profile",
    "last_layer_vs_depth_chart",
    "layer_profile",
    "loss_chart",
    "norm_label",
    "step_line",
    "resid_growth_chart",
    "SD_FROM",
    "band_kind",
    "median_seed",
    "seed_band",
    "seed_loss_chart",
    "shared_zrange",
    "uniform_entropy",
    "update_ratio_chart",
]
