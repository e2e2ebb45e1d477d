"""ln_viz.describe and ln_viz.attach on tiny random Hugging Face models (built offline from configs): the
placement each names, the logits untouched, the attention tap's probabilities equal to the model's own,
gradient norms as the optimizer applied them, hooks left as found, failures that never stop a run, and an
attached run in the store and the app (listed; its pages say in one sentence what they cannot draw yet)."""

from __future__ import annotations

import copy
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("transformers", reason="transformers is not installed (pip install -r requirements-hf.txt)")

import ln_viz  # noqa: E402
from ln_viz.byom import LayoutError, UnsupportedModel, attach, describe  # noqa: E402
from ln_viz.schema import HIST_EDGES, PROBES  # noqa: E402
from ln_viz.store import Store  # noqa: E402
from ln_viz.store.rows import blob_to_array  # noqa: E402
from tests.byom_models import MORE, SPECS, WIDE, build  # noqa: E402

torch.set_num_threads(1)
QUIET = {"attention_dropout": 0.0, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
NO_DROPOUT = {"gpt2": dict(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0), "bert": QUIET}


class Stack(torch.nn.Module):
    """Token ids (10 of them) embedded at width 8, then `layers`; each test writes its own forward over them."""

    def __init__(self, layers) -> None:  # noqa: ANN001 -- any iterable of modules
        super().__init__()
        self.emb, self.layers = torch.nn.Embedding(10, 8), torch.nn.ModuleList(layers)


def encoder_layers(n: int, **kw) -> list[torch.nn.Module]:
    return [torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, **kw) for _ in range(n)]


def ids(batch: int = 4, seq: int = 16, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 128, (batch, seq), generator=torch.Generator().manual_seed(seed))


def hook_sizes(*objs) -> list[int]:
    """The size of every hook dictionary of every module of the models, and of the optimizers."""
    sizes = []
    for obj in objs:
        if isinstance(obj, torch.nn.Module):
            for m in obj.modules():
                sizes += [len(getattr(m, a)) for a in dir(m) if a.endswith("hooks") and isinstance(getattr(m, a), dict)]
        else:
            sizes += [len(obj._optimizer_step_pre_hooks), len(obj._optimizer_step_post_hooks)]
    return sizes


def stored_names(path: Path, run_id: int) -> set[str]:
    with Store(path) as store, store._read() as db:
        return {r[0] for r in db.execute("SELECT DISTINCT name FROM probes WHERE run_id = ?", (run_id,))}


def train_attached(model, opt, path: Path, steps: int) -> tuple[int, list[str]]:
    """`steps` optimizer steps of `model` on ids() under attach(every=1): the run's id and the warnings said."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with attach(model, opt, store=path, every=1) as probe:
            for _ in range(steps):
                model(input_ids=ids(), labels=ids()).loss.backward()
                opt.step()
                opt.zero_grad()
    return probe.run_id, [str(w.message) for w in caught]


def stored_probe(path: Path, run_id: int, name: str, step: int) -> np.ndarray:
    with Store(path) as store, store._read() as db:
        row = db.execute(
            "SELECT shape, data FROM probes WHERE run_id = ? AND name = ? AND step = ?", (run_id, name, step)
        ).fetchone()
    return blob_to_array(*row)


@pytest.mark.parametrize("name", list(SPECS))
def test_describe_names_the_placement_and_qk_norm_by_the_data(name: str) -> None:
    _, _, placement, qk = SPECS[name]
    model = build(name)
    card = ln_viz.describe(model)
    want_blocks = {"gpt2": "transformer.h", "bert": "bert.encoder.layer"}.get(name, "model.layers")
    assert (card.blocks, card.depth, card.d_model) == (want_blocks, 2, 64)
    assert (card.placement, card.qk_norm) == (placement, qk)
    assert card.found_by == "_no_split_modules"
    assert {"attn.o", "ffn.out"} <= {m.role for m in card.matrices}
    assert model.training  # describe left the model's mode as it found it


@pytest.mark.parametrize("name", ["gpt_neox", "opt", "qwen3", "roberta", "gemma2", "albert", "deepseek_v3"])
def test_describe_on_more_architectures(name: str) -> None:
    _, _, placement, qk = MORE[name]
    card = describe(build(name))
    assert (card.placement, card.qk_norm) == (placement, qk)  # OPT's flattened FFN norm is no QK-norm


@pytest.mark.slow
@pytest.mark.parametrize("name", list(WIDE))
def test_describe_names_the_placement_of_more_architectures_from_tiny_configs(name: str) -> None:
    """What each architecture's own code does (Megatron-BERT is Pre-LN; Phi, GPT-J, CodeGen, Cohere and this
    Falcon parallel; EXAONE 4 reorders the norm as OLMo 2; OLMoE and Persimmon have QK-norm; ModernBERT's first
    layer has no attention norm, so the second is read), from a tiny random config of each."""
    _, _, placement, qk = WIDE[name]
    card = describe(build(name))
    assert (card.placement, card.qk_norm, card.depth, card.d_model) == (placement, qk, 2, 64)
    assert {"attn.o", "ffn.out"} <= {m.role for m in card.matrices}


@pytest.mark.parametrize("name", ["mixtral", "gpt_oss"])
def test_an_moe_router_is_no_gate_and_the_experts_down_projection_is_the_ffn_output(name: str) -> None:
    """Mixtral's `mlp.gate` and GPT-OSS's `mlp.router` choose experts: they were drawn as a SwiGLU's gate. The
    experts' fused matrices are parameters of their own (`mlp.experts.down_proj`, no `.weight`): they had no role,
    so Figure 3 had no FFN output matrix to draw."""
    roles = {m.name: m.role for m in describe(build(name)).matrices}
    router = "mlp.gate.weight" if name == "mixtral" else "mlp.router.weight"
    assert roles[router] == "other" and "ffn.gate" not in roles.values()
    assert roles["mlp.experts.down_proj"] == "ffn.out" and roles["mlp.experts.gate_up_proj"] == "ffn.in"


def test_dbrx_s_experts_are_a_swiglu_by_their_bare_names() -> None:
    """DBRX's experts hold bare w1 (gate), v1 (up) and w2 (down), its router `router.layer`."""
    roles = {m.name.removeprefix("ffn."): m.role for m in describe(build("dbrx")).matrices if "ffn." in m.name}
    assert roles == {"router.layer.weight": "other", "experts.mlp.w1": "ffn.gate", "experts.mlp.v1": "ffn.in",
                     "experts.mlp.w2": "ffn.out"}  # fmt: skip


def test_a_norm_inside_attention_that_a_matrix_reads_is_no_qk_norm() -> None:
    """ALBERT's attention module holds the LayerNorm after its residual add (the FFN's matrix reads it): the
    residual's, not QK-norm. DeepSeek V3's MLA normalises the compressed q and kv, which matrices then project up:
    no QK-norm either (Kimi K2 clips its logits because MLA cannot have one), and not a residual norm to probe."""
    albert = describe(build("albert"))
    assert [(n.name.rsplit(".", 1)[-1], n.role) for n in albert.norms] == [
        ("LayerNorm", "mid"),
        ("full_layer_layer_norm", "post"),
    ]
    assert albert.depth == 1 and any("runs 3 times a forward" in note for note in albert.notes)
    bitnet = {n.name: n.role for n in describe(build("bitnet")).norms}  # its sub-norm before o_proj
    assert bitnet["self_attn.attn_sub_norm"] == "latent"
    deepseek = describe(build("deepseek_v3", q_lora_rank=64))  # as wide as the residual: a latent all the same
    roles = {n.name: n.role for n in deepseek.norms}
    assert roles["self_attn.q_a_layernorm"] == roles["self_attn.kv_a_layernorm"] == "latent"
    assert deepseek.residual_norms == ("input_layernorm", "post_attention_layernorm")
    for name in ("qwen3", "olmo2"):  # their q/k norms feed the attention product, no matrix
        assert {n.role for n in describe(build(name)).norms if "q_norm" in n.name or "k_norm" in n.name} == {"qk"}


def test_a_norm_s_kind_is_read_from_its_data_with_its_epsilon() -> None:
    """OLMo 2's RMSNorms at init see activations whose mean square is not far above their eps (1e-6): their rows
    come out shorter than unit RMS, and they were called "other". BERT's are LayerNorms, Llama's RMSNorms."""
    kinds = {name: {n.kind for n in describe(build(name)).norms} for name in ("olmo2", "bert", "llama", "exaone4")}
    assert kinds == {"olmo2": {"rmsnorm"}, "bert": {"layernorm"}, "llama": {"rmsnorm"}, "exaone4": {"rmsnorm"}}


