"""Corpora made by the project (nothing is downloaded), a character tokenizer, and seeded batches.

- `english`: a small English text written for ln-viz (`ln_viz/data/english.txt`), last ~10 % held out.
- `markov`: a synthetic language from a stated order-2 Markov chain whose entropy rate is known
  exactly, so a loss chart can draw the floor no model can beat.
- `user`: any UTF-8 text (a string or a file) within size limits.
"""

from __future__ import annotations

import functools
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ln_viz.i18n import LocalizedError

DATA_DIR = Path(__file__).parent / "data"
MAX_USER_CHARS = 2_000_000
MAX_USER_FILE_BYTES = 8 * 1024 * 1024
MAX_VOCAB = 4096
HELD_OUT_FRACTION = 0.1


class CorpusError(LocalizedError):
    """A text the user gave cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class Corpus:
    """A tokenized text split into train and held-out parts."""

    name: str
    vocab: tuple[str, ...]  # index -> character
    train_ids: np.ndarray  # int64 token ids
    val_ids: np.ndarray
    entropy_rate: float | None = None  # nats per character, when the source is known exactly
    first_order: tuple[float, float] | None = None  # (H(X1), H(X2|X1)) of the source, nats

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    @functools.cached_property
    def unigram_entropy(self) -> float:
        """Cross-entropy (nats/char) of the best context-free prediction: the train split's character
        frequencies. A model stuck here has learnt nothing but how often each character occurs."""
        counts = np.bincount(self.train_ids, minlength=self.vocab_size).astype(np.float64)
        p = counts[counts > 0] / counts.sum()
        return float(-(p * np.log(p)).sum())

    def floor(self, seq_len: int) -> float | None:
        """The lowest mean loss per token any model can reach on windows of `seq_len` characters, in
        nats: the first position sees no context, the second one character, the rest the full order-2
        context. None when the source's entropy is not known."""
        if self.entropy_rate is None or self.first_order is None:
            return None
        h1, h2 = self.first_order
        if seq_len == 1:
            return h1
        return (h1 + h2 + (seq_len - 2) * self.entropy_rate) / seq_len

    def encode(self, text: str) -> np.ndarray:
        index = {c: i for i, c in enumerate(self.vocab)}
        return np.array([index[c] for c in text], dtype=np.int64)

    def decode(self, ids: np.ndarray) -> str:
        return "".join(self.vocab[int(i)] for i in ids)


