import os
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

from ln_viz.corpus import (
    MAX_USER_CHARS,
    Batches,
    CorpusError,
    english,
    markov,
    markov_entropy,
    markov_transitions,
    min_user_chars,
    read_user_file,
    user_text_corpus,
)


def test_english_is_shipped_split_and_round_trips():
    c = english()
    assert len(c.train_ids) > 30_000 and len(c.val_ids) > 3_000
    assert c.decode(c.encode("the river")) == "the river"
    assert 2.5 < c.unigram_entropy < np.log(c.vocab_size)
    assert c.floor(64) is None  # no exact entropy for natural text


def test_markov_entropy_rate_matches_the_sample_it_generates():
    c = markov()
    rate, h1, h2 = markov_entropy(markov_transitions())
    assert c.entropy_rate == rate
    assert rate < h2 < h1  # more context, less surprise
    # empirical conditional entropy of the sample, from counts of triples: agrees to 0.01 nats
    ids = c.train_ids
    k = c.vocab_size
    tri = np.zeros((k, k, k))
    np.add.at(tri, (ids[:-2], ids[1:-1], ids[2:]), 1)
    pair = tri.sum(axis=2, keepdims=True)
    p = tri / np.maximum(pair, 1)
    emp = -(tri * np.log(np.where(p > 0, p, 1))).sum() / tri.sum()
    assert abs(emp - rate) < 0.01
    # the floor of a window lies between the entropy rate and the unigram entropy
    assert rate < c.floor(64) < c.floor(8) < h1
    assert c.floor(10_000) == pytest.approx(rate, abs=1e-3)


def test_same_seed_same_batches_other_seed_other_batches():
    ids = english().train_ids
    a, b, c = (Batches(ids, 4, 16, s) for s in (0, 0, 1))
    for _ in range(3):
        xa, ya = a.next()
        xb, yb = b.next()
        xc, _ = c.next()
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
        assert not torch.equal(xa, xc)
        assert torch.equal(xa[:, 1:], ya[:, :-1])  # targets are the next characters


def test_user_text_is_tokenized_and_split():
    text = "하늘과 바람과 별과 시. " * 100
    c = user_text_corpus(text.encode("utf-8"), seq_len=32)
    assert c.vocab_size == len(set(text))
    assert c.decode(np.concatenate([c.train_ids, c.val_ids])) == text


@pytest.mark.parametrize(
    "text,match",
    [
        ("", "empty"),
        ("   \n ", "empty"),
        (b"\xff\xfe\x00bad", "not UTF-8"),
        ("abc\x00def" * 200, "binary"),
        ("short text", "needs at least"),
        ("x" * (MAX_USER_CHARS + 1), "above the limit"),
    ],
    ids=["empty", "blank", "not-utf8", "binary", "too-short", "too-large"],
)
def test_bad_user_text_is_refused_with_one_sentence(text, match):
    with pytest.raises(CorpusError, match=match) as e:
        user_text_corpus(text, seq_len=64)
    assert "\n" not in str(e.value)


def test_too_short_says_how_much_is_needed():
    need = min_user_chars(64)
    with pytest.raises(CorpusError, match=str(need)):
        user_text_corpus("a" * (need - 1), 64)
    assert user_text_corpus("ab" * need, 64).vocab_size == 2


def test_user_files_missing_or_huge_are_refused_before_reading(tmp_path):
    with pytest.raises(CorpusError, match="does not exist"):
        read_user_file(tmp_path / "nope.txt")
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(9 * 1024 * 1024)
    with pytest.raises(CorpusError, match="above the limit"):
        read_user_file(big)


def test_a_directory_fifo_or_device_as_text_file_says_what_it_is(tmp_path):
    with pytest.raises(CorpusError, match="is a directory, not a text file"):
        read_user_file(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result: list[BaseException] = []
    reader = threading.Thread(target=lambda: result.append(_refusal(fifo)), daemon=True)
    reader.start()
    reader.join(5)  # opening a FIFO with no writer would block for ever: it must not be opened
    assert not reader.is_alive() and "is not a regular file" in str(result[0])
    with pytest.raises(CorpusError, match="is not a regular file"):
        read_user_file("/dev/zero")  # reading it would never end


def _refusal(path) -> BaseException:
    try:
        read_user_file(path)
    except CorpusError as e:
        return e
    raise AssertionError(f"{path} was read")


def test_an_unreadable_text_file_is_one_sentence_with_the_cause(tmp_path, monkeypatch):
    with pytest.raises(CorpusError, match=r"cannot read /proc/self/mem \(Input/output error\)"):
        read_user_file("/proc/self/mem")  # a regular file whose read fails: a real one, even for root
    f = tmp_path / "secret.txt"
    f.write_text("x" * 1000)

    def refuse(self, *args, **kwargs):  # what open() says for a file of another user (root may read all)
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(CorpusError, match=r"cannot read .*secret.txt \(Permission denied\)"):
        read_user_file(f)