def test_norms_off_the_residual_stream_are_latent_and_none_is_taken_for_qk_norm() -> None:
    """BitNet's FFN sub-norm (at the FFN's width), DiffLlama's group norm (scaled by a number before o_proj reads
    it) and DeepSeek V3.2's indexer key norm (inside a sub-network of the attention): latent, not QK-norm, not
    among the residual norms the probes read."""
    bitnet = describe(build("bitnet"))
    assert {n.name: n.role for n in bitnet.norms}["mlp.ffn_sub_norm"] == "latent"
    assert bitnet.residual_norms == ("input_layernorm", "post_attention_layernorm")
    diff = describe(build("diffllama"))
    assert {n.name: n.role for n in diff.norms}["self_attn.groupnorm"] == "latent" and not diff.qk_norm
    dsa = describe(build("deepseek_v32"))
    assert {n.name: n.role for n in dsa.norms}["self_attn.indexer.k_norm"] == "latent" and not dsa.qk_norm
    assert {m.name: m.role for m in dsa.matrices}["self_attn.indexer.wk.weight"] == "other"  # not the attention's k
    big_bird = {m.name: m.role for m in describe(build("big_bird")).matrices}  # its attention's parts: no sub-network
    assert big_bird["attention.self.query.weight"] == "attn.q" and big_bird["attention.output.dense.weight"] == "attn.o"
    gemma4 = describe(build("gemma4_text"))  # its v_norm: on the values attention is given, not a QK-norm
    assert {n.name: n.role for n in gemma4.norms if n.name.startswith("self_attn.")} == {
        "self_attn.q_norm": "qk",
        "self_attn.k_norm": "qk",
        "self_attn.v_norm": "v",
    }
    assert "self_attn.v_norm" not in gemma4.residual_norms
    falcon_h1 = describe(build("falcon_h1"))  # a Mamba beside attention on one input, the FFN after: not parallel
    assert falcon_h1.placement == "pre" and falcon_h1.residual_norms == ("input_layernorm", "pre_ff_layernorm")


