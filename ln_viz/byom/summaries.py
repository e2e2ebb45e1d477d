"""log Z of an attached model's logits, from the log-softmax its own loss saved where it has one.

(The summaries of a probed pass, which lived here, are ln_viz.summaries.StepSummaries: ln-viz's own probes
use them too.)
"""

from __future__ import annotations

from typing import Any

import torch

_VIEWS = ("ViewBackward0", "UnsafeViewBackward0", "ReshapeAliasBackward0", "ToCopyBackward0")


def log_z(logits: torch.Tensor, loss: Any = None) -> torch.Tensor:
    """logsumexp of `logits` over the vocabulary, per token (float32). Where the model's own `loss` is a
    cross-entropy of these logits (a Hugging Face model given labels), from the log-softmax it saved for
    the backward: log p_j = x_j - log Z for every j, so log Z = x_0 - log p_0, read at the first column
    without a pass over the logits (logsumexp's two max passes cost 0.35 ms in the overhead benchmark's
    probe step, 16 x 64 tokens of 512, one thread; this 0.02; logsumexp's exp of every logit 1.2). The
    kernel rounds x_0 - max and then subtracts log sum exp(x - max), so x_0 - log p_0 is log Z to within an
    ulp or two of max - x_0 + log Z, the row's logit range (tests/test_byom.py checks against float64).
    Not finite (x_0 = -inf, say): logsumexp's."""
    saved = saved_log_softmax(loss, logits)
    logits = logits.detach()
    if saved is not None:
        vocab = logits.shape[-1]
        z = logits.reshape(-1, vocab)[:, 0].float() - saved.reshape(-1, vocab)[:, 0]
        if bool(torch.isfinite(z).all()):
            return z.view(logits.shape[:-1])
    return torch.logsumexp(logits.float(), -1)


def saved_log_softmax(loss: Any, logits: torch.Tensor) -> torch.Tensor | None:
    """The log-softmax over the last axis of `logits` (or of a view or float copy of them) that `loss`'s
    backward saved (cross_entropy, maybe divided by a count), or None."""
    node = getattr(loss, "grad_fn", None) if isinstance(loss, torch.Tensor) else None
    for _ in range(4):
        if node is None or node.name() == "LogSoftmaxBackward0":
            break
        node = node.next_functions[0][0] if node.next_functions else None
    if node is None or node.name() != "LogSoftmaxBackward0" or logits.grad_fn is None:
        return None
    up = node.next_functions[0][0]
    while up is not None and up is not logits.grad_fn and up.name() in _VIEWS:
        up = up.next_functions[0][0] if up.next_functions else None
    result = node._saved_result
    last = node._saved_dim in (-1, result.ndim - 1)
    if up is not logits.grad_fn or not last or result.shape[-1] != logits.shape[-1]:
        return None
    return result if result.numel() == logits.numel() and result.dtype == torch.float32 else None
