"""The Init lab: its shipped default measurement is what the code measures now; its process pool's
workers yield the CPU to the server, as training workers do."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ln_viz.init_lab import BUNDLED_DEFAULT, DEFAULT_SCENARIO, bundled_default, make_executor, measure_default
from ln_viz.runner import WORKER_NICE


@pytest.fixture(scope="module")
def pool():
    """The page's pool of 2 worker processes, started once for the module's slow tests (each worker imports torch,
    pandas and the corpus: seconds of CPU per pool on CI)."""
    pool = make_executor(2)
    yield pool
    pool.shutdown()


@pytest.mark.slow
def test_pool_workers_run_below_the_server(pool):
    child = pool.submit(os.getpriority, os.PRIO_PROCESS, 0).result(timeout=90)
    assert child == min(19, os.getpriority(os.PRIO_PROCESS, 0) + WORKER_NICE)


@pytest.mark.slow
def test_the_shipped_default_is_what_measuring_it_gives_now(pool):
    """The page shows ln_viz/data/init_lab_default.json for its default scenario: it must be the same
    numbers this code measures (run scripts/make_init_lab_default.py when this fails)."""
    shipped = bundled_default()
    assert shipped is not None, "the shipped Init lab default is missing or for another scenario"
    fresh = measure_default(pool)
    for pos in DEFAULT_SCENARIO["positions"]:
        for got, want in ((shipped.grads[pos], fresh.grads[pos]), (shipped.resid[pos], fresh.resid[pos])):
            pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-4)
    pd.testing.assert_frame_equal(shipped.vs_depth, fresh.vs_depth, check_exact=False, rtol=1e-4)


def test_a_shipped_default_for_another_scenario_is_not_used(tmp_path):
    doc = json.loads(BUNDLED_DEFAULT.read_text())
    doc["scenario"]["seeds"] = 5
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    assert bundled_default(other) is None
    (tmp_path / "broken.json").write_text("{")
    assert bundled_default(tmp_path / "broken.json") is None
    assert bundled_default(tmp_path / "missing.json") is None


# --- the Init lab on real architectures (ln_viz/hf_init_lab.py, ln_viz/byom/figure3.py) ---------------------
BLOCK_TRANSFORMERS = """
import sys
class _NoTransformers:  # what a Python without transformers answers: the import fails
    def find_spec(self, name, path=None, target=None):
        if name == "transformers" or name.startswith("transformers."):
            raise ModuleNotFoundError("No module named 'transformers'", name="transformers")
        return None
