"""Measure the Init lab's default scenario and write ln_viz/data/init_lab_default.json, which the page
shows on a cold server instead of measuring for ~10 s, and its real architectures' (ln_viz/hf_init_lab.py,
with transformers) into ln_viz/data/init_lab_hf_default.json. Run it after changing the model, its init,
the probes or the scenario (tests/test_init_lab.py measures again and says so when a file is stale).

    .venv/bin/python scripts/make_init_lab_default.py
"""

from __future__ import annotations

import time

from ln_viz import hf_init_lab
from ln_viz.init_lab import BUNDLED_DEFAULT, make_executor, write_bundled_default


def main() -> None:
    t0 = time.perf_counter()
    pool = make_executor(2)
    try:
        write_bundled_default(BUNDLED_DEFAULT, pool)
        written = [BUNDLED_DEFAULT]
        if not hf_init_lab.transformers_missing():
            hf_init_lab.write_bundled_default(hf_init_lab.BUNDLED_DEFAULT, pool)
            written.append(hf_init_lab.BUNDLED_DEFAULT)
    finally:
        pool.shutdown()
    for path in written:
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB)")
    print(f"in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
