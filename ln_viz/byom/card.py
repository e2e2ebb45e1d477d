"""`describe(model)`: a model ln-viz did not build, read by following its data.

One tiny forward pass (no gradient, eval mode, its own random generator, so the user's random state and
numbers are untouched) with temporary hooks on the first block shows where the block's tensors go:

- a norm is a module whose output rows are its input rows normalised (LayerNorm: centred and scaled to
  unit std; RMSNorm: scaled to unit RMS), up to a per-channel weight and bias (HF's `1 + w` Gemma weight
  included); a module with "Norm" in its class name counts too (DyT and other norms that do not normalise);
- the attention module is the innermost module that calls `F.scaled_dot_product_attention`, else a softmax
  over a (batch, heads, query, key) tensor;
- placement, from where the norms sit on the residual path: a norm's output *is* the block's output ->
  `post`; a norm reads the block's input -> `pre`; block output = block input + the sum of some norms'
  outputs -> `reordered` (those norms only) or `peri` (with a norm on the input too); attention and FFN
  read the same input -> `parallel`; no norm -> `none`;
- QK-norm: a norm inside the attention module, off the residual path, whose output no matrix reads (OPT's
  flattened FFN norm and ALBERT's post-attention one are on the path; DeepSeek's MLA latent norms feed matrices);
  the roles and the placement are ln_viz.byom.roles';
- a hybrid whose first block has no attention (Jamba's Mamba, Qwen3-Next's linear attention) is read from the
  first block built otherwise that has.

Blocks: a user `layout` (the dotted path of the block list) wins; else Hugging Face's `_no_split_modules`
(the ModuleList whose children are of one of those classes); else the largest ModuleList of identical
children that contain a norm; else ValueError with one sentence naming the candidates. A matrix's role
(q, k, v, o, fused qkv, FFN in, gate, out) comes from its attribute name inside the attention module or
outside it (a short table of the names HF, nanoGPT and Meta use); "other" where the name says nothing.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

from ln_viz.byom.layout import (
    SOFTMAX,
    LayoutError,
    UnsupportedModel,
    _close,
    _inside,
    _norm_kind,
    _output_sum,
    _scores_like,
    block_input,
    call_model,
    error_words,
    example_input,
    example_words,
    find_blocks,
    first_tensor,
    is_compiled,
    unwrap,
)
from ln_viz.byom.roles import RESIDUAL_ROLES, attention_part, matrix_roles, norm_roles, placement

__all__ = ["LayoutError", "UnsupportedModel", "block_input", "call_model", "first_tensor", "is_compiled", "unwrap"]

PLACEMENTS = ("post", "pre", "peri", "reordered", "parallel", "none", "unknown")


@dataclass(frozen=True)
class NormCard:
    """One norm of a block: its path inside the block and where it sits on the data path."""

    name: str
    role: str  # pre (reads the block input) | post (its output is the block output) | out (added to the
    # residual) | mid (reads or writes the residual between the branches) | qk (inside attention, on q/k,
    # no matrix reads its output) | v (V-norm: its output is attention's values, Gemma 4) | latent (inside a
    # branch, off the residual, no QK-norm: ln_viz.byom.roles)
    kind: str  # layernorm | rmsnorm | other (from the data: centred or not)


@dataclass(frozen=True)
class MatrixCard:
    """One weight matrix of a block: its parameter's path inside the block, its role and shape."""

    name: str
    role: str  # attn.q | attn.k | attn.v | attn.o | attn.qkv | ffn.gate | ffn.in | ffn.out | other
    shape: tuple[int, ...]


@dataclass(frozen=True)
class ModelCard:
    """What ln-viz found in a model: where the blocks are and how the norms sit in them."""

    family: str  # the model's class name, shown only
    blocks: str  # dotted path of the block list
    depth: int
    d_model: int
    placement: str  # one of PLACEMENTS
    qk_norm: bool
    norms: tuple[NormCard, ...]  # of one block, in forward order
    matrices: tuple[MatrixCard, ...]  # of one block, in parameter order
    attention: str  # the attention module's path inside a block ("" when none was seen)
    attention_impl: str  # HF's config._attn_implementation, else sdpa | mha (nn.MultiheadAttention) | softmax | none
    heads: int | None
    n_params: int
    found_by: str  # layout | _no_split_modules | largest ModuleList
    other_blocks: tuple[str, ...] = ()  # further block lists (an encoder-decoder's decoder), not probed
    notes: tuple[str, ...] = field(default=())
    compiled: bool = False  # torch.compile(model): activations and attention from an eager shadow forward

    @property
    def residual_norms(self) -> tuple[str, ...]:
        """The norms on the residual path (all but QK-norms): the ones whose inputs are probed."""
        return tuple(n.name for n in self.norms if n.role in RESIDUAL_ROLES)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ModelCard:
        return cls(
            **{
                **d,
                "norms": tuple(NormCard(**n) for n in d["norms"]),
                "matrices": tuple(MatrixCard(n["name"], n["role"], tuple(n["shape"])) for n in d["matrices"]),
                "other_blocks": tuple(d.get("other_blocks", ())),
                "notes": tuple(d.get("notes", ())),
            }
        )