sys.meta_path.insert(0, _NoTransformers())
"""


def _grads(ratios: list[float], role: str = "ffn.out") -> pd.DataFrame:
    """A 3-layer measurement whose last/first ratio per seed is `ratios` (layer 1 at 1.0, layer 2 between)."""
    rows = []
    for seed, r in enumerate(ratios):
        for layer, g in ((1, 1.0), (2, (1.0 + r) / 2), (3, r)):
            rows.append((seed, layer, "mlp.out", role, g))
    return pd.DataFrame(rows, columns=["seed", "layer", "matrix", "role", "grad_norm"])


@pytest.mark.parametrize(
    ("ratios", "verdict", "en_words", "ko_words"),
    [
        ([1.01, 0.97, 1.06, 0.99, 1.02], "flat", "about flat", "거의 평평"),
        ([1.6, 1.3, 1.9], "grows", "grows toward the output", "커집니다"),
        ([0.83, 0.82, 0.85], "shrinks", "shrinks toward the output", "작아집니다"),
        ([0.83, 0.27, 1.23], "mixed", "the seeds disagree", "방향을 말할 수 없습니다"),
    ],
    ids=["flat", "grows", "shrinks", "mixed"],
)
def test_the_verdict_sentence_follows_the_measurement(ratios, verdict, en_words, ko_words):
    """The issue's own figures: BERT at HF's init 1.01 (0.97-1.06) is flat; GPT-2's 0.83 shrinks; BERT at Xavier
    0.83 (0.27-1.23) claims no direction. The sentence says what was measured, with its spread, en and ko."""
    from ln_viz.hf_init_lab import Measured, arch_sentence, ratio
    from ln_viz.hf_init_lab import verdict as verdict_of

    m = Measured("bert", "hf", "post", _grads(ratios))
    r = ratio(m.grads)
    assert verdict_of(r) == verdict
    assert (r.lo, r.hi, r.n) == (pytest.approx(min(ratios)), pytest.approx(max(ratios)), len(ratios))
    en, ko = arch_sentence(m, "en"), arch_sentence(m, "ko")
    assert en_words in en and ko_words in ko
    assert f"{min(ratios):.2f} to {max(ratios):.2f} over {len(ratios)} seeds" in en
    assert f"시드 {len(ratios)}개에서 {min(ratios):.2f}~{max(ratios):.2f}" in ko


def test_the_lecture_sentence_says_whether_the_paper_s_picture_holds():
    from ln_viz.hf_init_lab import pair_sentence, ratio

    grows, flat, shrinks = (ratio(_grads(r)) for r in ([1.5, 1.4], [1.0, 1.02], [0.5, 0.6]))
    as_paper = pair_sentence(("BERT", "post", grows), ("GPT-2", "pre", shrinks), "en")
    assert as_paper.startswith("As the paper's Figure 3 says") and "GPT-2 (Pre-LN) shrinks" in as_paper
    flat_post = pair_sentence(("BERT", "post", flat), ("GPT-2", "pre", shrinks), "ko")
    assert flat_post.startswith("논문의 그림 3과 달리") and "BERT(Post-LN): 거의 평평함" in flat_post
    both = pair_sentence(("BERT", "post", grows), ("GPT-2", "pre", grows), "en")
    assert both.startswith("Unlike the paper's Figure 3, the Pre-LN gradient grows")


def test_the_shipped_real_architectures_are_every_arch_at_both_inits_with_describe_s_placement():
    from ln_viz.hf_init_lab import ARCHS, INITS, ROLES, Setup, bundled_default

    shipped = bundled_default()
    assert shipped is not None, "ln_viz/data/init_lab_hf_default.json is missing: scripts/make_init_lab_default.py"
    lab, version = shipped
    assert lab.setup == Setup() and set(lab.measured) == {(a, i) for a in ARCHS for i in INITS}
    placements = {a: lab.measured[(a, "hf")].placement for a in ARCHS}
    assert placements == {"bert": "post", "gpt2": "pre", "llama": "pre", "gemma3_text": "peri", "olmo2": "reordered"}
    for m in lab.measured.values():
        assert sorted(m.grads.seed.unique()) == list(range(5)) and set(m.grads.role) == set(ROLES)
        assert m.grads.layer.max() == 12
    assert version


@pytest.mark.slow
def test_the_shipped_real_architectures_are_what_measuring_them_gives_now(pool):
    """The page shows ln_viz/data/init_lab_hf_default.json: it must be what this code and the installed
    transformers measure (run scripts/make_init_lab_default.py when this fails). Seed 0 of every architecture
    and init (a seed's model and tokens depend on it alone): a fifth of the measurement's time."""
    pytest.importorskip("transformers")
    from ln_viz.hf_init_lab import Setup, bundled_default, hf_lab

    shipped, _ = bundled_default()
    fresh = hf_lab(Setup(seeds=1), executor=pool)
    for key, m in fresh.measured.items():
        assert m.placement == shipped.measured[key].placement
        want = shipped.measured[key].grads
        want = want[want.seed == 0].reset_index(drop=True)
        pd.testing.assert_frame_equal(m.grads, want, check_exact=False, rtol=1e-4)


@pytest.mark.slow
def test_a_tiny_bert_measured_here_is_flat_or_not_as_its_ratio_says():
    """The engine itself, in this process: 2 seeds of a 3-layer BERT at both inits; the sentence's figures are
    the gradients' own (the last layer's output.dense gradient over the first's)."""
    pytest.importorskip("transformers")
    from ln_viz.byom.figure3 import build, loss_on_random_tokens
    from ln_viz.hf_init_lab import Setup, arch_sentence, hf_lab, ratio

    setup = Setup(depth=3, seeds=2, batch=4, seq_len=16)
    lab = hf_lab(setup, archs=("bert",))
    m = lab.get("bert", "hf")
    assert m.placement == "post" and set(m.grads.matrix) == {"output.dense", "attention.output.dense"}
    model = build("bert", "mlm", setup, 1)
    loss_on_random_tokens(model, "mlm", setup, 1).backward()
    layers = model.bert.encoder.layer
    want = float(layers[2].output.dense.weight.grad.norm() / layers[0].output.dense.weight.grad.norm())
    got = m.grads[(m.grads.role == "ffn.out") & (m.grads.seed == 1)].set_index("layer").grad_norm
    assert got[3] / got[1] == pytest.approx(want, rel=1e-5)
    r = ratio(m.grads)
    assert f"{r.median:.2f}x the first's ({r.lo:.2f} to {r.hi:.2f} over 2 seeds)" in arch_sentence(m, "en")
    assert lab.get("bert", "xavier").grads.grad_norm.ne(m.grads.grad_norm).all()  # Xavier is another init


def _run_without_transformers(code: str, tmp_path) -> str:
    """`code` in a fresh Python whose `import transformers` fails (a meta-path finder refusing it, as a Python
    without it would), in this checkout; its output."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "HF_HUB_OFFLINE": "1",
           "LN_VIZ_STORE": str(tmp_path / "runs.sqlite"), "LN_VIZ_WARM_WORKERS": "0"}  # fmt: skip
    out = subprocess.run([sys.executable, "-c", BLOCK_TRANSFORMERS + code], env=env, capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.slow
def test_without_transformers_the_page_says_in_one_sentence_how_to_add_it(tmp_path):
    """No transformers: the real-architecture view (its normal view and the lecture view) says how to add it,
    en and ko, and nothing raises; with the shipped measurement it still shows that, and says the same."""
    app = Path(__file__).resolve().parents[1] / "app.py"
    code = f"""
import json
from pathlib import Path
import streamlit as st
from streamlit.testing.v1 import AppTest
from ln_viz import hf_init_lab
assert hf_init_lab.transformers_missing()
try:
    import transformers
except ImportError:
    pass
else:
    raise SystemExit("the blocker let transformers in")
seen = {{}}
for shipped in (False, True):
    hf_init_lab.BUNDLED_DEFAULT = Path(hf_init_lab.__file__).with_name("data") / (
        "init_lab_hf_default.json" if shipped else "no-such-file.json")
    for lang, present in (("en", "0"), ("ko", "1")):
        st.cache_resource.clear()
        at = AppTest.from_file({str(app)!r}, default_timeout=120)
        at.query_params.update({{"lang": lang, "present": present}})
        at.switch_page("pages/init_lab.py").run()
        assert not at.exception, at.exception
        texts = [e.value for e in (*at.info, *at.caption)]
        charts = [c.key for c in at.get("plotly_chart")]
        seen[f"{{shipped}}-{{lang}}-{{present}}"] = [texts, charts]
print(json.dumps(seen))
"""
    import json

    seen = json.loads(_run_without_transformers(code, tmp_path).strip().splitlines()[-1])
    from ln_viz.hf_init_lab import missing_sentence
    from ln_viz.ui.safe import md

    for case, (texts, charts) in seen.items():
        shipped, lang, present = case.split("-")
        want = md(missing_sentence(lang))
        assert 'pip install "ln-viz[hf]"' in missing_sentence(lang)
        if present == "0":
            assert want in texts, case  # in the normal view: an info without the shipped figures, else a caption
            assert ("init_hf_profile" in charts) == (shipped == "True"), case
        elif shipped == "False":
            assert want in texts and charts == [], case  # the lecture view's BERT vs GPT-2: the sentence instead
        else:
            assert charts == ["init_lecture"], case


def test_the_lecture_view_shows_bert_against_gpt2_and_the_sentence_its_measurement_supports(start_app):
    """`?present=1` on the Init lab: one chart (BERT and GPT-2, their seeds' medians relative to layer 1) and
    the sentence made from the same numbers, en and ko; the header links to Compare and the stability map."""
    from ln_viz.hf_init_lab import bundled_default, measured_pair, ratio, seed_ratios
    from ln_viz.ui.safe import md

    lab, _ = bundled_default()
    at = start_app(120, "pages/init_lab.py")
    at.query_params["present"] = "1"
    at.run()
    assert not at.exception and [c.key for c in at.get("plotly_chart")] == ["init_lecture"]
    bert, gpt2 = lab.get("bert", "hf"), lab.get("gpt2", "hf")
    assert md(measured_pair(bert, gpt2, "en")) in [m.value for m in at.markdown]
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    lines = {tr["name"]: tr for tr in spec["data"] if tr.get("mode") == "lines+markers"}
    assert set(lines) == {"BERT (Post-LN)", "GPT-2 (Pre-LN)"}  # the placements ln_viz.describe found
    from tests.test_pages import plotly_array

    last = plotly_array(lines["BERT (Post-LN)"]["y"])[-1]
    assert last == pytest.approx(float(seed_ratios(bert.grads).median()), rel=1e-6)  # the sentence's median
    assert f"{ratio(bert.grads).median:.2f}x" in measured_pair(bert, gpt2, "en")
    assert [p.proto.page for p in at.get("page_link")] == ["compare", "stability_map"]
    at.button(key="lecture_lang").click().run()  # to Korean
    assert md(measured_pair(bert, gpt2, "ko")) in [m.value for m in at.markdown]  # its tildes escaped
    at.button_group(key="init_lecture_view").set_value("xavier").run()
    xavier = measured_pair(lab.get("bert", "xavier"), lab.get("gpt2", "xavier"), "ko")
    assert md(xavier) in [m.value for m in at.markdown] and not at.exception


def test_the_ratio_chart_draws_each_init_s_median_and_its_seeds_range():
    from ln_viz.charts.init_hf import hf_ratio_chart

    measured = [("bert", "hf", _grads([1.0, 0.9, 1.2])), ("bert", "xavier", _grads([0.3, 0.5, 0.4])),
                ("gpt2", "hf", _grads([0.8, 0.82, 0.85]))]  # fmt: skip
    fig = hf_ratio_chart(measured, "ko")
    by_name = {tr.name: tr for tr in fig.data}
    hf, xavier = by_name["Hugging Face 자체 초기화"], by_name["Xavier-uniform(논문)"]
    assert list(hf.y) == pytest.approx([1.0, 0.82]) and list(xavier.y) == pytest.approx([0.4])
    assert list(hf.error_y.array) == pytest.approx([0.2, 0.03]) and list(hf.error_y.arrayminus) == pytest.approx(
        [0.1, 0.02]
    )
    assert list(fig.layout.xaxis.ticktext) == ["BERT", "GPT-2"] and hf.x[0] < xavier.x[0] < hf.x[1]
