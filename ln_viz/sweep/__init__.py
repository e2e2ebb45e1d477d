"""Sweeps: grids of runs (norm position x lr x warm-up x depth x seeds) and the stability map.

    spec.py        SweepConfig (validated, capped at 512 runs), its cells, the work estimate, the URL form
    presets.py     the warm-up map and the depth slice
    executors.py   the one interface; local.py (this machine's cores), ray_exec.py (a Ray cluster)
    chooser.py     make_executor: an executor by name (above the interface and the executors)
    driver.py      SweepRun: resume, progress and ETA, results stored as cells finish
    results.py     per-cell status and losses, LR sensitivity per curve (Wortsman et al. 2023)
    storage.py     the sweep tables in the run store's SQLite file; CSV / Parquet export
    charts.py      the map's Plotly figures (pure)
    cli.py         `python -m ln_viz sweep`

Kept light on purpose: `ln_viz.cli` imports `ln_viz.sweep.cli` at start, so nothing is imported here.
"""