# --- the tiny forward -----------------------------------------------------------------------------------
class _AttentionCalls(TorchFunctionMode):
    """Notes which module was innermost when scaled_dot_product_attention (or a 4-D softmax) ran."""

    def __init__(self, stack: list[str], inputs: dict[str, torch.Tensor]) -> None:
        super().__init__()
        self.stack, self.inputs = stack, inputs
        self.sdpa: list[str] = []
        self.mha: list[str] = []  # nn.MultiheadAttention's (its sdpa runs inside, unseen by the mode)
        self.softmax: list[str] = []  # a softmax over one query per token (see `_kind`)
        self.softmax_other: list[str] = []  # any other 4-D softmax
        self.mixed = False  # a softmax mixed the streams of a 4-D residual (hyper-connections)
        self.values: torch.Tensor | None = None  # the first sdpa call's values (a V-norm's output flows there)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        where = self.stack[-1] if self.stack else None
        if where is not None:
            if func is F.scaled_dot_product_attention:
                self.sdpa.append(where)
                if self.values is None and len(args) > 2 and isinstance(args[2], torch.Tensor):
                    self.values = args[2].detach().clone()
            elif func is F.multi_head_attention_forward:
                self.mha.append(where)
            elif func in SOFTMAX and args and _scores_like(args[0]):
                kind = self._kind(args[0])
                self.mixed |= kind == "mixer"
                (self.softmax if kind == "tokens" else self.softmax_other).append(where)
        return func(*args, **kwargs)

    def _kind(self, scores: torch.Tensor) -> str:
        """ "tokens" where a softmax's query axis holds one row per token of the block's input (batch, tokens, ...);
        "mixer" where it weighs the streams of a (batch, tokens, streams, d) input (DeepSeek V4's hyper-connections,
        by a (batch, tokens, streams, streams) softmax that runs before the attention's); else "other". Only a
        "tokens" one is taken for the attention, unless there is none."""
        x = self.inputs.get("")
        if x is None or x.ndim < 3:
            return "other"
        if x.ndim == 4 and scores.shape[:3] == x.shape[:3] and scores.shape[-1] == x.shape[2]:
            return "mixer"
        return "tokens" if scores.shape[-2] == x.shape[1] else "other"


@dataclass
class _Trace:
    x: torch.Tensor
    y: torch.Tensor
    inputs: dict[str, torch.Tensor]  # module path in the block -> its first input
    outputs: dict[str, torch.Tensor]
    order: list[str]  # the modules in the order their forward started
    attention: str
    impl: str
    runs: int = 1  # how often the block ran in the forward (ALBERT's shared layer: once per layer)
    values: torch.Tensor | None = None  # the values its attention's sdpa was given, where it called one
    mixed: bool = False  # a softmax mixed the streams of its 4-D residual (see _AttentionCalls._kind)


@contextlib.contextmanager
def _eval_mode(model: nn.Module) -> Iterator[None]:
    modes = {m: m.training for m in model.modules()}
    model.eval()
    try:
        yield
    finally:
        for m, mode in modes.items():
            m.training = mode


