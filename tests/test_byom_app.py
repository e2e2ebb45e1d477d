"""The app on a store that holds a run ln_viz.attach recorded (an OLMo 2, placement "reordered"): the Runs
page lists it beside ln-viz's own runs and says in one sentence that it cannot draw it yet; a watch link to
it says the same; nothing raises. (Drawing an attached run's charts is issue 31's next part.)"""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
import torch
from streamlit.testing.v1 import AppTest

from ln_viz.i18n import t
from ln_viz.store import Store
from tests.runs import train_tiny

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-hf.txt)")

APP = "../app.py"


@pytest.fixture
def store_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("LN_VIZ_STORE", str(path))
    monkeypatch.delenv("LN_VIZ_LOAD_DEMOS", raising=False)
    yield path
    st.cache_resource.clear()


@pytest.fixture
def runs(store_path: Path) -> dict[str, int]:
    """ln-viz's own tiny Pre-LN run, then an attached OLMo 2 run of 3 steps."""
    from ln_viz.byom import attach
    from tests.byom_models import build

    with Store(store_path) as store:
        own = store.add_run(train_tiny(), label="tiny pre", source="train")
    model = build("olmo2")
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    x = torch.randint(0, 128, (2, 8), generator=torch.Generator().manual_seed(0))
    with attach(model, opt, store=store_path, every=1, label="my olmo") as probe:
        for _ in range(3):
            model(input_ids=x, labels=x).loss.backward()
            opt.step()
            opt.zero_grad()
    return {"own": own, "attached": probe.run_id}


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_runs_page_lists_an_attached_run_and_says_it_cannot_draw_it_yet(runs: dict[str, int], lang: str) -> None:
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = lang
    at.switch_page("pages/runs.py").run()
    assert not at.exception, at.exception
    (table,) = [d for d in at.dataframe if d.key and d.key.startswith("runs_table_")]
    rows = table.value.set_index("id")
    assert rows.loc[runs["attached"], "source"] == t("runs.source.attach", lang)
    assert rows.loc[runs["attached"], "norm"] == t("chart.norm.reordered", lang)
    assert rows.loc[runs["attached"], "steps"] == "3/3"
    position = list(table.value["id"]).index(runs["attached"])
    at.session_state[table.key] = {"selection": {"rows": [position], "columns": [], "cells": []}}
    at.run()
    assert not at.exception, at.exception
    sentence = t("err.run_attached", lang, run_id=runs["attached"], family="Olmo2ForCausalLM", placement="reordered")
    assert [e.value for e in at.info] == [sentence] and not at.error  # whole, not damaged: no red box
    assert t("runs.attached_heading", lang, id=runs["attached"]) in [h.value for h in at.subheader]
    assert t("runs.damaged_heading", lang, id=runs["attached"]) not in [h.value for h in at.subheader]


def test_a_watch_link_to_an_attached_run_is_one_sentence(runs: dict[str, int]) -> None:
    app = AppTest.from_file(APP, default_timeout=60)
    app.query_params.update({"watch": str(runs["attached"]), "lang": "en"})
    app.run()
    assert not app.exception, app.exception
    assert len(app.error) == 1 and "ln_viz.attach" in app.error[0].value
    assert not app.get("plotly_chart")
