"""ln_viz.optim computes exactly what torch.optim computes: same weights after every step, bit for bit."""

import pytest
import torch
import torch.nn.functional as F

from ln_viz.config import ADAM_BETAS, ADAM_EPS, RunConfig
from ln_viz.model import build_model
from ln_viz.optim import SGD, Adam


def train(make_opt, steps: int = 15, lr_at=lambda t: 3e-3) -> list[torch.Tensor]:
    cfg = RunConfig(depth=2, d_model=32, heads=4, seq_len=16)
    model = build_model(cfg, 30)
    opt = make_opt(model.parameters())
    g = torch.Generator().manual_seed(0)
    for t in range(1, steps + 1):
        for group in opt.param_groups:
            group["lr"] = lr_at(t)
        x = torch.randint(0, 30, (4, 16), generator=g)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x).flatten(0, 1), x.flatten()).backward()
        if t == 3:
            model.blocks[0].ffn.w1.weight.grad = None  # a parameter that misses a step keeps its own count
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


@pytest.mark.parametrize("foreach", [False, True])
def test_adam_matches_torch_bit_for_bit(foreach):
    ours = train(lambda ps: Adam(ps, lr=3e-3, betas=ADAM_BETAS, eps=ADAM_EPS), lr_at=lambda t: 3e-3 * min(1, t / 5))
    theirs = train(
        lambda ps: torch.optim.Adam(ps, lr=3e-3, betas=ADAM_BETAS, eps=ADAM_EPS, foreach=foreach),
        lr_at=lambda t: 3e-3 * min(1, t / 5),
    )
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_sgd_matches_torch_bit_for_bit():
    ours = train(lambda ps: SGD(ps, lr=0.1), lr_at=lambda t: 0.1)
    theirs = train(lambda ps: torch.optim.SGD(ps, lr=0.1), lr_at=lambda t: 0.1)
    for a, b in zip(ours, theirs, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_zero_grad_and_a_step_without_gradients():
    p = torch.nn.Parameter(torch.ones(3))
    opt = Adam([p], lr=0.1, betas=ADAM_BETAS, eps=ADAM_EPS)
    opt.step()  # no gradient yet: nothing moves
    assert torch.equal(p.detach(), torch.ones(3))
    p.grad = torch.ones(3)
    opt.step()
    assert torch.allclose(p.detach(), torch.full((3,), 0.9))  # the first Adam step moves each weight by lr
    opt.zero_grad(set_to_none=False)
    assert torch.equal(p.grad, torch.zeros(3))
    opt.zero_grad()
    assert p.grad is None
