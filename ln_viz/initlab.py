"""Old name of ln_viz.init_lab (kept so that imports made before the rename keep working)."""

from ln_viz.init_lab import (
    BUNDLE_FORMAT,
    BUNDLED_DEFAULT,
    DEFAULT_SCENARIO,
    InitLab,
    bundled_default,
    default_config,
    init_lab,
    is_default,
    lab_from_dict,
    lab_to_dict,
    make_executor,
    measure_default,
    warm_up,
    write_bundled_default,
)

__all__ = [
    "BUNDLE_FORMAT",
    "BUNDLED_DEFAULT",
    "DEFAULT_SCENARIO",
    "InitLab",
    "bundled_default",
    "default_config",
    "init_lab",
    "is_default",
    "lab_from_dict",
    "lab_to_dict",
    "make_executor",
    "measure_default",
    "warm_up",
    "write_bundled_default",
]
