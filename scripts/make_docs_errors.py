"""Write docs/errors.md, every error sentence ln-viz can say, from the catalogs (ln_viz/locales/en.toml,
ko.toml): each key with an `err` part (err.*, sweep.err.*, seeds.err.*) and the few other sentences that
refuse or warn (EXTRA), grouped under the catalog's own section comments, in English and Korean.
tests/test_docs.py fails when the committed page differs from what this writes now.

    .venv/bin/python scripts/make_docs_errors.py          # rewrite docs/errors.md
    .venv/bin/python scripts/make_docs_errors.py --check  # exit 1 if docs/errors.md is out of date
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "errors.md"
CATALOG = ROOT / "ln_viz" / "locales" / "en.toml"
COMMAND = ".venv/bin/python scripts/make_docs_errors.py"
# sentences that refuse, warn or report a failure without an `err` in their key
EXTRA = (
    "msg.worker_error",
    "msg.store_locked",
    "msg.store_incomplete",
    "msg.interrupted",
    "ui.invalid_config",
    "ui.url_ignored",
    "ui.url_unknown",
    "runs.no_store",
    "runs.import_refused",
    "watch.bad_id",
    "watch.unknown",
    "watch.no_store",
)

HEADER = """\
# Every error sentence

<!-- Written by scripts/make_docs_errors.py from ln_viz/locales/en.toml and ko.toml; do not edit by hand. -->

Every sentence with which ln-viz refuses an input, warns, or reports a failure, as its catalogs hold it
(`ln_viz/locales/en.toml`, `ko.toml`), grouped as the catalogs group them. `{value}`, `{path}`, ... are
filled in when the sentence is said (`{value!r}` in quotes); a value from outside is cut to a short prefix
with its length. On the command line the English sentence follows `error: ` (exit status 2); the app says
it in the language of the page. [Troubleshooting](troubleshooting.md) shows the common ones as a user
meets them, with real values. This page is written by `scripts/make_docs_errors.py`; a test fails when
it is out of date.
"""


def error_keys(catalog: dict[str, str]) -> list[str]:
    """The keys of the sentences this page lists, in the catalog's order."""
    return [k for k in catalog if "err" in k.split(".") or k in EXTRA]


def sections() -> dict[str, str]:
    """key -> the title of the catalog section (its `# --- title` comment) it is defined in."""
    where: dict[str, str] = {}
    title = "other"
    for line in CATALOG.read_text(encoding="utf-8").splitlines():
        if line.startswith("# ---"):
            title = line.strip("# -").strip()
        elif (m := re.match(r'^"?([\w.-]+)"?\s*=', line)) is not None:
            where[m.group(1)] = title
    return where


def cell(text: str) -> str:
    """A sentence as a table cell: Markdown's special characters escaped outside its code spans (a cell ending
    in `{reason}` would otherwise be read as attr_list's attributes and vanish)."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # the even parts are outside backticks
        parts[i] = re.sub(r"([\\*_\[\]<>|{}])", r"\\\1", parts[i])  # {...}: not an attribute list
    return "`".join(parts).replace("\n", " ")


def render() -> str:
    from ln_viz.i18n import EN, KO

    where = sections()
    groups: dict[str, list[str]] = {}
    for key in error_keys(EN):
        groups.setdefault(where.get(key, "other"), []).append(key)
    parts = [HEADER]
    for title, keys in groups.items():
        parts.append(f"## {cell(title[0].upper() + title[1:])}\n")
        parts.append("| key | English | 한국어 |\n|---|---|---|")
        parts.extend(f"| `{k}` | {cell(EN[k])} | {cell(KO.get(k, EN[k]))} |" for k in keys)
        parts.append("")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/errors.md differs from the catalogs")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        if OUT.read_text(encoding="utf-8") != text:
            print(f"docs/errors.md is out of date; run: {COMMAND}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
