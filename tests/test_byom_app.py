"""The app on a store that holds runs ln_viz.attach recorded from models ln-viz did not build (a Llama, SwiGLU:
seven matrices; an OLMo 2, placement "reordered" with QK-norm): the charts name the matrices as the model does
(never ln-viz's six), the Runs page lists each run and opens it with its model card, a watch link draws it, and
Compare puts two side by side, in the page and the lecture view, in English and Korean."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import streamlit as st
import torch
from streamlit.testing.v1 import AppTest

from ln_viz import charts
from ln_viz.i18n import t
from ln_viz.store import Store
from ln_viz.ui import keys
from ln_viz.views import run_frames

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-hf.txt)")
pytestmark = pytest.mark.slow  # trains two Hugging Face models (about 8 s under load), then AppTest runs of ~1 s

APP = "../app.py"
LLAMA = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")  # SwiGLU: gate, up and down
OWN = {"attn.q", "attn.k", "attn.v", "attn.o", "ffn.w1", "ffn.w2"}  # ln-viz's six: never on an attached run's chart


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """A store with two attached runs of 4 optimizer steps, probed at each: a Llama and an OLMo 2."""
    from ln_viz.byom import attach
    from tests.byom_models import build

    path = tmp_path_factory.mktemp("byom_app") / "runs.sqlite"
    ids = {}
    for name in ("llama", "olmo2"):
        model = build(name)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        x = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(0))
        with attach(model, opt, store=path, every=1, label=f"my {name}") as probe:
            for _ in range(4):
                model(input_ids=x, labels=x).loss.backward()
                opt.step()
                opt.zero_grad()
        ids[name] = probe.run_id
    return path, ids


@pytest.fixture
def runs(recorded: tuple[Path, dict[str, int]], monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    monkeypatch.setenv("LN_VIZ_STORE", str(recorded[0]))
    monkeypatch.delenv("LN_VIZ_LOAD_DEMOS", raising=False)
    yield recorded[1]
    st.cache_resource.clear()


def _figures(at: AppTest) -> dict[str, dict]:
    return {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def _names(fig: dict) -> list[str]:
    return [tr["name"] for tr in fig["data"] if tr.get("name") and tr.get("yaxis", "y") == "y"]


def test_a_llama_run_is_drawn_with_its_own_seven_matrices(recorded: tuple[Path, dict[str, int]]) -> None:
    path, ids = recorded
    with Store(path) as store:
        data = store.open_run(ids["llama"])
    assert data.info.placement == "pre" and data.info.attached
    fig = charts.layer_profile(data)
    lines = [tr for tr in fig.data if tr.yaxis == "y"]
    assert [tr.name for tr in lines] == list(LLAMA)  # gate, up and down: SwiGLU's three, none called w1/w2
    thick = [tr.name for tr in lines if tr.line.width == 4]
    assert thick == ["down_proj"]  # the paper's Figure 3 matrix is the FFN's output: down_proj
    loss = charts.loss_chart(data)
    names = [tr.name for tr in loss.data]
    assert t("chart.lr_applied", "en") in names and t("chart.lr", "en") not in names  # its optimizer's rate
    assert not any(a.text and t("chart.unigram", "en") in a.text for a in loss.layout.annotations)  # no unigram line
    assert "LlamaForCausalLM: Pre-LN, 2 blocks" in loss.layout.title.subtitle.text  # its card, not a config


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_runs_page_opens_an_attached_run_with_its_card_and_charts(runs: dict[str, int], lang: str) -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = lang
    at.switch_page("pages/runs.py").run()
    assert not at.exception, at.exception
    (table,) = [d for d in at.dataframe if d.key and d.key.startswith("runs_table_")]
    rows = table.value.set_index("id")
    assert rows.loc[runs["olmo2"], "source"] == t("runs.source.attach", lang)
    assert rows.loc[runs["olmo2"], "norm"] == t("chart.norm.reordered", lang)
    assert rows.loc[runs["olmo2"], "steps"] == "4/4"
    position = list(table.value["id"]).index(runs["llama"])
    at.session_state[table.key] = {"selection": {"rows": [position], "columns": [], "cells": []}}
    at.run()
    assert not at.exception and not at.error, (at.exception, at.error)
    heading = t("runs.attached_heading", lang, id=runs["llama"], label="my llama")
    assert heading in [h.value for h in at.subheader]
    frames = {tuple(d.value.columns)[0]: d.value for d in at.dataframe}
    card = frames[t("attached.col.field", lang)].set_index(t("attached.col.field", lang))
    value = card[t("attached.col.value", lang)]
    assert value[t("attached.card.blocks", lang)] == "model.layers"
    assert value[t("attached.card.placement", lang)] == t("chart.norm.pre", lang)
    assert value[t("attached.card.depth", lang)] == "2" and value[t("attached.card.d_model", lang)] == "64"
    assert value[t("attached.card.qk_norm", lang)] == t("attached.no", lang)
    matrices = frames[t("attached.col.matrix", lang)]
    assert len(matrices) == 7 and list(matrices[t("attached.col.role", lang)])[4:] == ["ffn.gate", "ffn.in", "ffn.out"]
    figs = _figures(at)
    assert {"runs_loss_chart", "runs_grad_heatmap", "runs_layer_profile", "runs_act_dist"} <= set(figs)
    assert _names(figs["runs_layer_profile"]) == list(LLAMA)
    assert t("attached.drawn", lang) in [c.value for c in at.caption]


def test_a_watch_link_draws_an_attached_run_named_by_its_card(runs: dict[str, int]) -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"watch": str(runs["olmo2"]), "lang": "en"})
    at.run()
    assert not at.exception and not at.error, (at.exception, at.error)
    assert any("Olmo2 · reordered (output norms) · 2 blocks · QK-norm" in m.value for m in at.markdown)  # the heading
    assert "**Step 4/4 | completed**" in [m.value for m in at.markdown]
    figs = _figures(at)
    profile = _names(figs["layer_profile"])
    assert "down_proj" in profile and not OWN & set(profile)


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("lecture", [False, True], ids=["page", "lecture"])
def test_compare_puts_two_attached_runs_side_by_side(runs: dict[str, int], lang: str, lecture: bool) -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = lang
    if lecture:
        at.query_params["present"] = "1"
    at.session_state[keys.COMPARE_RUNS] = [runs["llama"], runs["olmo2"]]
    at.switch_page("pages/compare.py").run()
    assert not at.exception and not at.error, (at.exception, at.error)
    labels = [
        t("lecture.stored_label", lang, desc=f"Llama · {t('chart.norm.pre', lang)}", id=runs["llama"]),
        t("lecture.stored_label", lang, desc=f"Olmo2 · {t('chart.norm.reordered', lang)}", id=runs["olmo2"]),
    ]
    figs = _figures(at)
    assert _names(figs["compare_loss"]) == labels
    profile = figs["compare_profile"]
    assert _names(profile)[:2] == labels
    title = json.dumps([profile["layout"]["title"], profile["layout"].get("annotations")], ensure_ascii=False)
    assert "down_proj" in title and "ffn.w2" not in title  # the matrix by the models' own name
    assert {"compare_heatmap_0", "compare_heatmap_1"} <= set(figs)
    if lecture:
        assert any(t("lecture.vs", lang).join(labels) in m.value for m in at.markdown)  # the header names both
        title = figs["compare_heatmap_1"]["layout"]["title"]["text"]  # a half width: the run's number first
        assert title == t("runs.heading", lang, id=runs["olmo2"], label=f"Olmo2 · {t('chart.norm.reordered', lang)}")
        assert any(t("attached.lecture_note", lang) in m.value for m in at.markdown)
    else:
        assert t("attached.drawn", lang) in [c.value for c in at.caption]


def test_two_runs_of_the_same_model_are_told_apart(recorded: tuple[Path, dict[str, int]]) -> None:
    path, ids = recorded
    with Store(path) as store:
        data = store.open_run(ids["llama"])
    labels = run_frames.stored_labels([data, data], [ids["llama"], 99], "ko")
    assert labels[0] != labels[1] and "실행 99" in labels[1]


def test_a_watch_link_follows_an_attached_run_while_its_loop_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store is written by the user's loop (here: this test); the watch page reads it again on each run."""
    from ln_viz.byom import attach
    from tests.byom_models import build

    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("LN_VIZ_STORE", str(path))
    model = build("llama")
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    x = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(0))
    probe = attach(model, opt, store=path, every=2, label="still training")  # no steps=: its end is not known

    def train(n: int) -> None:
        for _ in range(n):
            model(input_ids=x, labels=x).loss.backward()
            opt.step()
            opt.zero_grad()
        probe._writer.flush()  # what its writer thread does twice a second

    try:
        train(3)  # a step is stored once the next one is taken: 2 so far
        at = AppTest.from_file(APP, default_timeout=60)
        at.query_params.update({"watch": str(probe.run_id), "lang": "ko"})
        at.run()
        assert not at.exception and not at.error, (at.exception, at.error)
        assert "**스텝 2 | 학습 중**" in [m.value for m in at.markdown]  # its planned steps unknown: no "/0"
        train(3)
        at.run()
        assert "**스텝 5 | 학습 중**" in [m.value for m in at.markdown]
        assert "down_proj" in _names(_figures(at)["layer_profile"])
    finally:
        probe.close()
        st.cache_resource.clear()


