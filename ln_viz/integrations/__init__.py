"""Thin adapters of ln_viz.attach for training frameworks: `hf` (the Hugging Face Trainer) and `lightning`.
Each imports its framework only when used; neither is needed by the app."""
