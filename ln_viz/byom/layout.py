"""Where a model's blocks are, how to feed it one tiny batch, which wrappers ln-viz refuses, and how a norm
is known by its data (its output rows are its input rows normalised)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from ln_viz.text import shown

_CLOSE = {"atol": 1e-5, "rtol": 1e-4}


class LayoutError(ValueError):
    """A model whose blocks cannot be found (one sentence naming the candidates and the `layout=` fix), or whose
    forward fails on the example describe gives it (one sentence with the `example=` fix)."""


# --- blocks ---------------------------------------------------------------------------------------------
def find_blocks(model: nn.Module, layout: str | None = None) -> tuple[str, nn.ModuleList, str, tuple[str, ...]]:
    """(path, block list, how it was found, other block lists)."""
    if layout is not None:
        try:
            blocks = model.get_submodule(layout)
        except AttributeError:
            raise LayoutError(f"layout={layout!r} names no submodule of {type(model).__name__}.") from None
        if not isinstance(blocks, (nn.ModuleList, nn.Sequential)) or len(blocks) == 0:
            raise LayoutError(f"layout={layout!r} is a {type(blocks).__name__}, not a list of blocks.")
        return layout, blocks, "layout", ()
    lists = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.ModuleList) and len(m) > 0]
    no_split = set(getattr(model, "_no_split_modules", None) or ())
    hf = [(n, m) for n, m in lists if type(m[0]).__name__ in no_split]
    if hf:
        return hf[0][0], hf[0][1], "_no_split_modules", tuple(n for n, _ in hf[1:])
    same = [
        (n, m)
        for n, m in lists
        if len({type(c) for c in m}) == 1 and any(_named_norm(c) for c in m[0].modules()) and _has_matrix(m[0])
    ]
    if same:
        same.sort(key=lambda nm: -len(nm[1]))
        return same[0][0], same[0][1], "largest ModuleList", tuple(n for n, _ in same[1:])
    candidates = ", ".join(f"{n or '(root)'} ({len(m)} x {type(m[0]).__name__})" for n, m in lists[:8]) or "none"
    raise LayoutError(
        f"ln-viz found no list of transformer blocks in {type(model).__name__} (candidate lists: {candidates}); "
        "pass layout='<dotted path of the block list>'."
    )


def _named_norm(m: nn.Module) -> bool:
    return isinstance(m, (nn.LayerNorm, nn.RMSNorm, nn.GroupNorm)) or "norm" in type(m).__name__.lower()


def _has_matrix(m: nn.Module) -> bool:
    return any(p.ndim >= 2 for p in m.parameters())


def example_input(model: nn.Module, batch: int = 2, seq: int = 8) -> dict[str, torch.Tensor] | torch.Tensor:
    """Token ids a model can take, from a private generator (the global random state stays as it was):
    keyword `input_ids` for a Hugging Face model (and `decoder_input_ids` for an encoder-decoder), else a
    positional tensor within the first embedding's vocabulary."""
    gen = torch.Generator().manual_seed(0)
    device = next(model.parameters()).device
    config = getattr(model, "config", None)
    vocab = getattr(config, "vocab_size", None)
    if vocab is None:
        emb = next((m for m in model.modules() if isinstance(m, nn.Embedding)), None)
        if emb is None:
            raise LayoutError(f"{type(model).__name__} has no token embedding: pass example=<an input batch>.")
        vocab = emb.num_embeddings
    ids = torch.randint(0, min(int(vocab), 64), (batch, seq), generator=gen).to(device)
    if config is None:
        return ids
    inputs = {"input_ids": ids}
    if getattr(config, "is_encoder_decoder", False):
        inputs["decoder_input_ids"] = ids
    return inputs


def call_model(model: nn.Module, example: Any) -> Any:
    if isinstance(example, Mapping):  # a dict, or a tokenizer's BatchEncoding (a UserDict)
        return model(**example)
    if isinstance(example, (tuple, list)):
        return model(*example)
    return model(example)