def test_a_lora_model_from_peft_is_described_by_its_wrapped_matrices_and_probed(tmp_path: Path) -> None:
    """PEFT's LoRA wraps q_proj and v_proj (base_layer frozen, lora_A and lora_B trained): the card finds the blocks
    through the PeftModel and names the wrapped weights by their roles; attach records the adapters' gradient norms
    and leaves the frozen matrices' empty (no gradient was applied to them), and takes its hooks off after."""
    peft = pytest.importorskip("peft")
    model = peft.get_peft_model(build("llama"), peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"]))
    card = describe(model)
    roles = {m.name: m.role for m in card.matrices}
    assert card.blocks.endswith("model.layers") and card.placement == "pre"
    assert (
        roles["self_attn.q_proj.base_layer.weight"] == "attn.q"
        and roles["self_attn.v_proj.base_layer.weight"] == "attn.v"
    )
    assert roles["self_attn.q_proj.lora_A.default.weight"] == "other"
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    baseline = hook_sizes(model, opt)
    path = tmp_path / "runs.sqlite"
    run_id, _ = train_attached(model, opt, path, 2)
    grads = stored_probe(path, run_id, "grad_norm", 2)
    trained = dict(model.base_model.model.model.layers[0].named_parameters())
    for j, matrix in enumerate(m.name for m in card.matrices):
        assert np.isfinite(grads[:, j]).all() == trained[matrix].requires_grad, matrix
    assert np.isfinite(stored_probe(path, run_id, "attn_logit_max", 2)).all()
    assert hook_sizes(model, opt) == baseline


@pytest.mark.slow
@pytest.mark.parametrize("name", ["jamba", "qwen3_next"])
def test_a_hybrid_is_read_from_its_first_attention_layer_and_probed_where_it_has_attention(
    name: str, tmp_path: Path
) -> None:
    """Jamba's first layer is a Mamba, Qwen3-Next's a linear attention: the card comes from layer 1 (a note says
    so), and attach taps the attention where there is one, in the right layer, without the unseen warning."""
    model = build(name)
    card = describe(model)
    assert card.attention == "self_attn" and any("[0] has no attention" in note for note in card.notes)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    path = tmp_path / "runs.sqlite"
    run_id, said = train_attached(model, opt, path, 2)
    assert not [w for w in said if "ln-viz" in w]
    logits = stored_probe(path, run_id, "attn_logit_max", 2)
    assert np.isnan(logits[0]) and np.isfinite(logits[1])
    assert np.isfinite(stored_probe(path, run_id, "resid_stats", 2)).all()


def test_a_user_layout_wins_and_a_model_without_blocks_gets_one_sentence() -> None:
    model = build("llama")
    assert describe(model, layout="model.layers").found_by == "layout"

    class NoBlocks(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = torch.nn.Embedding(10, 8)
            self.heads = torch.nn.ModuleList([torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)])

        def forward(self, x):
            return self.heads[0](self.emb(x))

    with pytest.raises(LayoutError, match=r"candidate lists: heads \(2 x Linear\).*layout="):
        describe(NoBlocks())
    with pytest.raises(LayoutError, match="names no submodule"):
        describe(model, layout="model.nothing")


def test_blocks_called_by_their_forward_method_are_said_so_in_one_sentence_with_the_candidates() -> None:
    """SqueezeBERT calls each layer's .forward(), which no hook sees: describe said only "the forward pass did not
    run the blocks", which they had. It now names the list it found, why no hook saw it, and the other candidates."""

    class Direct(Stack):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.emb(x)
            for layer in self.layers:
                h = layer.forward(h)
            return h

    model = Direct(encoder_layers(3))
    model.extra = torch.nn.ModuleList(encoder_layers(1))
    with pytest.raises(LayoutError) as said:
        describe(model)
    assert str(said.value) == (
        "ln-viz found the blocks of Direct at layers (3 x TransformerEncoderLayer), but a forward pass did not call "
        "the first as a module (code that calls a block's .forward() skips the hooks ln-viz reads it by); other "
        "candidate lists: extra; pass layout='<dotted path of the block list>'."
    )


def test_a_4d_residual_without_a_mixing_softmax_gets_no_note_of_streams() -> None:
    """A window-attention block on (batch, height, width, channels) has a 4-D residual too: no placement is named,
    and no note calls its width "streams" (the note is for a residual a softmax mixes, as DeepSeek V4's)."""

    class Window(torch.nn.Module):
        def __init__(self, c: int = 8) -> None:
            super().__init__()
            self.attn = torch.nn.MultiheadAttention(c, 2, batch_first=True)
            self.norm, self.f = torch.nn.LayerNorm(c), torch.nn.Linear(c, c)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, h, w, c = x.shape
            t = x.reshape(b, h * w, c)
            return x + self.f(self.norm(self.attn(t, t, t, need_weights=False)[0].reshape(b, h, w, c)))

    class Vision(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem, self.layers = torch.nn.Linear(3, 8), torch.nn.ModuleList(Window() for _ in range(3))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = self.stem(x)
            for layer in self.layers:
                h = layer(h)
            return h

    card = describe(Vision(), example=torch.randn(2, 6, 5, 3))
    assert card.placement == "unknown" and not [n for n in card.notes if "streams" in n]


def test_a_block_whose_hidden_states_come_in_a_tuple_is_said_to_be_called_not_skipped() -> None:
    """A block called as a module with (hidden states, mask) in one tuple: ln-viz has no tensor to follow. The
    sentence says so, not that the block's .forward() was called (which it was not)."""

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln, self.ff = torch.nn.LayerNorm(8), torch.nn.Linear(8, 8)

        def forward(self, state: tuple) -> tuple:
            h, mask = state
            return h + self.ff(self.ln(h)), mask

    class Tupled(Stack):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            state = (self.emb(x), None)
            for layer in self.layers:
                state = layer(state)
            return state[0]

    with pytest.raises(LayoutError, match=r"at layers \(3 x Block\), but the first was called with or gave its hidden "
                       r"states in no tensor ln-viz can follow \(a tuple, another object\); pass layout="):  # fmt: skip
        describe(Tupled(Block() for _ in range(3)))


def test_a_tokenizer_s_batch_encoding_is_an_example_and_ln_viz_s_own_sentences_are_not_rewrapped() -> None:
    """A tokenizer's output (BatchEncoding, a UserDict, not a dict) was passed whole as one positional input.
    ln-viz's own LayoutError raised inside a forward keeps its sentence; a message's full stop is not doubled."""
    from transformers import BatchEncoding

    model = build("llama")
    assert describe(model, example=BatchEncoding({"input_ids": ids(batch=2, seq=8)})).placement == "pre"

    class Inner(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise LayoutError("ln-viz's own sentence.")

    class Outer(Stack):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.layers[0](self.emb(x))

    with pytest.raises(LayoutError, match=r"^ln-viz's own sentence\.$"):
        describe(Outer([Inner(), Inner()]), layout="layers")

    class Fails(Outer):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise ValueError("the batch is too short.")

    with pytest.raises(LayoutError, match=r"raised ValueError: the batch is too short; pass example="):
        describe(Fails([Inner(), Inner()]), layout="layers")


def test_a_model_whose_forward_fails_on_the_example_is_said_in_one_sentence_with_the_fix() -> None:
    """describe runs the model once on token ids; a model that takes more (here a padding mask) raised its own
    TypeError from inside describe. One sentence now says what it was given, what it raised, and `example=`."""

    class NeedsMask(Stack):
        def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            h = self.emb(x)
            for layer in self.layers:
                h = layer(h, src_key_padding_mask=mask)
            return h

    model = NeedsMask(encoder_layers(2, norm_first=True))
    with pytest.raises(
        LayoutError,
        match=r"^ln-viz runs NeedsMask once .* on a tensor \(2, 8\), and it raised "
        r"TypeError: .*missing 1 required positional argument: 'mask'; pass example=",
    ) as said:
        describe(model)
    assert isinstance(said.value.__cause__, TypeError) and "\n" not in str(said.value)
    x = torch.randint(0, 10, (2, 5))
    assert describe(model, example=(x, torch.zeros(2, 5, dtype=torch.bool))).placement == "pre"
    with pytest.raises(LayoutError, match=r" on a tensor \(2, 5\), a tensor \(2, 4\), and it raised "):
        describe(model, example=(x, torch.zeros(2, 4, dtype=torch.bool)))  # a mask one token short


def test_hyper_connections_softmax_is_no_attention_and_the_card_says_why_no_placement_is_named(tmp_path: Path) -> None:
    """DeepSeek V4 carries the residual as 4 streams, mixed before each branch by a (batch, tokens, 4, 4) softmax
    that ran before the attention's: the card named that mixer (`attn_hc`) the attention, and attach recorded its
    4 x 4 weights as attention probabilities. The attention is `self_attn` (a softmax over one query per token);
    its q and its shared k/v entry are RMS-normed (QK-norm); the placement stays unknown, with the reason."""
    model = build("deepseek_v4", attention_dropout=0.0)
    card = describe(model)
    assert (card.attention, card.placement, card.qk_norm) == ("self_attn", "unknown", True)
    assert {n.name for n in card.norms if n.role == "qk"} == {"self_attn.q_b_norm", "self_attn.kv_norm"}
    assert any("4 streams of width 64 (hyper-connections)" in note for note in card.notes)
    # as many tokens as streams: the mixer's (batch, 4, 4, 4) weights have one row per token too
    assert describe(model, example={"input_ids": ids(batch=2, seq=4)}).attention == "self_attn"
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    with attach(model, opt, store=tmp_path / "runs.sqlite", every=1) as probe:
        probe._keep_attention = True
        out = model(input_ids=ids(batch=2), output_attentions=True)
        assert len(probe.attention_probs) == len(out.attentions) == 2
        for i, eager in enumerate(out.attentions):
            torch.testing.assert_close(probe.attention_probs[i], eager.detach(), atol=1e-5, rtol=0)
        out.logits.sum().backward()
        opt.step()


@pytest.mark.slow  # torch.compile's first import and set-up: ~5 s
def test_a_model_compiled_in_place_is_refused_in_one_sentence() -> None:
    model = build("llama")
    model.model.layers[0].compile()  # its hooks would run inside the compiled graph
    with pytest.raises(UnsupportedModel, match=r"torch\.compile\(model\)`, not by `module\.compile\(\)`"):
        describe(model)


def _train(model, batches, *, backend: str | None, store: Path | None, warm: int = 0):
    """`model` (compiled with `backend` unless None) trained on `batches` by AdamW, attached every step
    from step `warm` + 1 when `store` is given: (its losses, the probe or None, graphs compiled while
    attached)."""
    from torch._dynamo.utils import counters

    run = torch.compile(model, backend=backend) if backend else model
    opt = torch.optim.AdamW(run.parameters(), lr=1e-2)
    losses, probe, graphs = [], None, 0
    torch.manual_seed(0)  # dropout's draws
    for i, x in enumerate(batches):
        if store is not None and i == warm:
            probe, graphs = attach(run, opt, store=store, every=1), counters["stats"]["unique_graphs"]
        out = run(input_ids=x, labels=x)
        losses.append(out.loss.detach().clone())
        out.loss.backward()
        opt.step()
        opt.zero_grad()
    if probe is not None:
        probe.close()
        graphs = counters["stats"]["unique_graphs"] - graphs
    return losses, probe, graphs


# torch.compile: aot_eager traces and hooks as inductor does (dynamo, the OptimizedModule, its guards); inductor
# adds code generation (~40 s cold on CPU, a C compiler needed)
BACKENDS = ["aot_eager", "inductor"]


@pytest.mark.slow  # three compiled or attached runs: ~10 s with aot_eager (the first compile), ~40 s with inductor cold
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_compiled_model_is_probed_by_an_eager_shadow_forward(backend: str, tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    model = build("llama", attention_dropout=0.0)
    batches = [ids(seed=s) for s in range(4)]
    eager_losses, eager, _ = _train(copy.deepcopy(model), batches, backend=None, store=path, warm=1)
    plain, _, _ = _train(copy.deepcopy(model), batches, backend=backend, store=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no probe failed
        losses, shadow, graphs = _train(copy.deepcopy(model), batches, backend=backend, store=path, warm=1)
    assert all(torch.equal(a, b) for a, b in zip(losses, plain))  # the user's numbers, with and without attach
    assert graphs == 0  # attaching after the warm-up step compiled nothing new (no hook in the graph)
    assert shadow.card.compiled and not eager.card.compiled and shadow.attention_tap == "AttentionInterface"
    torch.testing.assert_close(torch.stack(losses), torch.stack(eager_losses), atol=1e-5, rtol=1e-5)
    recorded = [stored_names(path, p.run_id) for p in (eager, shadow)]
    assert recorded[0] == recorded[1] >= {n for n, spec in PROBES.items() if not spec.optional}, recorded
    for name in sorted(recorded[0]):  # what attach records (a later, optional probe of ln-viz's own trainer may not be)
        for step in (1, 2, 3):  # the optimizer steps taken while attached; same weights, same batches
            want, got = (stored_probe(path, p.run_id, name, step) for p in (eager, shadow))
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{name} at step {step}")
            if name in ("resid_hist", "attn_logit_max", "grad_norm", "update_ratio"):
                assert np.isfinite(got).all(), name


@pytest.mark.slow  # two compiled runs: ~15 s
def test_a_model_compiled_after_attach_trains_as_without_and_one_sentence_says_why_nothing_is_probed(
    tmp_path: Path,
) -> None:
    model = build("llama", attention_dropout=0.0)
    batches = [ids(seed=s) for s in range(3)]
    plain, _, _ = _train(copy.deepcopy(model), batches, backend="aot_eager", store=None)
    late = copy.deepcopy(model)
    opt = torch.optim.AdamW(late.parameters(), lr=1e-2)
    compiled = torch.compile(late, backend="aot_eager")
    losses = []
    torch.manual_seed(0)
    with warnings.catch_warnings(record=True) as caught, attach(late, opt, store=tmp_path / "runs.sqlite", every=1):
        warnings.simplefilter("always")
        for x in batches:
            out = compiled(input_ids=x, labels=x)
            losses.append(out.loss.detach().clone())
            out.loss.backward()
            opt.step()
            opt.zero_grad()
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 1 and "compiled after attach" in said[0] and "torch.compile(model)" in said[0], said
    assert all(torch.equal(a, b) for a, b in zip(losses, plain))


@pytest.mark.slow  # two compiled runs: ~15 s
def test_a_compiled_model_s_dropout_draws_the_same_with_and_without_the_shadow(tmp_path: Path) -> None:
    model = build("gpt2")  # dropout 0.1 in its embeddings, attention and residual branches
    batches = [ids(seed=s) for s in range(3)]
    plain, _, _ = _train(copy.deepcopy(model), batches, backend="aot_eager", store=None)
    losses, probe, _ = _train(copy.deepcopy(model), batches, backend="aot_eager", store=tmp_path / "runs.sqlite")
    assert all(torch.equal(a, b) for a, b in zip(losses, plain))  # the shadow forward's draws were its own
    assert np.isfinite(stored_probe(tmp_path / "runs.sqlite", probe.run_id, "resid_stats", 3)).all()


@pytest.mark.parametrize("name", list(SPECS))
def test_logits_are_the_same_with_and_without_attach(name: str, tmp_path: Path) -> None:
    model = build(name).eval()
    x = ids()
    with torch.no_grad():
        before = model(input_ids=x).logits
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    with attach(model, opt, store=tmp_path / "runs.sqlite", every=1):
        with torch.no_grad():
            during = model(input_ids=x).logits
    with torch.no_grad():
        after = model(input_ids=x).logits
    torch.testing.assert_close(during, before, atol=1e-5, rtol=0)
    assert torch.equal(after, before)


@pytest.mark.parametrize("name", list(SPECS))
def test_the_tapped_logits_softmax_is_the_model_s_own_attention(name: str, tmp_path: Path) -> None:
    model = build(name, **NO_DROPOUT.get(name, {}))
    model.set_attn_implementation("eager")
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    with attach(model, opt, store=tmp_path / "runs.sqlite", every=1) as probe:
        probe._keep_attention = True
        out = model(input_ids=ids(batch=2), output_attentions=True)  # a training forward: the probe step's
        assert len(probe.attention_probs) == 2
        for i, eager in enumerate(out.attentions):
            torch.testing.assert_close(probe.attention_probs[i], eager.detach(), atol=1e-5, rtol=0)
        out.logits.sum().backward()
        opt.step()


class TorchEncoder(torch.nn.Module):
    """A language model on PyTorch's own nn.TransformerEncoderLayer (nn.MultiheadAttention inside)."""

    def __init__(self, norm_first: bool, batch_first: bool) -> None:
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=batch_first, norm_first=norm_first)
        self.emb, self.head, self.batch_first = torch.nn.Embedding(50, 32), torch.nn.Linear(32, 50), batch_first
        self.enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, idx: torch.Tensor, pad: torch.Tensor | None = None, mask: torch.Tensor | None = None):  # noqa: ANN201
        x = self.emb(idx) if self.batch_first else self.emb(idx).transpose(0, 1)
        y = self.enc(x, mask=mask, src_key_padding_mask=pad)
        return self.head(y if self.batch_first else y.transpose(0, 1))


@pytest.mark.parametrize("batch_first", [True, False])
def test_pytorch_s_own_transformer_layers_are_described_and_their_attention_tapped(
    batch_first: bool, tmp_path: Path
) -> None:  # fmt: skip
    """nn.TransformerEncoderLayer: its nn.MultiheadAttention runs its sdpa where the sdpa mode cannot see it, so no
    attention was found (and no warning said so), and its matrices (in_proj_weight, linear1, linear2) had no role.
    Now its placement, attention and roles are named, and the tapped probabilities are its own (need_weights),
    under a causal float mask, a boolean one, and a key padding mask, on the first 8 of 10 sequences."""
    x = torch.randint(0, 50, (10, 12), generator=torch.Generator().manual_seed(0))
    pad = torch.zeros(10, 12, dtype=torch.bool)
    pad[0, 9:] = True  # the last three keys of the first sequence are padding
    causal = torch.nn.Transformer.generate_square_subsequent_mask(12)  # float: 0 and -inf
    calls: list[tuple[tuple, dict]] = []  # each attention call's arguments, as its module got them
    for norm_first, want in ((False, "post"), (True, "pre")):
        torch.manual_seed(0)
        model = TorchEncoder(norm_first, batch_first)
        card = describe(model)
        assert (card.blocks, card.placement, card.attention, card.attention_impl, card.heads) == (
            "enc.layers", want, "self_attn", "mha", 4,
        )  # fmt: skip
        assert [m.role for m in card.matrices] == ["attn.qkv", "attn.o", "ffn.in", "ffn.out"]
        opt = torch.optim.SGD(model.parameters(), lr=0.0)
        seen = [m.register_forward_pre_hook(lambda m, a, k: calls.append((a, k)), with_kwargs=True)
                for m in (layer.self_attn for layer in model.enc.layers)]  # fmt: skip
        for mask, padding in ((causal, None), (causal, pad), (causal > -1, None)):  # (boolean: True attends)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with attach(model, opt, store=tmp_path / "runs.sqlite", every=1) as probe:
                    probe._keep_attention = True
                    calls.clear()  # attach's describe ran the model once
                    bool_mask = None if mask.dtype != torch.bool else ~mask  # MHA's booleans: True is masked
                    model(x, padding, bool_mask if bool_mask is not None else mask).sum().backward()
                    opt.step()
            assert not [w for w in caught if "ln-viz" in str(w.message)]
            assert len(calls) == 2  # one a layer
            for i, (a, k) in enumerate(list(calls)):  # (the calls below add to it)
                own = model.enc.layers[i].self_attn(*a, **(k | {"need_weights": True, "average_attn_weights": False}))
                torch.testing.assert_close(probe.attention_probs[i], own[1][:8].detach(), atol=1e-5, rtol=0)
            logits = stored_probe(tmp_path / "runs.sqlite", probe.run_id, "attn_logit_max", 1)
            assert np.isfinite(logits).all() and np.isfinite(
                stored_probe(tmp_path / "runs.sqlite", probe.run_id, "attn_entropy", 1)
            ).all()  # fmt: skip
        for h in seen:
            h.remove()


def test_gpt_oss_s_attention_sinks_are_in_the_tapped_softmax_and_its_entropy(tmp_path: Path) -> None:
    """GPT-OSS's rows also spread over each head's sink logit: without it the tapped probabilities were 0.52 off
    the model's own. The recorded entropy is of the whole row, the sink's share (1 - the row's sum of the model's
    probabilities, which drop the sink) included, against float64."""
    model = build("gpt_oss")
    model.set_attn_implementation("eager")
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.sinks.normal_(0.0, 2.0)  # sinks that matter (from_config draws them near 0)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    path = tmp_path / "runs.sqlite"
    want = []
    with attach(model, opt, store=path, every=1) as probe:
        probe._keep_attention = True
        out = model(input_ids=ids(batch=2), output_attentions=True)
        for i, eager in enumerate(out.attentions):
            torch.testing.assert_close(probe.attention_probs[i], eager.detach(), atol=1e-5, rtol=0)
            p = eager.detach().double()
            sink = (1 - p.sum(-1)).clamp(min=0)
            assert float(sink.min()) > 1e-3  # the sink takes a visible share of every row
            want.append(float((-(p * p.clamp(min=1e-300).log()).sum(-1) - sink * sink.clamp(min=1e-300).log()).mean()))
        out.logits.sum().backward()
        opt.step()
    np.testing.assert_allclose(stored_probe(path, probe.run_id, "attn_entropy", 1), want, rtol=1e-5)


@pytest.mark.parametrize("name", ["bloom", "mpt", "deberta-v2", "megatron-bert", "xglm", "trocr"])
def test_attention_written_by_hand_is_tapped_at_its_softmax_as_the_model_s_own(name: str, tmp_path: Path) -> None:
    """BLOOM, MPT, DeBERTa-v2 and Megatron-BERT compute their attention by hand (matmul, softmax), through neither
    Hugging Face's attention functions nor sdpa: their attention probes were empty, with a warning. The softmax
    their attention module gives its scores is tapped: the probabilities are the model's own (output_attentions).
    XGLM and TrOCR give theirs (batch * heads, T, T) scores: taken as (batch, heads, T, T), not left out."""
    model = build(name, **NO_DROPOUT.get(name, QUIET))
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with attach(model, opt, store=tmp_path / "runs.sqlite", every=1) as probe:
            probe._keep_attention = True
            for _ in range(2):  # the second probe step too: the softmax stays watched where it was needed
                out = model(input_ids=ids(batch=2), output_attentions=True)
                assert len(probe.attention_probs) == len(out.attentions) == 2
                for i, own in enumerate(out.attentions):
                    torch.testing.assert_close(probe.attention_probs[i], own.detach(), atol=1e-5, rtol=0)
                probe.attention_probs.clear()
                out.logits.sum().backward()
                opt.step()
    assert not [w for w in caught if "ln-viz" in str(w.message)]
    for step in (1, 2):
        assert np.isfinite(stored_probe(tmp_path / "runs.sqlite", probe.run_id, "attn_logit_max", step)).all()


def test_attention_no_tap_sees_is_said_once_and_the_other_probes_are_recorded(tmp_path: Path) -> None:
    """Attention by hand over (batch x heads, T, T) scores, in a model whose card knows no head count: describe
    finds it (its softmax), no tap can tell its sequences apart: one warning says so, its probes stay empty, every
    other probe is recorded."""
    from examples.plain_loop import Attention, TinyGPT

    def by_hand(self, x):  # noqa: ANN001, ANN202
        B, T, d = x.shape
        q, k, v = (t.view(B, T, self.heads, -1).transpose(1, 2) for t in self.c_attn(x).split(d, dim=2))
        scores = (q @ k.mT / (d // self.heads) ** 0.5).masked_fill(torch.ones(T, T).triu(1).bool(), -1e9)
        w = torch.nn.functional.softmax(scores.reshape(B * self.heads, T, T), dim=-1).view(B, self.heads, T, T)
        return self.c_proj((w @ v).transpose(1, 2).reshape(B, T, d))

    model = TinyGPT()
    for block in model.blocks:
        block.attn.forward = by_hand.__get__(block.attn, Attention)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    path = tmp_path / "runs.sqlite"
    x = torch.randint(0, 64, (4, 16))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with attach(model, opt, store=path, every=1) as probe:
            for _ in range(3):
                torch.nn.functional.cross_entropy(model(x).flatten(0, 1), x.flatten()).backward()
                opt.step()
                opt.zero_grad()
    said = [str(w.message) for w in caught if "attention probes (largest logit, entropy) stay empty" in str(w.message)]
    assert len(said) == 1 and "TinyGPT" in said[0]
    assert np.isnan(np.stack([stored_probe(path, probe.run_id, "attn_logit_max", s) for s in (1, 2, 3)])).all()
    assert np.isfinite(stored_probe(path, probe.run_id, "resid_stats", 3)).all()


def test_a_plain_loop_records_step_1_every_n_and_the_last_with_the_gradients_applied(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    model = build("llama")
    x = ids()
    model(input_ids=x)  # HF installs its own hooks on the first forward: the baseline is after it
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    baseline = hook_sizes(model, opt)
    applied: dict[int, list[float]] = {}
    with attach(model, opt, store=path, every=4, steps=10, label="plain") as probe:
        q = model.model.layers[1].self_attn.q_proj.weight
        down = model.model.layers[0].mlp.down_proj.weight

        def mine(optimizer, args, kwargs) -> None:  # registered after ln-viz's: sees the same .grad
            applied[probe.step] = [float(q.grad.norm()), float(down.grad.norm())]

        handle = opt.register_step_post_hook(mine)
        for _ in range(10):
            for _micro in range(2):  # gradient accumulation: two forwards per optimizer step
                model(input_ids=x, labels=x).loss.backward()
                with torch.no_grad():
                    model.eval()
                    model(input_ids=x)  # an evaluation pass: never probed, never counted
                    model.train()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.05)
            opt.step()
            opt.zero_grad()
            probe.log(lr=1e-3)
        handle.remove()
    assert hook_sizes(model, opt) == baseline
    with Store(path) as store:
        assert store.probe_steps(probe.run_id) == [1, 4, 8, 10]
        summary = store.summary(probe.run_id)
        assert (summary.source, summary.norm_position, summary.steps_done, summary.status) == (
            "attach", "pre", 10, "completed",
        )  # fmt: skip
        card = store.model_card(probe.run_id)
        assert card["placement"] == "pre" and card["blocks"] == "model.layers"
    names = [m.name for m in probe.card.matrices]
    iq, idown = names.index("self_attn.q_proj.weight"), names.index("mlp.down_proj.weight")
    for step in (1, 4, 8, 10):
        grads = stored_probe(path, probe.run_id, "grad_norm", step)
        assert grads.shape == (2, len(names))
        np.testing.assert_allclose([grads[1, iq], grads[0, idown]], applied[step], rtol=1e-5)
        assert np.isfinite(stored_probe(path, probe.run_id, "resid_stats", step)).all()
        assert np.isfinite(stored_probe(path, probe.run_id, "attn_logit_max", step)).all()
        assert (stored_probe(path, probe.run_id, "update_ratio", step) > 0).all()
    # a second attach works on the same model and leaves it as found again
    with attach(model, opt, store=path, every=1) as again:
        model(input_ids=x, labels=x).loss.backward()
        opt.step()
    assert again.run_id != probe.run_id and hook_sizes(model, opt) == baseline
    again.close()  # idempotent


def test_a_step_s_loss_is_the_mean_of_its_own_forwards_losses_to_the_last_step(tmp_path: Path) -> None:
    """Without `log(loss=...)`, a step's loss is the mean of the losses its training forwards returned (two here,
    gradient accumulation), not the next step's (as it was: each step showed the next one's, the last none); an
    evaluation pass under no_grad is not counted. A loop that runs past its planned `steps` is stored as planned
    to the steps it took (it read 5 of 4)."""
    model = build("llama")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    want = []
    with attach(model, opt, store=tmp_path / "runs.sqlite", every=2, steps=4) as probe:  # one step past its plan
        for s in range(5):
            losses = []
            for micro in range(2):
                x = ids(seed=10 * s + micro)
                loss = model(input_ids=x, labels=x).loss
                (loss / 2).backward()
                losses.append(float(loss.detach()))
            with torch.no_grad():
                model(input_ids=ids(seed=99), labels=ids(seed=99))
            opt.step()
            opt.zero_grad()
            want.append(sum(losses) / 2)
    with Store(tmp_path / "runs.sqlite") as store:
        data, _ = store.open_attached_run(probe.run_id)
        summary = store.summary(probe.run_id)
    assert (summary.steps, summary.steps_done) == (5, 5)  # a loop that ran past its planned steps: 5 of 5, not of 4
    assert data.probe_steps == [1, 2, 4]  # step 4 was the planned last; 5 is no multiple of 2
    np.testing.assert_allclose(data.scalars["loss"], want, rtol=1e-6)
    assert (np.abs(np.diff(want)) > 1e-3).all()  # each step's loss differs from the next: a shift would show


def test_a_model_trained_in_eval_mode_is_probed_with_one_warning_and_a_training_forward_wins(
    tmp_path: Path,
) -> None:  # fmt: skip
    """A model trained after model.eval() (dropout off, or model.train() forgotten after an evaluation) had its
    activation probes silently empty: its forward passes with gradients are probed now, with one warning. In a
    model trained in training mode, an eval-mode forward with gradients earlier in the step is replaced by the
    training forward: the stored activations are the ones a run without it stores."""
    model = build("llama")
    model.eval()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with attach(model, opt, store=tmp_path / "eval.sqlite", every=1) as probe:
            for _ in range(3):
                model(input_ids=ids(), labels=ids()).loss.backward()
                opt.step()
                opt.zero_grad()
    run_id, said = probe.run_id, [w for w in caught if "ln-viz" in str(w.message)]
    assert len(said) == 1 and "eval mode" in str(said[0].message)
    assert said[0].filename == __file__  # said at the user's line (opt.step() above), not inside torch
    for step in (1, 2, 3):
        assert np.isfinite(stored_probe(tmp_path / "eval.sqlite", run_id, "resid_stats", step)).all()
        assert np.isfinite(stored_probe(tmp_path / "eval.sqlite", run_id, "attn_logit_max", step)).all()
    stats = []
    for extra in (False, True):
        model = build("llama")
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        path = tmp_path / f"train-{extra}.sqlite"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with attach(model, opt, store=path, every=1) as probe:
                for s in range(2):
                    if extra:  # an evaluation with gradients on another batch, in eval mode, before the step's forward
                        model.eval()
                        model(input_ids=ids(seed=50 + s))
                        model.train()
                    model(input_ids=ids(seed=s), labels=ids(seed=s)).loss.backward()
                    opt.step()
                    opt.zero_grad()
        assert not [w for w in caught if "ln-viz" in str(w.message)]
        stats.append([stored_probe(path, probe.run_id, "resid_stats", step) for step in (1, 2)])
    np.testing.assert_array_equal(stats[0], stats[1])


@pytest.mark.slow  # a compiled model: ~5 s
def test_a_compiled_model_trained_in_eval_mode_is_probed_by_its_shadow_with_one_warning(tmp_path: Path) -> None:
    """The compiled model's shadow forward claims a probe step's forward as the eager model's hooks do: one with
    gradients in eval mode too (every probe of it was NaN, with no word)."""
    model = build("llama")
    model.eval()
    compiled = torch.compile(model, backend="eager")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    run_id, said = train_attached(compiled, opt, tmp_path / "runs.sqlite", steps=2)
    assert [w for w in said if "ln-viz" in w] == [w for w in said if "eval mode" in w] and len(said) >= 1
    assert len([w for w in said if "eval mode" in w]) == 1
    for step in (1, 2):
        assert np.isfinite(stored_probe(tmp_path / "runs.sqlite", run_id, "resid_stats", step)).all()
        assert np.isfinite(stored_probe(tmp_path / "runs.sqlite", run_id, "attn_logit_max", step)).all()


def test_attach_refuses_what_it_cannot_count_in_one_sentence(tmp_path: Path) -> None:
    """A model that is no module, an optimizer that is none (None, a name), a fractional or textual `every`, a
    `steps` under 1: one sentence each, where they failed deep inside (AttributeError, TypeError) or were taken
    silently (every=2.5 probed every 2, steps=0 never probed its last); numpy's integers are whole numbers."""
    model = build("llama")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    store = tmp_path / "runs.sqlite"
    refused = [
        ("nn.Module", dict(model="a model")), ("not a NoneType", dict(optimizer=None)),
        ("not a str", dict(optimizer="adam")),
        ("every=2.5", dict(every=2.5)), ("every='10'", dict(every="10")), ("every=0", dict(every=0)),
        ("steps=0", dict(steps=0)), ("steps=-3", dict(steps=-3)), ("every=True", dict(every=True)),
    ]  # fmt: skip
    for want, given in refused:
        args = {"model": model, "optimizer": opt} | given
        with pytest.raises((TypeError, ValueError)) as caught:
            attach(args.pop("model"), args.pop("optimizer"), store=store, **args)
        assert want in str(caught.value), str(caught.value)
    with attach(model, opt, store=store, every=np.int64(2), steps=np.int64(3)) as probe:
        assert (probe.every, probe.steps) == (2, 3)


def test_a_second_attach_to_the_same_model_closes_the_first_in_one_sentence(tmp_path: Path) -> None:
    """Two probes on one model would tap the same attention layers (the first recorded none and said its
    attention was never seen): a second attach (a notebook cell run again) stops the first with one warning."""
    model = build("llama")
    model(input_ids=ids())  # HF's own hooks, installed at the first forward
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    baseline = hook_sizes(model, opt)
    path = tmp_path / "runs.sqlite"
    first = attach(model, opt, store=path, every=1)
    model(input_ids=ids(), labels=ids()).loss.backward()
    opt.step()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with attach(model, opt, store=path, every=1) as second:
            for _ in range(2):
                model(input_ids=ids(), labels=ids()).loss.backward()
                opt.step()
                opt.zero_grad()
    said = [str(w.message) for w in caught if "ln-viz" in str(w.message)]
    assert len(said) == 1 and f"already attached (run {first.run_id})" in said[0]
    assert [w.filename for w in caught if "ln-viz" in str(w.message)] == [__file__]  # the attach(...) line
    assert second.card.attention_impl == first.card.attention_impl == "sdpa"  # not the first's tap's name
    assert hook_sizes(model, opt) == baseline
    with Store(path) as store:
        assert (store.summary(first.run_id).status, store.summary(first.run_id).steps_done) == ("stopped", 1)
        assert store.summary(second.run_id).status == "completed" and store.probe_steps(second.run_id) == [1, 2]
    assert np.isfinite(stored_probe(path, second.run_id, "attn_logit_max", 2)).all()
    first.close()  # closed already: nothing more happens


def test_the_steps_between_probe_steps_run_without_the_activation_hooks(tmp_path: Path) -> None:
    """The blocks' and norms' hooks are there for a probe step's forward only (armed at the post-hook of the
    step before, removed at the post-hook before a step that does not probe), so the forwards in between pay
    for no hook; the probe steps still record their activations."""
    model = build("llama")
    model(input_ids=ids())  # HF's own hooks, installed at the first forward
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    bare = sum(hook_sizes(model))
    added = []  # hooks on the model before each step's forward
    with attach(model, opt, store=tmp_path / "runs.sqlite", every=3) as probe:
        for s in range(1, 8):
            added.append(sum(hook_sizes(model)) - bare)
            x = ids(seed=s)
            model(input_ids=x, labels=x).loss.backward()
            opt.step()
            opt.zero_grad()
    # steps 1, 3, 6 (step 1's also on the attention modules: whether their softmax needs watching, seen there)
    between = min(added)  # the model's own two, there all along
    assert [n > between for n in added] == [True, False, True, False, False, True, False]
    assert min(added[0], added[2], added[5]) - between >= 1 + 2 * len(model.model.layers) and added[2] == added[5]
    for step in (1, 3, 6):
        assert np.isfinite(stored_probe(tmp_path / "runs.sqlite", probe.run_id, "norm_in_stats", step)).all()


def test_a_failing_probe_warns_once_and_the_run_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ln_viz.byom.forward as attach_module  # where log Z is summarised
    from ln_viz.summaries import StepSummaries  # where the forward hooks' tensors are

    def broken(*args):
        raise RuntimeError("broken summary")

    monkeypatch.setattr(StepSummaries, "_passes", broken)
    monkeypatch.setattr(attach_module, "tensor_stats", broken)  # log Z's
    model = build("gpt2")
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    x = ids()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with attach(model, opt, store=tmp_path / "runs.sqlite", every=1) as probe:
            for _ in range(3):
                model(input_ids=x, labels=x).loss.backward()
                opt.step()
                opt.zero_grad()
    ours = [w for w in caught if "ln-viz" in str(w.message)]
    # one warning per probe that failed (the activations' summaries and log Z's), each once in three steps
    assert sorted(str(w.message).split(" probe")[0] for w in ours) == ["ln-viz: the activations", "ln-viz: the logz"]
    assert probe.step == 3
    with Store(tmp_path / "runs.sqlite") as store:
        assert store.summary(probe.run_id).steps_done == 3
        assert store.probe_steps(probe.run_id) == [1, 2, 3]  # the gradients are still measured


def test_a_model_without_hf_attention_is_tapped_at_sdpa(tmp_path: Path) -> None:
    """A nanoGPT-style module calling F.scaled_dot_product_attention: the fallback tap sees each layer."""
    from examples.plain_loop import TinyGPT

    model = TinyGPT()
    card = describe(model)
    assert (card.blocks, card.placement, card.attention_impl) == ("blocks", "pre", "sdpa")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 64, (4, 16))
    with attach(model, opt, store=tmp_path / "runs.sqlite", every=1) as probe:
        logits = model(x)
        torch.nn.functional.cross_entropy(logits.flatten(0, 1), x.flatten()).backward()
        opt.step()
    assert probe.attention_tap == "sdpa"
    assert np.isfinite(stored_probe(tmp_path / "runs.sqlite", probe.run_id, "attn_entropy", 1)).all()


def test_log_z_and_the_loss_are_found_in_a_tuple_and_hidden_states_get_no_log_z(tmp_path: Path) -> None:
    """nanoGPT's forward returns (logits, loss), and Hugging Face's with return_dict=False (loss, logits, ...):
    their log Z was never recorded (it was read only from a tensor or an output's `.logits`). A model whose
    output is its hidden states (the head outside it) has no log Z, where the hidden states' was stored as one."""
    from examples.plain_loop import TinyGPT

    class NanoGPT(TinyGPT):  # nanoGPT's signature: forward(idx, targets) -> (logits, loss)
        def forward(self, idx, targets=None):  # noqa: ANN001, ANN202
            logits = super().forward(idx)
            if targets is None:
                return logits, None
            return logits, torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())

    class Body(TinyGPT):  # the blocks and final norm only: the head is the user's, outside the attached module
        def forward(self, idx):  # noqa: ANN001, ANN202
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x)
            return self.ln_f(x)

    x = torch.randint(0, 64, (4, 16), generator=torch.Generator().manual_seed(0))
    found = {}
    for name, model in (("nano", NanoGPT()), ("body", Body()), ("hf", build("llama"))):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        path = tmp_path / f"{name}.sqlite"
        with attach(model, opt, store=path, every=1) as probe:
            if name == "nano":
                logits, loss = model(x, x)
            elif name == "body":
                logits = model.head(model(x))
                loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), x.flatten())
            else:
                loss, logits = model(input_ids=x, labels=x, return_dict=False)[:2]
            loss.backward()
            opt.step()
        with Store(path) as store:
            data, _ = store.open_attached_run(probe.run_id)
        found[name] = (stored_probe(path, probe.run_id, "logz_stats", 1), data.scalars["loss"][0])
        want = torch.logsumexp(logits.detach().double(), -1)
        if name != "body":
            mean, std, rms, largest = want.mean(), want.std(correction=0), want.square().mean().sqrt(), want.abs().max()
            np.testing.assert_allclose(found[name][0][:4], [mean, std, rms, largest], rtol=1e-5)  # in Stat's order
            assert found[name][1] == pytest.approx(float(loss.detach()), rel=1e-6)  # the loss, without log(loss=)
    assert np.isnan(found["body"][0]).all() and np.isnan(found["body"][1])