def _trace_block(model: nn.Module, block: nn.Module, example: Any) -> _Trace:
    inputs: dict[str, torch.Tensor] = {}
    outputs: dict[str, torch.Tensor] = {}
    order: list[str] = []
    stack: list[str] = []
    handles = []

    def pre(name):
        def hook(m, args, kwargs):
            stack.append(name)
            order.append(name)
            x = block_input(args, kwargs) if name == "" else first_tensor(args)
            if x is None:
                x = first_tensor(kwargs)
            if x is not None:
                inputs[name] = x.detach().clone()

        return hook

    def post(name):
        def hook(m, args, kwargs, out):
            if stack and stack[-1] == name:
                stack.pop()
            y = first_tensor(out)
            if y is not None:
                outputs[name] = y.detach().clone()

        return hook

    for name, m in block.named_modules():
        handles.append(m.register_forward_pre_hook(pre(name), with_kwargs=True))
        handles.append(m.register_forward_hook(post(name), with_kwargs=True))
    calls = _AttentionCalls(stack, inputs)
    try:
        with torch.no_grad(), _eval_mode(model), calls:
            call_model(model, example)
    except (LayoutError, UnsupportedModel, MemoryError, torch.OutOfMemoryError):
        raise  # ln-viz's own sentence, or no fault of the example's
    except Exception as e:  # the model's own: said with what it was given, and how to give it another
        raise LayoutError(
            f"ln-viz runs {type(model).__name__} once to follow its data, on {example_words(example)}, and it raised "
            f"{error_words(e)}; pass example=<an input batch it takes>."
        ) from e
    finally:
        for h in handles:
            h.remove()
    if "" not in inputs or "" not in outputs:
        raise _NotRun(f"the forward pass did not run the blocks of {type(model).__name__}: pass layout=.", "" in order)
    softmax = calls.softmax or calls.softmax_other
    attention = (calls.sdpa or calls.mha or softmax or [""])[0]
    impl = "sdpa" if calls.sdpa else "mha" if calls.mha else "softmax" if softmax else "none"
    impl = getattr(getattr(model, "config", None), "_attn_implementation", None) or impl  # Hugging Face's name
    runs = order.count("")
    order = list(dict.fromkeys(order))  # a block run twice (shared weights) lists its modules once
    return _Trace(inputs[""], outputs[""], inputs, outputs, order, attention, impl, runs, calls.values, calls.mixed)


# --- the card -------------------------------------------------------------------------------------------
def describe(model: nn.Module, *, layout: str | None = None, example: Any = None) -> ModelCard:
    """The model's card, found by following one tiny forward pass through its first block (see the
    module's docstring). `layout` names the block list where discovery fails; `example` is an input batch
    for a model that does not take token ids."""
    compiled, model = is_compiled(model), unwrap(model)  # torch.compile's wrapper: its original module
    path, blocks, found_by, others = find_blocks(model, layout)
    ex = example if example is not None else example_input(model)
    block, (trace, norms, ordered, roles, where) = blocks[0], _read_first(model, path, blocks, others, ex)
    notes = []
    if where == "unknown" and len(blocks) > 1:  # ModernBERT's first layer has no attention norm
        second = _read_or_none(model, blocks[1], ex)
        if second is not None and second[-1] != "unknown":
            block, (trace, norms, ordered, roles, where) = blocks[1], second
            notes.append(f"{path}[0] differs from the others (its norms alone name no placement): read from [1]")
    if not trace.attention and (hybrid := _first_with_attention(model, blocks, ex)) is not None:
        k, read = hybrid
        block, (trace, norms, ordered, roles, where) = blocks[k], read
        notes.append(
            f"{path}[0] has no attention (a hybrid: Mamba or linear-attention layers between the attention "
            f"ones): read from [{k}], the first that has; each block is probed where it has these modules"
        )
    notes += _streams_note(trace, where)
    d, attention = trace.y.shape[-1], trace.attention
    matrices = tuple(MatrixCard(*m) for m in matrix_roles(block, attention, attention_part(block, attention)))
    config = getattr(model, "config", None)
    heads = getattr(config, "num_attention_heads", None) if config is not None else None
    if attention and isinstance(mha := block.get_submodule(attention), nn.MultiheadAttention):
        heads = mha.num_heads
    if others:
        notes.append(f"only {path} is probed; also found: {', '.join(others)}")
    if trace.runs > 1:  # ALBERT: one block's weights shared by every layer
        notes.append(f"{path}[0] runs {trace.runs} times a forward (shared weights): its probes keep the last run")
    return ModelCard(
        family=type(model).__name__,
        blocks=path,
        depth=len(blocks),
        d_model=int(d),
        placement=where,
        qk_norm=any(r == "qk" for r in roles.values()),
        norms=tuple(NormCard(n, roles[n], norms[n]) for n in ordered),
        matrices=matrices,
        attention=attention,
        attention_impl=str(trace.impl),
        heads=int(heads) if isinstance(heads, int) else None,
        n_params=sum(p.numel() for p in model.parameters()),
        found_by=found_by,
        other_blocks=others,
        notes=tuple(notes),
        compiled=compiled,
    )


