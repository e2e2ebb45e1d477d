import math

import pytest

from ln_viz.config import PRESETS, ConfigError, RunConfig, estimate_memory_bytes, preset
from ln_viz.i18n import t

BAD_FIELDS = [
    (
        {"norm_position": "middle"},
        "norm_position",
        "must be one of post, pre, peri, deepnorm, none, mix, reordered",
    ),
    # OLMo 2's reordered norm has no norm in front of a sublayer for LayerNorm Scaling to scale
    ({"norm_position": "reordered", "ln_scaling": True}, "ln_scaling", "not norm_position reordered"),
    ({"adam_init": "ones"}, "adam_init", "must be one of zero, gi"),
    ({"optimizer": "sgd", "adam_init": "gi"}, "adam_init", "optimizer sgd does not have; choose optimizer adam"),
    ({"norm_type": "batchnorm"}, "norm_type", "must be one of layernorm, rmsnorm"),
    ({"depth": 0}, "depth", "between 1 and 48"),
    ({"depth": -3}, "depth", "between 1 and 48"),
    ({"depth": 49}, "depth", "between 1 and 48"),
    ({"depth": 2.5}, "depth", "whole number"),
    ({"d_model": 65, "heads": 4}, "d_model", "divisible by heads (4); try d_model=64"),
    ({"heads": 0}, "heads", "between 1 and 64"),
    ({"d_ff": 0}, "d_ff", "between 1 and 16384"),
    ({"seq_len": 1}, "seq_len", "between 2 and 4096"),
    ({"batch_size": 0}, "batch_size", "between 1 and 4096"),
    ({"optimizer": "lion"}, "optimizer", "must be one of adam, sgd"),
    ({"lr": 0.0}, "lr", "greater than 0"),
    ({"lr": -1e-3}, "lr", "greater than 0"),
    ({"lr": math.nan}, "lr", "finite"),
    ({"lr": math.inf}, "lr", "finite"),
    ({"lr": 11.0}, "lr", "at most 10"),
    ({"lr": "fast"}, "lr", "must be a number"),
    ({"steps": 0}, "steps", "between 1 and 100000"),
    ({"warmup_steps": -1}, "warmup_steps", "between 0 and"),
    ({"warmup_steps": 500, "steps": 100}, "warmup_steps", "longer than the run"),
    ({"schedule": "step"}, "schedule", "constant, inverse_sqrt, cosine"),
    ({"seed": -1}, "seed", "between 0 and"),
    ({"corpus": "wikipedia"}, "corpus", "english, markov, user"),
    ({"corpus": "user"}, "user_text", "needs user_text"),
    ({"probe_every": -1}, "probe_every", "between 0 and"),
    ({"eval_every": -5}, "eval_every", "between 0 and"),
    ({"device": "tpu"}, "device", "cpu, cuda"),
    ({"batch_size": 4096, "seq_len": 4096}, "batch_size", "of memory to train"),
]


@pytest.mark.parametrize(
    "changes,field,text",
    BAD_FIELDS,
    ids=[f[1] + ":" + str(list(f[0].values())) for f in BAD_FIELDS],
)
def test_each_bad_field_names_itself_and_says_what_to_change(changes, field, text):
    with pytest.raises(ConfigError) as e:
        RunConfig(**changes).validate()
    assert e.value.field == field
    assert text in str(e.value)
    assert str(e.value).count("\n") == 0
    assert e.value.message("ko") != str(e.value)  # the same error reads in Korean too


def test_defaults_and_every_preset_are_valid():
    RunConfig().validate()
    for name, p in PRESETS.items():
        assert preset(name).validate() is p.config
        assert t(p.expect_key, "en") and t(p.expect_key, "ko")


def test_unknown_preset_lists_the_choices():
    with pytest.raises(ConfigError, match="post-ln-no-warmup"):
        preset("fastest")


def test_memory_estimate_grows_with_batch_and_sequence():
    small = estimate_memory_bytes(RunConfig())
    assert estimate_memory_bytes(RunConfig(batch_size=64)) > small
    assert estimate_memory_bytes(RunConfig(seq_len=256)) > 2 * small


def test_adam_init_is_left_out_of_the_dict_at_its_default_so_stored_fingerprints_stay():
    assert "adam_init" not in RunConfig().to_dict()
    gi = RunConfig(adam_init="gi")
    assert gi.to_dict()["adam_init"] == "gi" and RunConfig.from_dict(gi.to_dict()) == gi


def test_round_trip_through_dict_keeps_every_field():
    cfg = RunConfig(norm_position="peri", depth=3, lr=1e-3, schedule="cosine", warmup_steps=7)
    assert RunConfig.from_dict(cfg.to_dict() | {"unknown": 1}) == cfg
