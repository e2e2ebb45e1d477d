from ln_viz.config import RunConfig, preset
from ln_viz.urlstate import config_from_query, config_to_query, lang_from_query, present_from_query, unknown_params


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


def test_issue_33s_settings_survive_the_url_and_a_bad_one_is_named():
    cfg = RunConfig(norm_position="reordered", qk_norm="rmsnorm", adam_init="gi")
    query = config_to_query(cfg)
    assert query["norm"] == "reordered" and query["adaminit"] == "gi"
    back, notices = config_from_query(query, RunConfig())
    assert notices == [] and back == cfg
    back, notices = config_from_query({"opt": "sgd", "adaminit": "gi"}, RunConfig())  # the blamed field goes back
    assert back == RunConfig(optimizer="sgd") and [n.param for n in notices] == ["adaminit"]
    assert "choose optimizer adam or adam_init zero" in str(notices[0].reason)


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


def test_a_link_asking_for_the_users_own_text_names_its_corpus_parameter():
    """Issue 21 M9: `?corpus=user` was "Ignored 'user_text=None' from the link", a parameter it does not have."""
    base = RunConfig()
    back, notices = config_from_query({"corpus": "user", "seed": "4"}, base)
    assert back == base.replace(seed=4)
    assert [(n.param, n.value) for n in notices] == [("corpus", "user")]
    assert notices[0].message("en") == (
        "Ignored 'corpus=user' from the link: a link cannot carry your own text: choose 'Your text' as the "
        "corpus on the page and give the text there. The default is kept."
    )
    assert notices[0].message("ko").startswith("링크의 'corpus=user'은(는) 무시했습니다")
    mine = RunConfig(corpus="user", user_text="abcdefgh" * 100)  # a session that has its text: nothing to ignore
    assert config_from_query({"corpus": "user"}, mine) == (mine, [])


def test_a_link_with_several_bad_combinations_reports_each():
    base = RunConfig()
    back, notices = config_from_query({"d": "65", "heads": "4", "warmup": "5000", "seed": "9"}, base)
    assert [n.param for n in notices] == ["d", "warmup"]
    assert "divisible" in str(notices[0].reason) and "longer than the run" in str(notices[1].reason)
    assert back == base.replace(seed=9)  # what was fine is kept


def test_unknown_link_parameters_get_a_notice_each():
    params = {"detph": "3", "a.dpeth": "2", "depth": "3", "a.depth": "2", "lang": "en", "present": "1", "cpreset": "x"}
    notices = unknown_params(params)
    assert [(n.param, n.value) for n in notices] == [("detph", "3"), ("a.dpeth", "2")]
    assert notices[0].message("en") == "Ignored 'detph=3' from the link: ln-viz has no such link parameter."
    assert "detph=3" in notices[0].message("ko")


def test_a_bad_lang_or_present_in_a_link_gets_a_notice():
    assert lang_from_query("ko") == ("ko", None) and lang_from_query(None) == ("en", None)
    lang, notice = lang_from_query("xx")
    assert lang == "en" and notice.message("en") == (
        "Ignored 'lang=xx' from the link: lang must be one of en, ko, got 'xx'. The default is kept."
    )
    assert present_from_query("1") == (True, None) and present_from_query("no") == (False, None)
    assert present_from_query(None) == (None, None)
    on, notice = present_from_query("2")
    assert on is False and notice.param == "present" and "got '2'" in notice.message("en")