def example_words(example: Any) -> str:
    """What `example` holds, in words: "input_ids (2, 8)", "a tensor (2, 5), a tensor (2, 5)"."""
    if isinstance(example, Mapping):
        return ", ".join(f"{k} {_shape_words(v)}" for k, v in example.items()) or "no inputs"
    if isinstance(example, (tuple, list)):
        return ", ".join(f"a {_shape_words(v)}" for v in example) or "no inputs"
    return f"a {_shape_words(example)}"


def error_words(e: BaseException) -> str:
    """An exception in one line: "TypeError: its message" (cut short, without a closing full stop)."""
    try:
        text = shown(str(e), 200).rstrip(". ")
    except Exception:  # noqa: BLE001 -- a __str__ that raises: the type alone
        text = ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _shape_words(value: Any) -> str:
    return f"tensor {tuple(value.shape)}" if isinstance(value, torch.Tensor) else type(value).__name__


def first_tensor(x: Any) -> torch.Tensor | None:
    """The first tensor of a module's output (HF blocks return tuples; some return a ModelOutput)."""
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (tuple, list)) and x:
        return first_tensor(x[0])
    if isinstance(x, dict) and x:
        return first_tensor(next(iter(x.values())))
    return None


def block_input(args: tuple, kwargs: dict) -> torch.Tensor | None:
    """The hidden states a block receives: its first positional tensor, else `hidden_states=`."""
    if args and isinstance(args[0], torch.Tensor):
        return args[0]
    x = kwargs.get("hidden_states")
    return x if isinstance(x, torch.Tensor) else None


# --- wrappers -------------------------------------------------------------------------------------------
class UnsupportedModel(ValueError):
    """A model ln-viz cannot attach to yet: one sentence."""


def unwrap(model: nn.Module) -> nn.Module:
    """The module to probe: DistributedDataParallel's `.module`, `torch.compile(model)`'s original module
    (probed by an eager shadow forward on probe steps: see `compiled_wrapper`); FSDP, DeepSpeed and
    `model.compile()` refused."""
    if is_compiled(model):
        return unwrap(model._orig_mod)
    names = {type(m).__name__ for m in (model, *model.modules())} if isinstance(model, nn.Module) else set()
    if names & {"FullyShardedDataParallel", "FSDPModule", "DeepSpeedEngine", "PipelineEngine"} or any(
        n.startswith("FSDP") for n in names
    ):
        raise UnsupportedModel(
            "ln-viz does not probe FSDP- or DeepSpeed-sharded models yet: attach to a single-process model."
        )
    if any(getattr(m, "_compiled_call_impl", None) is not None for m in model.modules()):
        raise UnsupportedModel(
            "ln-viz probes a model compiled as `compiled = torch.compile(model)`, not by `module.compile()`: "
            "compile the whole model that way and attach to `compiled`."
        )
    if type(model).__name__ in ("DistributedDataParallel", "DataParallel"):
        return model.module
    return model


def is_compiled(model: Any) -> bool:
    """`model` is torch.compile's wrapper (an OptimizedModule): its forward hooks run eagerly, its original
    module's run inside the compiled graph (traced once, and hooks added later are not seen)."""
    return isinstance(model, nn.Module) and isinstance(getattr(model, "_orig_mod", None), nn.Module)


# --- norms, by their data -------------------------------------------------------------------------------
def _rows(t: torch.Tensor, d: int) -> torch.Tensor:
    return t.reshape(-1, d).double()


