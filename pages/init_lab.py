"""Init lab: the paper's Figure 3 without training. Gradients and the residual stream at
initialisation, for each norm position, in seconds."""

import streamlit as st

from ln_viz import charts
from ln_viz.config import NORM_POSITIONS, RunConfig
from ln_viz.i18n import LocalizedError, t
from ln_viz.init_lab import DEFAULT_SCENARIO
from ln_viz.schema import PARAM_NAMES
from ln_viz.ui import init_lab_cache, init_lab_hf, keys, language, lecture_switch, links, page_state
from ln_viz.ui.config_form import widget_bounds
from ln_viz.ui.safe import md

lang = language.current_lang()
lecture = lecture_switch.lecture_view_on()
if lecture:  # one screen: Figure 3, ln-viz's model or BERT vs GPT-2, and the sentence its measurement supports
    init_lab_hf.lecture(lang)
    st.stop()
st.title(t("init.title", lang))
for notice in links.link_notices(lang):
    st.warning(md(notice))
st.caption(t("init.intro", lang))
D = DEFAULT_SCENARIO  # shipped measured: the page draws at once

# The form's defaults are set in code (no default= beside a key set in code), so the values kept for
# the session (ln_viz.ui.page_state) come back after a visit to another page.
DEFAULTS = {
    keys.INIT_POSITIONS: list(D["positions"]), keys.INIT_DEPTH: D["depth"], keys.INIT_SEEDS: D["seeds"],
    keys.INIT_PARAM: D["param"], keys.INIT_D_MODEL: D["d_model"], keys.INIT_HEADS: D["heads"],
    keys.INIT_BATCH: D["batch_size"], keys.INIT_SEQ: D["seq_len"], keys.INIT_DEPTHS: list(D["depths"]),
}  # fmt: skip
page_state.keep(DEFAULTS)
for key, value in DEFAULTS.items():
    st.session_state.setdefault(key, value)
c1, c2, c3, c4 = st.columns(4)
positions = c1.multiselect(
    t("ui.norm_position", lang), NORM_POSITIONS, key=language.translated(keys.INIT_POSITIONS),
    format_func=lambda v: t(f"norm.{v}", lang),
)  # fmt: skip
depth = c2.slider(t("ui.depth", lang), key=keys.INIT_DEPTH, **widget_bounds("depth"))
seeds = c3.slider(t("init.seeds", lang), 1, 10, key=keys.INIT_SEEDS)
param = c4.selectbox(t("init.param", lang), PARAM_NAMES, key=keys.INIT_PARAM)
with st.expander(t("ui.advanced", lang)):
    a1, a2, a3, a4 = st.columns(4)
    d_model = a1.number_input(t("ui.d_model", lang), key=keys.INIT_D_MODEL, **widget_bounds("d_model"))
    heads = a2.number_input(t("ui.heads", lang), key=keys.INIT_HEADS, **widget_bounds("heads"))
    batch = a3.number_input(t("ui.batch_size", lang), key=keys.INIT_BATCH, **widget_bounds("batch_size"))
    seq = a4.number_input(t("ui.seq_len", lang), key=keys.INIT_SEQ, **widget_bounds("seq_len"))
    depths = st.multiselect(t("init.depths", lang), [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48], key=keys.INIT_DEPTHS)
st.caption(t("init.noise_note", lang))

try:
    cfg = RunConfig(depth=depth, d_model=int(d_model), heads=int(heads), batch_size=int(batch), seq_len=int(seq))
    cfg.validate()
except LocalizedError as e:
    st.error(md(e.message(lang)))
    st.stop()
if not positions:
    st.info(t("init.pick_position", lang))
    st.stop()


with st.spinner(t("init.measuring", lang)):
    lab, shipped = init_lab_cache.init_lab_results(cfg, tuple(positions), seeds, tuple(sorted(depths)), param)
if shipped:
    st.caption(t("init.shipped", lang))

st.plotly_chart(
    charts.init_grad_profile(lab.grads, lang, param, lecture), key="init_profile", width="stretch", theme=None
)
ratio = lab.pre_ln_profile_ratio(param)
if ratio is not None and ratio < 0.8:
    st.info(t("init.pre_not_flat", lang, ratio=f"{ratio:.2f}", param=param))
st.caption(t("init.profile_caption", lang))
left, right = st.columns(2)
with left:
    st.plotly_chart(
        charts.last_layer_vs_depth_chart(lab.vs_depth, lang, lecture, param, chosen=lab.grads),
        key="init_vs_depth",
        theme=None,
    )
    st.caption(t("init.vs_depth_caption", lang))
with right:
    st.plotly_chart(charts.resid_growth_chart(lab.resid, lang, lecture), key="init_resid", theme=None)
    st.caption(t("init.resid_caption", lang))
with st.expander(t("init.cli_equivalent", lang)):
    flags = f"--depth {depth} --d-model {d_model} --heads {heads} --batch-size {batch} --seq-len {seq}"
    st.code(
        "\n".join(f"python -m ln_viz init-grads --norm-position {p} {flags} --seeds {seeds} --csv" for p in positions),
        language="bash",
    )
init_lab_hf.real_architectures(lang)
