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


def test_gi_adams_first_step_is_the_math_and_not_adams():
    """GI-Adam (v0 = g0^2, Adam's other lines, bias correction included), by hand on two weights: the first update
    is lr * sqrt(1 - beta2) * g / (|g| + eps * sqrt(1 - beta2)); Adam's is lr * g / (|g| + eps)."""
    lr, (b1, b2), eps = 0.1, ADAM_BETAS, ADAM_EPS
    g = [0.5, -0.01]
    moved = {}
    for init in ("zero", "gi"):
        p = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
        opt = Adam([p], lr=lr, betas=ADAM_BETAS, eps=eps, init=init)
        p.grad = torch.tensor(g)
        opt.step()
        moved[init] = p.detach() - torch.tensor([1.0, -2.0])
    for k, gk in enumerate(g):
        m_hat = (1 - b1) * gk / (1 - b1)  # m1 / (1 - beta1)
        v_gi = b2 * gk**2 + (1 - b2) * gk**2  # v1 from v0 = g0^2: g0^2 itself
        want_gi = -lr * m_hat / ((v_gi / (1 - b2)) ** 0.5 + eps)
        want_adam = -lr * m_hat / (((1 - b2) * gk**2 / (1 - b2)) ** 0.5 + eps)
        assert moved["gi"][k].item() == pytest.approx(want_gi, rel=1e-5)
        assert moved["zero"][k].item() == pytest.approx(want_adam, rel=1e-5)
        assert abs(moved["gi"][k].item()) == pytest.approx(lr * (1 - b2) ** 0.5, rel=1e-4)  # 0.14 lr, either sign
        assert abs(moved["zero"][k].item()) == pytest.approx(lr, rel=1e-4)


def test_gi_adam_sets_v0_once_per_parameter_then_is_adam():
    """After the first step the two optimizers run the same recurrence: given the same state, the same step."""
    p = torch.nn.Parameter(torch.tensor([1.0, -2.0, 0.5]))
    opt = Adam([p], lr=0.1, betas=ADAM_BETAS, eps=ADAM_EPS, init="gi")
    g0, g1 = torch.tensor([0.5, -0.1, 2.0]), torch.tensor([-0.2, 0.3, 1.0])
    p.grad = g0
    opt.step()
    p.grad = g1
    opt.step()
    b2 = ADAM_BETAS[1]
    torch.testing.assert_close(opt.exp_avg_sq[0], b2 * g0**2 + (1 - b2) * g1**2)  # v1 = g0^2, then Adam's line
    assert opt.steps == [2]