def _from_text(name: str, text: str, entropy_rate: float | None = None, first_order=None) -> Corpus:
    vocab = tuple(sorted(set(text)))
    index = {c: i for i, c in enumerate(vocab)}
    ids = np.fromiter((index[c] for c in text), dtype=np.int64, count=len(text))
    n_val = max(len(ids) // round(1 / HELD_OUT_FRACTION), 1)
    return Corpus(name, vocab, ids[:-n_val], ids[-n_val:], entropy_rate, first_order)


@functools.cache
def english() -> Corpus:
    """The project's English text; the held-out part is its last tenth."""
    text = (DATA_DIR / "english.txt").read_text(encoding="utf-8")
    return _from_text("english", text)


# --- the synthetic language ----------------------------------------------------------------------
MARKOV_ALPHABET = "abcdefghij "  # 10 letters and a space
MARKOV_SEED = 2020  # numpy default_rng seed of the transition table
MARKOV_CONCENTRATION = 0.3  # Dirichlet concentration: small = peaked, predictable transitions
MARKOV_TRAIN_CHARS = 200_000
MARKOV_VAL_CHARS = 20_000


def markov_transitions() -> np.ndarray:
    """The stated source: P[a, b, c] = P(next = c | previous two = a, b), drawn once from
    Dirichlet(0.3) with numpy's default_rng(2020), one row per (a, b) pair."""
    k = len(MARKOV_ALPHABET)
    rng = np.random.default_rng(MARKOV_SEED)
    return rng.dirichlet(np.full(k, MARKOV_CONCENTRATION), size=(k, k))


def stationary_pairs(P: np.ndarray) -> np.ndarray:
    """pi[a, b] = P(X_t = a, X_{t+1} = b) under the chain's stationary distribution: the leading
    eigenvector of the pair-transition matrix."""
    k = P.shape[0]
    T = np.zeros((k * k, k * k))
    for a in range(k):
        for b in range(k):
            T[a * k + b, b * k : (b + 1) * k] = P[a, b]
    vals, vecs = np.linalg.eig(T.T)
    pi = np.abs(np.real(vecs[:, np.argmin(np.abs(vals - 1))]))
    return (pi / pi.sum()).reshape(k, k)


def markov_entropy(P: np.ndarray) -> tuple[float, float, float]:
    """Exact (to float64) entropy figures of an order-2 chain in nats: (entropy rate, H(X1), H(X2|X1))."""
    pi = stationary_pairs(P)
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(P > 0, np.log(P), 0.0)
    rate = float(-(pi[:, :, None] * P * logs).sum())
    p1 = pi.sum(axis=1)
    h1 = float(-(p1 * np.log(p1)).sum())
    cond = pi / p1[:, None]
    h2 = float(-(pi * np.log(np.where(cond > 0, cond, 1.0))).sum())
    return rate, h1, h2


def _sample_markov(P: np.ndarray, pi: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    k = P.shape[0]
    out = np.empty(n, dtype=np.int64)
    first = rng.choice(k * k, p=pi.ravel())
    out[0], out[1] = divmod(first, k)
    cdf = np.cumsum(P, axis=2)
    u = rng.random(n)
    for t in range(2, n):
        out[t] = min(np.searchsorted(cdf[out[t - 2], out[t - 1]], u[t]), k - 1)
    return out


@functools.cache
def markov() -> Corpus:
    """Text sampled from the stated chain (train and held-out are independent samples)."""
    P = markov_transitions()
    rate, h1, h2 = markov_entropy(P)
    pi = stationary_pairs(P)  # a stationary start
    rng = np.random.default_rng(MARKOV_SEED + 1)
    train = _sample_markov(P, pi, MARKOV_TRAIN_CHARS, rng)
    val = _sample_markov(P, pi, MARKOV_VAL_CHARS, rng)
    return Corpus("markov", tuple(MARKOV_ALPHABET), train, val, rate, (h1, h2))


# --- user text -----------------------------------------------------------------------------------
def min_user_chars(seq_len: int) -> int:
    """The held-out tenth must hold one window of seq_len + 1 characters."""
    return (seq_len + 1) * round(1 / HELD_OUT_FRACTION)


def decode_text(raw: bytes) -> str:
    """UTF-8 bytes to text; CorpusError naming the first bad byte otherwise."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CorpusError("err.text_not_utf8", "user_text", pos=e.start) from None


def user_text_corpus(text: str | bytes, seq_len: int) -> Corpus:
    """A corpus from text the user gave; CorpusError with one clear sentence when it cannot be used."""
    if isinstance(text, bytes):
        text = decode_text(text)
    need = min_user_chars(seq_len)
    if not text or not text.strip():
        raise CorpusError("err.text_empty", "user_text", need=need)
    control = sum(1 for c in text if (ord(c) < 32 and c not in "\n\r\t") or c == "\x7f")
    if "\x00" in text or control > max(2, len(text) // 100):
        raise CorpusError("err.text_binary", "user_text", count=control)
    if len(text) > MAX_USER_CHARS:
        raise CorpusError("err.text_too_large", "user_text", have=len(text), limit=MAX_USER_CHARS)
    if len(text) < need:
        raise CorpusError("err.text_too_short", "user_text", have=len(text), seq=seq_len, need=need)
    n_vocab = len(set(text))
    if n_vocab > MAX_VOCAB:
        raise CorpusError("err.text_vocab", "user_text", have=n_vocab, limit=MAX_VOCAB)
    return _from_text("user", text)


# the sentence of each way a user's text file can be refused (read_regular_file's problems)
_USER_FILE_KEYS = {
    "missing": "err.file_missing",
    "is_dir": "err.file_is_dir",
    "not_regular": "err.file_not_regular",
    "unreadable": "err.file_unreadable",
    "too_large": "err.file_too_large",
}


def read_user_file(path: str | Path) -> bytes:
    """The bytes of a user's text file (at most MAX_USER_FILE_BYTES), each refusal a CorpusError of the
    user text (`read_regular_file`)."""
    return read_regular_file(
        path,
        MAX_USER_FILE_BYTES,
        lambda problem, **params: CorpusError(_USER_FILE_KEYS[problem], "user_text", **params),
    )


def read_regular_file(path: str | Path, limit: int, fail: Callable[..., LocalizedError]) -> bytes:
    """The bytes of a file a user named (a text file, a run file). Refuses, each with its own sentence, a
    missing path, a directory, anything but a regular file (a FIFO or a device is never opened: reading one
    could block or never end), a file over `limit` bytes and one that cannot be read, before reading more
    than the limit. `fail(problem, path=..., ...)` makes the error: problem is "missing", "is_dir",
    "not_regular", "unreadable" (with `reason`) or "too_large" (with `have`, `limit`)."""
    p = Path(path)
    try:
        info = p.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise fail("missing", path=str(p)) from None
    except OSError as e:
        raise fail("unreadable", path=str(p), reason=e.strerror or str(e)) from None
    if stat.S_ISDIR(info.st_mode):
        raise fail("is_dir", path=str(p))
    if not stat.S_ISREG(info.st_mode):
        raise fail("not_regular", path=str(p))
    if info.st_size > limit:
        raise fail("too_large", path=str(p), have=info.st_size, limit=limit)
    try:
        with p.open("rb") as f:
            raw = f.read(limit + 1)  # a file that grew since stat() is still cut off here
    except OSError as e:
        raise fail("unreadable", path=str(p), reason=e.strerror or str(e)) from None
    if len(raw) > limit:
        raise fail("too_large", path=str(p), have=len(raw), limit=limit)
    return raw


def load_corpus(name: str, user_text: str | bytes | None = None, seq_len: int = 64) -> Corpus:
    if name == "english":
        return english()
    if name == "markov":
        return markov()
    if name == "user":
        return user_text_corpus(user_text or "", seq_len)
    raise ValueError(f"unknown corpus {name!r}")


# --- batches -------------------------------------------------------------------------------------
class Batches:
    """Random windows of seq_len + 1 characters; the same seed gives the same batches."""

    def __init__(
        self,
        ids: np.ndarray,
        batch_size: int,
        seq_len: int,
        seed: int,
        device: str = "cpu",
    ):
        if len(ids) < seq_len + 1:
            raise ValueError(f"corpus part of {len(ids)} tokens is shorter than seq_len + 1 = {seq_len + 1}")
        import torch  # here, not at the top: the server reads corpora without loading torch

        self.data = torch.from_numpy(ids)
        self.batch_size, self.seq_len, self.device = batch_size, seq_len, device
        self.gen = torch.Generator().manual_seed(seed)
        self._offsets = torch.arange(seq_len + 1)

    def next(self) -> tuple:
        import torch

        starts = torch.randint(0, len(self.data) - self.seq_len, (self.batch_size,), generator=self.gen)
        win = self.data[starts[:, None] + self._offsets]  # (B, T+1)
        return win[:, :-1].to(self.device), win[:, 1:].to(self.device)


def eval_windows(ids: np.ndarray, seq_len: int, max_windows: int = 128) -> tuple:
    """Fixed, evenly spaced held-out windows: every run's held-out loss is measured on the same text."""
    n = len(ids) - seq_len - 1
    count = max(1, min(max_windows, n // max(seq_len, 1) + 1))
    starts = np.linspace(0, max(n, 0), count).astype(np.int64)
    import torch

    win = torch.from_numpy(np.stack([ids[s : s + seq_len + 1] for s in starts]))
    return win[:, :-1], win[:, 1:]
