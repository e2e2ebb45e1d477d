"""ln-viz: see why LayerNorm placement decides whether a deep transformer trains.

A library first; the Streamlit app (app.py, pages/) and the CLI (`python -m ln_viz`) are thin users of it.
One direction of flow, lowest layer first (tests/test_architecture.py holds the layers and fails on an
import circle or an import of a higher layer; docs/code.md names every module):

    text, i18n, theory, runmeta   leaves: text shown back, the catalogs, the Theory page, run label/time rules,
    stats                         and the t interval of paired seeds and the debiased EMA (math only)
    config, schedule, lessons     RunConfig, FIELDS (one declaration per field), presets; the lr schedule;
                                  which chart tells a preset's or scenario's lesson
    schema, corpus                the vocabulary of a run's measurements; the corpora and tokenizer
    model, optim                  the tiny transformer and its norm placements; Adam/SGD written out
    summaries                     a tensor's fixed-edge histogram and stats; a probe step's, together
    probes, init_grads            what is measured inside the model; gradients at initialisation
    update_probes                 what an optimizer step does: update ratio, angular update, Adam's lag
    snapshot                      Snapshot (one step), RunData (a run)
    train                         the loop: schedule, optimizer, divergence and stall detection
    runner, init_lab              background training (typed messages, workers, handles); the Init lab
    runfile, tables               the run file (format, document, validation); tidy tables
    store, recorder               runs in SQLite; the server's single writer
    byom, integrations            your own model: describe/attach (ln_viz.describe, ln_viz.attach), and the
                                  adapters for the Hugging Face Trainer and Lightning
    hf_init_lab                   the Init lab on Hugging Face's own blocks: Figure 3 measured, its verdicts
    charts, words, export,        pure Plotly builders; settings in words; chart files; the lecture
    pack, video, video_frames,    pack; MP4 and GIF animations: which steps a video draws and how, and
    video_charts                  what one frame shows
    sweep                         the stability map: spec, executors, driver, results, storage, charts
    cli, urlstate, watchlink      where a configuration enters: command-line flags, a page's link, a
                                  run's watch link
    server                        what the app's server keeps: the Runner, the sweep slot, the store
    leftovers                     temporary folders named by their process; a dead process's swept
    views                         what the pages show, as data (the Runs page's table, a run view's frame)
    ui                            the only streamlit-aware code: widgets, session state, page views
"""

# The public API for a model ln-viz did not build (ln_viz.byom), loaded on first use so `import ln_viz`
# stays light (no torch). importlib, not an import statement: the package root sits in the lowest layer
# of tests/test_architecture.py, and this is a re-export, not a dependency of anything below.
_PUBLIC = {"describe": "ln_viz.byom", "attach": "ln_viz.byom", "ModelCard": "ln_viz.byom"}


def __getattr__(name: str):
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'ln_viz' has no attribute {name!r}")
