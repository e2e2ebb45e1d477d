"""Bit-for-bit check of a change to attach's probe step: every array an attached run stores, its scalars
and the model's logits, for 12-step runs probed every step and every 5th (a 6-block Llama as the overhead
benchmark's, and tiny GPT-2, BERT with padding, Gemma 3, OLMo 2, T5, Gemma 2 as the tests build them),
dumped by one checkout and compared with another's dump. A change to how a probe is computed passes only if
nothing differs (timing columns left out).

    PYTHONPATH=/path/to/old .venv/bin/python benchmarks/byom_bitcheck.py dump /tmp/old.pkl
    PYTHONPATH=/path/to/new .venv/bin/python benchmarks/byom_bitcheck.py dump /tmp/new.pkl
    .venv/bin/python benchmarks/byom_bitcheck.py compare /tmp/old.pkl /tmp/new.pkl

(run as a file, so that the checkout on PYTHONPATH, an older one too, is the ln_viz measured)
"""

from __future__ import annotations

import os
import pickle
import sqlite3
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _cases():
    from benchmarks.byom_overhead import llama
    from tests.byom_models import build

    quiet = dict(attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0)
    return [  # name, model, batch, sequence, vocabulary, what the forward is given beside the ids
        ("llama6", lambda: llama(False), 16, 64, 512, None),
        ("gpt2", lambda: build("gpt2"), 4, 16, 128, None),
        ("bert_pad", lambda: build("bert", **quiet), 4, 16, 128, "pad"),
        ("gemma3", lambda: build("gemma3_text"), 4, 16, 128, None),
        ("olmo2", lambda: build("olmo2"), 4, 16, 128, None),
        ("t5", lambda: build("t5"), 4, 16, 128, "t5"),
        ("gemma2", lambda: build("gemma2"), 4, 16, 128, None),
    ]


def dump(path: str) -> None:
    import torch

    import ln_viz

    torch.set_num_threads(1)
    print("ln_viz from", ln_viz.__file__, file=sys.stderr)
    out: dict[str, bytes] = {}
    tmp = tempfile.mkdtemp()
    for name, make, B, T, V, kind in _cases():
        for every in (1, 5):
            model = make()
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
            store = os.path.join(tmp, f"{name}{every}.sqlite")
            g = torch.Generator().manual_seed(7)
            logits = []
            with ln_viz.attach(model, opt, store=store, every=every, steps=12) as probe:
                for _ in range(12):
                    x = torch.randint(0, V, (B, T), generator=g)
                    kw: dict = {"decoder_input_ids": x} if kind == "t5" else {}
                    if kind == "pad":
                        mask = torch.ones(B, T, dtype=torch.long)
                        mask[1, T // 2 :] = 0
                        mask[2, 3:] = 0
                        kw["attention_mask"] = mask
                    o = model(input_ids=x, labels=x, **kw)
                    logits.append(o.logits.detach().numpy().tobytes())
                    o.loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    opt.step()
                    opt.zero_grad()
                    probe.log(loss=o.loss)
                run = probe.run_id
            db = sqlite3.connect(store)
            rows = db.execute("SELECT name, step, shape, data FROM probes WHERE run_id = ?", (run,))
            for probe_name, step, shape, data in rows:
                out[f"{name}/{every}/probe/{probe_name}/{step}"] = bytes(data) + str(shape).encode()
            columns = "step, loss, lr, grad_norm, eval_loss, stalled, has_probes"  # not elapsed, steps_per_sec
            for row in db.execute(f"SELECT {columns} FROM scalars WHERE run_id = ?", (run,)):
                out[f"{name}/{every}/scalar/{row[0]}"] = repr(row).encode()
            db.close()
            out[f"{name}/{every}/logits"] = b"".join(logits)
    with open(path, "wb") as f:
        pickle.dump(out, f)
    print(f"{len(out)} entries in {path}", file=sys.stderr)


def compare(a_path: str, b_path: str) -> int:
    """Nonzero if any entry differs; the differing ones listed (the first 40), and per stored array the
    number of entries that differ and the largest difference, absolute and relative to the value."""
    import numpy as np

    with open(a_path, "rb") as f:
        a = pickle.load(f)
    with open(b_path, "rb") as f:
        b = pickle.load(f)
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    print(f"{len(a)} and {len(b)} entries; {len(differ)} differ")
    for key in differ[:40]:
        print("  ", key)
    by_name: dict[str, list] = {}
    for key in differ:
        case, every, kind, *rest = key.split("/")
        name = rest[0] if kind == "probe" else kind
        row = by_name.setdefault(name, [0, 0.0, 0.0, set()])
        row[0] += 1
        row[3].add(case)
        if kind == "probe" and key in a and key in b:
            x, y = (np.frombuffer(v[: len(v) - len(v) % 4], "<f4").astype(np.float64) for v in (a[key], b[key]))
            if x.shape == y.shape:
                d = np.abs(x - y)
                seen = np.isfinite(d)
                if seen.any():
                    row[1] = max(row[1], float(d[seen].max()))
                    row[2] = max(row[2], float((d[seen] / np.maximum(np.abs(x[seen]), 1e-30)).max()))
    for name, (count, absolute, relative, cases) in sorted(by_name.items()):
        where = ", ".join(sorted(cases))
        print(f"{name}: {count} entries differ ({where}); largest {absolute:.3g} ({relative:.3g} relative)")
    return 1 if differ else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "dump":
        dump(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        raise SystemExit(compare(sys.argv[2], sys.argv[3]))
    else:
        raise SystemExit(__doc__)
