"""Both catalogs (ln_viz/locales/*.toml) have every key with the same placeholders; every message key the engine,
runner and store can set is in them; no page hard-codes a sentence."""

import ast
import re
import tomllib
from pathlib import Path

import pytest

from ln_viz import i18n
from ln_viz.i18n import EN, KO, placeholders

ROOT = Path(__file__).resolve().parents[1]


def test_both_languages_have_every_key_with_the_same_placeholders():
    assert set(EN) == set(KO), set(EN) ^ set(KO)
    for key in EN:
        assert placeholders(EN[key]) == placeholders(KO[key]), key


def test_toml_keys_round_trip_to_the_dotted_keys_of_the_code():
    # runs.sort is both a sentence and the start of runs.sort.newest: quoted in the file, flat here
    assert {"runs.sort", "runs.sort.newest", "err.range"} <= set(EN) & set(KO)
    assert all(isinstance(v, str) and v for v in EN.values())
    assert not [k for k in EN if k.startswith("theory.")]  # the Theory prose lives in ln_viz/content/
    flat = i18n.flatten_catalog(tomllib.loads('"a.b" = "x"\na.b.c = "y"\na.d = "z"\n'))
    assert flat == {"a.b": "x", "a.b.c": "y", "a.d": "z"}
    with pytest.raises(KeyError, match="twice"):
        i18n.flatten_catalog(tomllib.loads('"a.b" = "x"\na.b = "y"\n'))
    with pytest.raises(TypeError, match="not a string"):
        i18n.flatten_catalog(tomllib.loads("a.b = 1\n"))


def test_korean_is_korean():
    hangul = re.compile("[\uac00-\ud7a3]")
    same = [k for k in EN if EN[k] == KO[k] and "=" not in EN[k] and len(EN[k]) > 25]  # formulas are shared
    assert same == [], same  # long sentences left in English
    assert sum(bool(hangul.search(v)) for v in KO.values()) > 0.8 * len(KO)


def test_every_message_key_used_in_code_exists():
    used = set()
    for path in [*ROOT.glob("ln_viz/**/*.py"), *ROOT.glob("pages/*.py"), ROOT / "app.py"]:
        text = path.read_text()
        used |= set(re.findall(r"""\bt\(\s*["']([\w.-]+)["']""", text))  # t("key", ...)
        used |= set(re.findall(r"""["']((?:msg|err)\.[\w-]+)["']""", text))  # message keys set by the engine
    missing = sorted(k for k in used if k not in EN and not k.endswith("."))
    assert missing == [], missing


PAGE_FILES = [ROOT / "app.py", *sorted(ROOT.glob("pages/*.py")), *sorted(ROOT.glob("ln_viz/ui/*.py"))]


@pytest.mark.parametrize("path", PAGE_FILES, ids=lambda p: p.name)
def test_pages_hard_code_no_sentence(path):
    """Every string literal a page passes to an st.* call is a key, a widget key, a format or a path."""
    tree = ast.parse(path.read_text())
    offenders = []
    for node in ast.walk(tree):
        is_call = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        if is_call and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "log"):  # server log
            for arg in node.args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    text = arg.value
                    # a sentence: two words or more of letters, not a key / path / code / CSS
                    if re.search(r"[A-Za-z가-힣]{2,}\s+[A-Za-z가-힣]{2,}", text) and not text.startswith(
                        ("<", "python ")
                    ):
                        offenders.append((node.lineno, text))
    assert offenders == [], offenders


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_each_compare_takeaway_and_question_names_its_learning_rate_and_warm_up(lang):
    """The post-vs-pre takeaway said "only where LayerNorm sits decides whether it learns", while the app's
    own stability map shows Post-LN learning at lr 1e-3 without warm-up (issue 21, N17): each scenario's
    sentence names the setting it was measured at, in the words the header uses."""
    from ln_viz.config import COMPARE_PRESETS, PRESETS
    from ln_viz.words import setting_words

    for name, (a, b, _) in COMPARE_PRESETS.items():
        for key in (f"lecture.takeaway.{name}", f"lecture.question.{name}"):
            text = i18n.t(key, lang)
            for side in (a, b):
                words = setting_words(PRESETS[side].config, lang)
                lr = words[2].split(" ", 1)[1]  # "lr 3e-3" without the optimizer's name (the header says 0.1
                mantissa, exponent = f"{PRESETS[side].config.lr:.0e}".split("e")  # for 1e-1: either form)
                said = (lr, lr.replace(lr.rsplit(" ", 1)[-1], f"{mantissa}e{int(exponent)}"))
                assert any(s in text for s in said) and words[3] in text, (key, lang, said, words[3], text)