def _norm_kind(module: nn.Module, inp: torch.Tensor, out: torch.Tensor) -> str | None:
    """layernorm / rmsnorm when the output rows are the input rows normalised (up to a per-channel weight
    and bias), "other" for a module named like a norm that is neither, None for a module that is no norm."""
    named = _named_norm(module)
    if inp.shape != out.shape or inp.ndim < 2 or _has_matrix(module):
        return "other" if named and not _has_matrix(module) else None
    d = inp.shape[-1]
    x, y = _rows(inp, d), _rows(out, d)
    live = x.pow(2).mean(-1) > 1e-12  # a padding token's zero embedding normalises to nothing
    x, y = x[live], y[live]
    if len(x) == 0:
        return "other" if named else None
    if torch.allclose(x, y):  # an identity, a dropout in eval mode
        return "other" if named else None
    vectors = [p.detach().double().reshape(-1) for p in module.parameters(recurse=False) if p.numel() == d]
    weights = [None] + [w for v in vectors[:1] for w in (v, 1 + v)]
    biases = [None] + vectors[1:2]
    centred = x - x.mean(-1, keepdim=True)
    eps = _eps(module)
    refs = []
    for kind, v in (("layernorm", centred), ("rmsnorm", x)):
        ms = v.pow(2).mean(-1, keepdim=True)
        # the norm divides by sqrt(ms + eps): where ms is not much above its eps (OLMo 2's tiny activations at
        # init, eps 1e-6), the output rows are shorter than unit RMS by sqrt(ms / (ms + eps))
        refs.append((kind, v / ms.sqrt().clamp_min(1e-12), (ms / (ms + eps)).sqrt().squeeze(-1)))
    for w, b in itertools.product(weights, biases):
        z = y - b if b is not None else y
        if w is not None:
            if w.abs().min() < 1e-6:
                continue
            z = z / w
        for kind, ref, shrink in refs:
            cos = F.cosine_similarity(z, ref, dim=-1)
            scale = z.pow(2).mean(-1).sqrt() / ref.pow(2).mean(-1).sqrt().clamp_min(1e-12)
            if bool((cos > 0.9999).all()) and bool(((scale / shrink - 1).abs() < 0.1).all()):
                return kind
    return "other" if named else None


def _eps(module: nn.Module) -> float:
    """The epsilon a norm adds to its mean square (`eps`, HF's `variance_epsilon`), 0 where it names none."""
    for attr in ("eps", "variance_epsilon", "epsilon"):
        value = getattr(module, attr, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1:
            return float(value)
    return 0.0


def _close(a: torch.Tensor | None, b: torch.Tensor | None, d: int) -> bool:
    if a is None or b is None or a.numel() != b.numel() or a.shape[-1] != b.shape[-1] or a.shape[-1] != d:
        return False
    return torch.allclose(_rows(a, d), _rows(b, d), **_CLOSE)


def _inside(name: str, parent: str) -> bool:
    return parent != "" and (name == parent or name.startswith(parent + "."))


def _output_sum(x: torch.Tensor, y: torch.Tensor, outs: dict[str, torch.Tensor], d: int) -> tuple[str, ...]:
    """The norms whose outputs, added to the block input, make the block output (up to 4 tried)."""
    names = list(outs)[:6]
    for r in range(1, min(4, len(names)) + 1):
        for subset in itertools.combinations(names, r):
            total = _rows(x, d) + sum(_rows(outs[n], d) for n in subset)
            if torch.allclose(total, _rows(y, d), **_CLOSE):
                return subset
    return ()


def _feeds_matrix(block: nn.Module, inputs: dict[str, torch.Tensor], y: torch.Tensor) -> str | None:
    """The module of the block, one with a weight matrix of its own, that read `y` as its input, as it is or
    reshaped (`inputs`: each module's); None when none did."""
    mats = [n for n, m in block.named_modules() if any(p.ndim >= 2 for p in m.parameters(recurse=False))]
    flat = y.reshape(-1, 1)
    return next((n for n in mats if n in inputs and _scaled(inputs[n].reshape(-1, 1), flat)), None)


def _scaled(a: torch.Tensor, y: torch.Tensor) -> bool:
    """a is y, or y times one number (DiffLlama's group norm, scaled by 1 - lambda_init before its output
    projection reads it); both (n, 1)."""
    if a.numel() != y.numel():
        return False
    if _close(a, y, 1):
        return True
    yy = float(y.double().square().sum())
    c = float((a.double() * y.double()).sum()) / yy if yy > 0 else 0.0
    return c != 0.0 and math.isfinite(c) and torch.allclose(a.double(), y.double() * c, **_CLOSE)


SOFTMAX = (torch.softmax, F.softmax, torch.Tensor.softmax)  # the softmax a hand-written attention calls, each spelling


def _scores_like(x: torch.Tensor) -> bool:
    """(batch, heads, query, key) scores, or XGLM's (batch * heads, query, key) over a square self-attention."""
    return x.ndim == 4 or (x.ndim == 3 and x.shape[-1] == x.shape[-2] > 1)