class _NotRun(LayoutError):
    """A block of the list found gave no hidden states to follow in a forward pass: not called as a module, or
    `called` but with no tensor first in or out (said by `_read_first`)."""

    def __init__(self, message: str, called: bool) -> None:
        super().__init__(message)
        self.called = called


def _read_first(model: nn.Module, path: str, blocks: list[nn.Module], others: tuple[str, ...], example: Any) -> tuple:
    """`_read_block` of the first block; where the forward pass did not call it as a module (SqueezeBERT calls each
    layer's .forward(), which no hook sees; Funnel's list holds lists), one sentence with the candidates."""
    try:
        return _read_block(model, blocks[0], example)
    except _NotRun as e:
        also = f"; other candidate lists: {', '.join(others)}" if others else ""
        why = (
            "the first was called with or gave its hidden states in no tensor ln-viz can follow (a tuple, another "
            "object)"
            if e.called
            else "a forward pass did not call the first as a module (code that calls a block's .forward() skips "
            "the hooks ln-viz reads it by)"
        )
        raise LayoutError(
            f"ln-viz found the blocks of {type(model).__name__} at {path} ({len(blocks)} x "
            f"{type(blocks[0]).__name__}), but {why}{also}; pass layout='<dotted path of the block list>'."
        ) from None


def _streams_note(trace: _Trace, where: str) -> list[str]:
    """Why no placement is named where the residual is several streams (DeepSeek V4's hyper-connections: each
    branch reads a learned mix of them through its norm, and writes back into each)."""
    if where != "unknown" or not trace.mixed or trace.x.shape != trace.y.shape:
        return []
    n, d = trace.x.shape[-2:]
    return [
        f"its blocks carry the residual as {n} streams of width {d} (hyper-connections): each branch's norm reads a "
        "learned mix of them, which none of the placements describes"
    ]


def _read_block(model: nn.Module, block: nn.Module, example: Any) -> tuple[_Trace, dict, list, dict, str]:
    """One block's trace, its norms (path -> kind), their forward order, roles, and the placement they make."""
    trace = _trace_block(model, block, example)
    d, x, y = trace.y.shape[-1], trace.x, trace.y
    norms: dict[str, str] = {}
    for name, m in block.named_modules():
        if name and name in trace.inputs and name in trace.outputs:
            kind = _norm_kind(m, trace.inputs[name], trace.outputs[name])
            if kind is not None:
                norms[name] = kind
    # a norm inside another norm (a wrapper) counts once: the outer one
    norms = {n: k for n, k in norms.items() if not any(_inside(n, o) and n != o for o in norms)}
    ordered = [n for n in trace.order if n in norms]
    on_path = [n for n in ordered if _close(trace.outputs[n], y, d) or _close(trace.inputs[n], x, d)]
    resid_shaped = [n for n in ordered if trace.outputs[n].numel() == y.numel() and trace.outputs[n].shape[-1] == d]
    out_sum = _output_sum(x, y, {n: trace.outputs[n] for n in resid_shaped if n not in on_path}, d)
    roles = norm_roles(block, trace, ordered, out_sum, d)
    return trace, norms, ordered, roles, placement(roles, trace, block, d)


def _first_with_attention(model: nn.Module, blocks: list[nn.Module], example: Any) -> tuple[int, tuple] | None:
    """(index, _read_block) of the first block with attention among the blocks built unlike the first (a hybrid's
    attention layers: one trace a kind of block, not one a block), or None."""
    kinds = {tuple(n for n, _ in blocks[0].named_modules())}
    for k, block in enumerate(blocks[1:], 1):
        kind = tuple(n for n, _ in block.named_modules())
        if kind in kinds:
            continue
        kinds.add(kind)
        read = _read_or_none(model, block, example)
        if read is not None and read[0].attention:
            return k, read
    return None


def _read_or_none(model: nn.Module, block: nn.Module, example: Any) -> tuple | None:
    """`_read_block` of a block after the first, None where it gave no hidden states to follow: the card keeps
    what the first block gave."""
    try:
        return _read_block(model, block, example)
    except _NotRun:
        return None