def test_the_runs_filter_offers_a_stored_model_s_own_placement_and_finds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GPT-NeoX (attention and FFN read the same input: "parallel", no placement ln-viz trains) is offered
    by the Runs page's placement filter once it is stored, and filtering to it lists it alone."""
    from ln_viz.byom import attach
    from ln_viz.config import NORM_POSITIONS
    from ln_viz.views.runs_list import placement_options
    from tests.byom_models import build

    path = tmp_path / "runs.sqlite"
    model = build("gpt_neox")
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(0))
    with attach(model, opt, store=path, every=1, label="my neox") as probe:
        model(input_ids=x, labels=x).loss.backward()
        opt.step()
    with Store(path) as store:
        assert placement_options(store.list_runs()) == (*NORM_POSITIONS, "parallel")
    monkeypatch.setenv("LN_VIZ_STORE", str(path))
    monkeypatch.delenv("LN_VIZ_LOAD_DEMOS", raising=False)
    try:
        at = AppTest.from_file(APP, default_timeout=60)
        at.switch_page("pages/runs.py").run()
        (box,) = [m for m in at.multiselect if m.label == t("ui.norm_position", "en")]
        assert t("chart.norm.parallel", "en") in box.options
        box.select("parallel").run()
        assert not at.exception, at.exception
        (table,) = [d for d in at.dataframe if d.key and d.key.startswith("runs_table_")]
        assert list(table.value["id"]) == [probe.run_id]
    finally:
        st.cache_resource.clear()