def test_an_attached_run_is_listed_and_opens_with_its_card(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    model = build("olmo2")
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    with attach(model, opt, store=path, every=1, label="olmo") as probe:
        model(input_ids=ids(), labels=ids()).loss.backward()
        opt.step()
    with Store(path) as store:
        (summary,) = store.list_runs()
        assert summary.damage() is None and summary.norm_position == "reordered"
        data = store.open_run(probe.run_id)  # the app draws it (tests/test_byom_app.py): its own names, its card
    assert data.info.model_card == json.loads(probe.card.to_json()) and data.info.placement == "reordered"
    assert data.info.param_names == tuple(m.name for m in probe.card.matrices)
    assert data.info.config.steps == 1  # its planned steps, known when its loop ended
    from ln_viz.views.runs_list import runs_frame

    # the Runs table's warm-up cell: the user's loop's warm-up is not known, said in words (not a grey "None")
    assert [runs_frame([summary], lang)["warmup"][0] for lang in ("en", "ko")] == ["not known", "알 수 없음"]


def test_an_attached_run_exports_as_a_run_file_with_its_card_and_an_import_refuses_it(tmp_path: Path) -> None:
    import json

    from ln_viz.runfile.document import read_run_file
    from ln_viz.runfile.format import RunFileError
    from ln_viz.store.transfer import export_run

    path = tmp_path / "runs.sqlite"
    model = build("gemma3_text")
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    with attach(model, opt, store=path, every=2, label="gemma") as probe:
        for _ in range(3):
            model(input_ids=ids(), labels=ids()).loss.backward()
            opt.step()
            opt.zero_grad()
    with Store(path) as store:
        (out,) = export_run(store, probe.run_id, "run", tmp_path / "gemma.json")
        tables = export_run(store, probe.run_id, "csv", tmp_path / "tables")
    doc = json.loads(out.read_text())
    assert doc["model_card"]["placement"] == "peri" and doc["model_card"]["qk_norm"] is True
    assert doc["info"]["param_names"] == [m.name for m in probe.card.matrices]  # its own 7 matrices
    assert doc["probe_steps"] == [1, 2] and doc["probes"]["grad_norm"]["shape"] == [2, 2, 7]
    assert tables
    with pytest.raises(RunFileError) as e:
        read_run_file(out)
    assert "ln_viz.attach" in e.value.message() and "ln_viz.attach" in e.value.message("ko")


@pytest.mark.slow  # a Python process of its own importing torch (speed: out of the fast lane)
def test_import_ln_viz_stays_light_and_names_the_api_lazily() -> None:
    import subprocess
    import sys

    code = (
        "import sys, ln_viz; assert 'torch' not in sys.modules, 'torch imported'; "
        "f = ln_viz.describe; assert 'torch' in sys.modules and callable(ln_viz.attach); print('ok')"
    )
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr[-1000:]


def _attention_reference(q, k, keep):
    """Largest |logit| among the attended and mean entropy over rows that attend to something, in float64."""
    logits = (q.double() / q.shape[-1] ** 0.5) @ k.double().transpose(-1, -2)
    keep = keep.expand_as(logits)
    largest = logits[keep].abs().max().item()
    p = torch.softmax(logits.masked_fill(~keep, -torch.inf), -1)
    h = -(p * torch.log(p.clamp_min(1e-300))).sum(-1)
    rows = keep.any(-1)
    return largest, h[rows].mean().item()


@pytest.mark.parametrize(
    "case",
    [
        "causal",  # the largest logit 29.3: the entropy unshifted (ln_viz.probes.UNSHIFTED), numpy's exp
        "causal, logits past the unshifted bound",  # 264: shifted by each row's max
        "causal, torch's exp",  # on four threads: unshifted, the masked scores floored for torch's exp
        "padding with an infinite masked key",
        "additive",
    ],
)
def test_attention_stats_equal_a_float64_reference_on_each_mask_path(case: str) -> None:
    from ln_viz.byom.attention import attention_stats
    from ln_viz.probes import UNSHIFTED

    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(3, 2, 6, 4, generator=g) * 3, torch.randn(3, 2, 6, 4, generator=g) * 3
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    if case.startswith("causal"):
        keep, args = causal, (None, None, None, True)
        if "past" in case:
            q, k = q * 3, k * 3
        if "torch" in case:
            threads = torch.get_num_threads()
            torch.set_num_threads(4)
            try:
                largest, entropy, _ = attention_stats(q, k, *args)
            finally:
                torch.set_num_threads(threads)
            assert (largest, entropy) == pytest.approx(_attention_reference(q, k, keep), rel=1e-5)
            assert largest <= UNSHIFTED  # the unshifted path, as meant
            return
    elif case == "additive":
        keep = causal & (torch.arange(6) != 2)  # key 2 masked out too
        args = (torch.zeros(6, 6).masked_fill(~keep, torch.finfo(torch.float32).min), None, None, False)
    else:  # sequence 0 pads its last key, which is infinite: it must count nowhere
        keep = causal.expand(3, 1, 6, 6).clone()
        keep[0, :, :, 5] = False
        k[0, :, 5] = torch.inf
        args = (keep, None, None, False)
    largest, entropy, _ = attention_stats(q, k, *args)
    if case.startswith("causal"):  # which path each causal case takes: unshifted within UNSHIFTED, shifted past it
        assert (largest <= UNSHIFTED) == ("past" not in case)
    want_largest, want_entropy = _attention_reference(q, k, keep)
    assert largest == pytest.approx(want_largest, rel=1e-5)
    assert entropy == pytest.approx(want_entropy, rel=1e-5)


def _fractions_before(x: torch.Tensor, n: int) -> torch.Tensor:
    from ln_viz.schema import HIST_ASINH_LIMIT, HIST_BINS

    ax = x.abs().clamp_(max=1e15)
    sq = ax * ax
    asinh = sq.div_(sq.add(1).sqrt_().add_(1)).add_(ax).log1p_().copysign_(x)
    idx = asinh.mul_(HIST_BINS / (2 * HIST_ASINH_LIMIT)).add_(HIST_BINS / 2 + 1).clamp_(0, HIST_BINS + 1)
    return torch.bincount(idx.to(torch.int64), minlength=HIST_BINS + 2).to(torch.float64) / n


def _summary_before(x: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """ln_viz.probes.tensor_summary as it was before its passes were trimmed (kept here as the reference the
    faster one must equal bit for bit): clamp always, int64 indices, the stats assembled in torch; the std, where
    the mean's square is at most half the mean square, from those two (ln_viz.summaries.one_pass) as it is now."""
    from ln_viz.schema import HIST_BINS

    x = x.detach().float().reshape(-1)
    n = x.numel()
    lo, hi = torch.aminmax(x)
    if not (np.isfinite(float(lo)) and np.isfinite(float(hi))):  # infinities outside the edges, NaN nowhere
        f = _fractions_before(x[~torch.isnan(x)], n).numpy()
        stats = [float(x.mean()), float(x.std(correction=0)), float(x.square().mean().sqrt()), float(x.abs().max())]
        return f[1:-1].astype(np.float32), np.array([*stats, f[0], f[HIST_BINS + 1]], np.float32)
    mean = x.sum() / n
    centred = x - mean
    var, ms = torch.dot(centred, centred) / n, torch.dot(x, x) / n
    fractions = _fractions_before(x, n)
    stats = torch.stack([mean, var.sqrt(), ms.sqrt(), torch.maximum(-lo, hi)]).to(torch.float64)
    if float(mean) ** 2 <= 0.5 * float(ms):  # since then: the std as sqrt(E[x^2] - mean^2) in float64 (one_pass)
        stats[1] = float(np.float32(np.sqrt(max(float(torch.dot(x, x)) / n - float(mean) ** 2, 0.0))))
    out = np.concatenate([stats.numpy(), fractions[[0, HIST_BINS + 1]].numpy()])
    return fractions[1:-1].numpy().astype(np.float32), out.astype(np.float32)


@pytest.mark.parametrize("fill", ["-inf", "finfo", "float16 min", "-1e9", "bert -10000 added"])
def test_a_mask_filled_by_hand_is_no_logit_at_the_softmax_tap(fill: str) -> None:
    """Hand-written attention masks with what its authors write: -inf, the dtype's minimum, float16's after a cast
    to float32 (MPT under autocast: its largest logit read 65504), -1e9, or BERT's -10000 added to the score."""
    from ln_viz.byom.attention import softmax_input_stats

    g = torch.Generator().manual_seed(0)
    scores = torch.randn(2, 4, 16, 16, generator=g)
    future = torch.ones(16, 16, dtype=torch.bool).triu(1)
    value = {"-inf": -math.inf, "finfo": torch.finfo(torch.float32).min, "float16 min": torch.finfo(torch.float16).min,
             "-1e9": -1e9}.get(fill)  # fmt: skip
    z = scores + future * -10000.0 if value is None else scores.masked_fill(future, value)
    largest, entropy, p = softmax_input_stats(z, probs=True)
    assert largest == pytest.approx(float(scores.masked_fill(future, 0).abs().amax()))
    torch.testing.assert_close(p, torch.softmax(scores.masked_fill(future, -math.inf), -1), atol=1e-6, rtol=0)


def test_a_flex_attention_block_mask_gives_what_its_dense_mask_gives() -> None:
    """Flex attention hands its attention function a BlockMask, not a tensor (the probe failed on it, and turned
    itself off): its mask_mod is evaluated per position, for each of the first 8 sequences (a document mask)."""
    from torch.nn.attention.flex_attention import create_block_mask

    from ln_viz.byom.attention import attention_stats

    docs = torch.tensor([[0] * 6 + [1] * 10] * 5 + [[0] * 11 + [1] * 5] * 5)  # two documents a sequence, 10 sequences

    def same_document_causal(b, h, q, kv):  # noqa: ANN001, ANN202
        return (q >= kv) & (docs[b, q] == docs[b, kv])

    block = create_block_mask(same_document_causal, B=10, H=None, Q_LEN=16, KV_LEN=16, device="cpu")
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(10, 4, 16, 8, generator=g), torch.randn(10, 4, 16, 8, generator=g)
    b, qi, ki = torch.meshgrid(torch.arange(10), torch.arange(16), torch.arange(16), indexing="ij")
    dense = same_document_causal(b, None, qi, ki)[:, None]  # (10, 1, 16, 16)
    got, want = attention_stats(q, k, block, probs=True), attention_stats(q, k, dense, probs=True)
    assert got[:2] == want[:2] and torch.equal(got[2], want[2])
    assert got[1] < attention_stats(q, k, causal=True)[1]  # fewer keys per row than causal alone: lower entropy


def test_the_trimmed_tensor_summary_equals_the_one_before_bit_for_bit() -> None:
    from ln_viz.schema import HIST_LIMIT
    from ln_viz.summaries import tensor_stats, tensor_summary

    g = torch.Generator().manual_seed(0)
    edges = torch.from_numpy(HIST_EDGES.astype(np.float32))
    near = torch.cat([edges, edges.nextafter(edges + 1), edges.nextafter(edges - 1)])  # on and beside each edge
    for i in range(120):  # sizes, scales from 1e-4 to past the last edge, inf and NaN
        x = torch.randn(int(torch.randint(1, 5000, (1,), generator=g)), generator=g) * 10.0 ** (i % 9 - 4)
        if i % 6 == 1:
            x[::7] = torch.inf
        elif i % 6 == 2:
            x[::5] = torch.nan
        elif i % 6 == 3:
            x[::3] = -torch.inf
        elif i % 6 == 4:  # the edges, and values up to where the clamp is skipped (0.99 of the last edge)
            x = torch.cat([near, (torch.rand(len(x), generator=g) * 2 - 1) * 0.99 * HIST_LIMIT])
        want, got = _summary_before(x), tensor_summary(x)
        np.testing.assert_array_equal(got[0], want[0], err_msg=f"histogram of case {i}")
        np.testing.assert_array_equal(got[1], want[1], err_msg=f"stats of case {i}")
        np.testing.assert_array_equal(tensor_stats(x), want[1], err_msg=f"stats alone of case {i}")


def test_the_slot_table_gives_the_slot_the_asinh_computation_gives_to_every_float_it_was_asked() -> None:
    """The histogram's table lookup (ln_viz.probes.table_bins) against the computation it tabulates: every
    float under the ~130 keys that hold an edge, at several alignments (a tensor's tail goes through the
    kernels' scalar path), and a million floats drawn over all bit patterns (all scales, denormals, zeros)."""
    from ln_viz.summaries import MIXED_SLOT, asinh_bins, slot_tables, table_bins

    coarse, _, _ = slot_tables()
    mixed = np.flatnonzero(coarse == MIXED_SLOT).astype(np.uint32)
    under = ((mixed[:, None] << 12) | np.arange(4096, dtype=np.uint32)).reshape(-1).view(np.float32)
    under = torch.from_numpy(under[np.isfinite(under)].copy())
    assert 120 < len(under) // 4096 < 140  # about one key per edge (the table is not mostly mixed)
    g = torch.Generator().manual_seed(0)
    drawn = torch.randint(-(2**31), 2**31 - 1, (1 << 20,), generator=g, dtype=torch.int64).to(torch.int32)
    drawn = drawn.view(torch.float32)
    drawn = torch.cat([drawn[torch.isfinite(drawn)], torch.tensor([0.0, -0.0, 1e-45, -1e-45, 3.4e38, -3.4e38])])
    for x in (under, under[5:], under[:-3], drawn, drawn[7:]):
        x = x.contiguous()
        got, want = table_bins(x), asinh_bins(x.clone())
        assert torch.equal(got, want), f"{int((got != want).sum())} of {len(x)} floats in another slot"


@pytest.mark.parametrize("case", ["flat", "flat, weight by weight", "mixed dtypes", "new storage"])
def test_the_update_ratio_s_weight_copies_give_each_weight_s_own_norms_bit_for_bit(case, monkeypatch) -> None:
    """The weights copied before an update (ln_viz.update_probes.WeightCopies: one flat buffer laid out by
    size, or a copy each) give ||before|| and ||after - before|| of each weight exactly as _foreach_norm of
    separate copies does: laid out flat (the difference by size group, or weight by weight past the group
    limit), copied one by one (weights of two dtypes), and laid out anew after a weight got new storage; and,
    asked for, the angle each weight turned (arccos of the float64 cosine: the steps here are ~1e-3 rad)."""
    from ln_viz.byom.measure import WeightCopies

    g = torch.Generator().manual_seed(0)
    shapes = [(8, 8), (8,), (8, 8), (5, 7), (8,), (8, 8)]
    params = [torch.randn(s, generator=g) for s in shapes]
    if case == "mixed dtypes":
        params[1] = params[1].double()
    if case == "flat, weight by weight":
        monkeypatch.setattr(WeightCopies, "GROUP_LIMIT", 0)
    copies = WeightCopies(params)
    for step in range(3):
        if case == "new storage" and step == 1:
            params[2].data = torch.randn(8, 8, generator=g)  # what load_state_dict(assign=True) does
        want_before = [p.clone() for p in params]
        copies.take()
        for p in params:
            p.add_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 1e-3)
        base, delta, turned = copies.norms(angles=bool(step % 2))  # the angles too on step 1 (ln-viz's own)
        assert base == [float(n.float()) for n in torch._foreach_norm(want_before)]  # as float32 norms
        assert delta == [float(n.float()) for n in torch._foreach_norm(torch._foreach_sub(want_before, params))]
        if step % 2:
            cos = [float((a.double() * b.double()).sum() / (a.double().norm() * b.double().norm()))
                   for a, b in zip(want_before, params)]  # fmt: skip
            np.testing.assert_allclose(turned, np.arccos(np.clip(cos, -1, 1)), rtol=2e-3)
        else:
            assert turned is None


def test_a_step_s_summaries_finished_together_equal_tensor_summary_bit_for_bit() -> None:
    """attach's hooks summarise a probed pass's tensors together (ln_viz.byom.summaries.StepSummaries): each
    histogram, stats row and massive_act as tensor_summary and median_abs give them alone, for sizes, scales
    past the edges, values on the edges, inf, NaN, a tensor added twice in a row, a strided view, bfloat16."""
    from ln_viz.schema import HIST_BINS, HIST_LIMIT
    from ln_viz.summaries import StepSummaries, median_abs, tensor_summary

    g = torch.Generator().manual_seed(0)
    edges = torch.from_numpy(HIST_EDGES.astype(np.float32))
    near = torch.cat([edges, edges.nextafter(edges + 1), edges.nextafter(edges - 1)])
    cases = []
    for i in range(40):
        x = torch.randn(int(torch.randint(1, 3000, (1,), generator=g)), generator=g) * 10.0 ** (i % 9 - 4)
        if i % 8 == 1:
            x[::7] = torch.inf
        elif i % 8 == 2:
            x[::5] = torch.nan
        elif i % 8 == 3:
            x = torch.cat([near, (torch.rand(len(x), generator=g) * 2 - 1) * 0.99 * HIST_LIMIT])
        elif i % 8 == 4:
            x = torch.randn(16, 32, generator=g).t()  # not contiguous
        elif i % 8 == 5:
            x = torch.randn(64, generator=g).to(torch.bfloat16)
        cases.append(x)
    cases.insert(7, cases[6])  # the same tensor twice in a row: Pre-LN's block output, the next norm's input
    # a value that is not finite before values in keys that hold an edge (a diverging step): where the inf came last
    # it was caught, where first the fine table's lookup ran past its end
    cases += [
        torch.cat([torch.tensor([v]), near, torch.randn(50, generator=g)]) for v in (math.inf, -math.inf, math.nan)
    ]
    n = len(cases)
    arrays = {
        "resid_hist": np.full((n, HIST_BINS), np.nan, np.float32),
        "resid_stats": np.full((n, 6), np.nan, np.float32),
        "massive_act": np.full(n, np.nan, np.float32),
    }
    summaries = StepSummaries()
    for i, x in enumerate(cases):
        summaries.add(arrays, x, ("resid_stats", i), ("resid_hist", i), massive=i)
    summaries.finish(arrays)
    for i, x in enumerate(cases):
        hist, stats = tensor_summary(x)
        np.testing.assert_array_equal(arrays["resid_hist"][i], hist, err_msg=f"histogram of case {i}")
        np.testing.assert_array_equal(arrays["resid_stats"][i], stats, err_msg=f"stats of case {i}")
        median = median_abs(x)
        want = np.float32(stats[3] / median if median > 0 else np.nan)
        np.testing.assert_array_equal(arrays["massive_act"][i], want, err_msg=f"massive_act of case {i}")


def test_log_z_from_the_loss_ssaved_log_softmax_is_within_an_ulp_of_float64() -> None:
    """log Z per token from the log-softmax the model's cross-entropy saved (x_0 - log p_0 at one column, no
    pass over the logits): as close to a float64 logsumexp as float32 logsumexp is, give or take two ulps of
    the row's logit range plus log Z, for a model's logits and for peaked ones (a spread of ~100 nats);
    without a loss, logsumexp itself."""
    import torch.nn.functional as F

    from ln_viz.byom.summaries import log_z, saved_log_softmax

    model = build("llama")
    model.train()
    x = ids()
    out = model(input_ids=x, labels=x)
    w = torch.randn(4, 16, 300, generator=torch.Generator().manual_seed(0), requires_grad=True)
    peaked = w * 30.0  # not a leaf: its grad_fn is what the saved log-softmax's input is traced to
    ce = F.cross_entropy(peaked.view(-1, 300), torch.zeros(64, dtype=torch.long))
    for logits, loss in ((out.logits, out.loss), (peaked, ce)):
        assert saved_log_softmax(loss, logits) is not None  # the fast path is the one measured
        got = log_z(logits, loss)
        d = logits.detach().double()
        want = torch.logsumexp(d, -1)
        old = (torch.logsumexp(logits.detach(), -1).double() - want).abs()
        ulp = torch.finfo(torch.float32).eps * (want.abs() + d.amax(-1) - d.amin(-1))
        assert bool(((got.double() - want).abs() <= old + 2 * ulp).all())
    assert torch.equal(log_z(out.logits), torch.logsumexp(out.logits.detach(), -1))  # no loss: logsumexp
