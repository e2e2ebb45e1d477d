"""Old name of ln_viz.grads_at_init (kept so that imports made before the rename keep working)."""

from ln_viz.grads_at_init import GRAD_COLUMNS, init_grads

__all__ = ["GRAD_COLUMNS", "init_grads"]
