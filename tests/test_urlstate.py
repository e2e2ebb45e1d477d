from ln_viz.config import RunConfig, preset
from ln_viz.urlstate import config_from_query, config_to_query


def test_every_setting_survives_the_url():
    cfg = RunConfig(
        norm_position="deepnorm",
        norm_type="rmsnorm",
        depth=11,
        d_model=48,
        heads=3,
        d_ff=100,
        seq_len=40,
        batch_size=12,
        optimizer="sgd",
        lr=0.0123456,
        warmup_steps=33,
        schedule="cosine",
        steps=321,
        seed=7,
        corpus="markov",
        probe_every=4,
        eval_every=25,
    )
    query = config_to_query(cfg, prefix="a.")
    assert all(k.startswith("a.") and isinstance(v, str) for k, v in query.items())
    back, notices = config_from_query(query, RunConfig(), prefix="a.")
    assert notices == [] and back == cfg


def test_malformed_parameters_are_ignored_one_by_one_with_a_notice():
    base = preset("pre-ln-no-warmup")
    back, notices = config_from_query(
        {"depth": "abc", "lr": "nan", "norm": "middle", "warmup": "-5", "seed": "3", "steps": ["10", "20"]}, base
    )
    assert back == base.replace(seed=3, steps=20)
    assert sorted(n.param for n in notices) == ["depth", "lr", "norm", "warmup"]
    assert all(str(n.reason) and n.reason.message("ko") for n in notices)


def test_a_bad_combination_keeps_the_base_whole():
    base = RunConfig()
    back, notices = config_from_query({"d": "65", "heads": "4"}, base)
    assert back == base and len(notices) == 1 and "divisible" in str(notices[0].reason)


def test_user_text_is_not_put_in_the_url():
    q = config_to_query(RunConfig(corpus="user", user_text="secret" * 200))
    assert "corpus" not in q and not any("secret" in v for v in q.values())
