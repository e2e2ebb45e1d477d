"""Gradients at initialisation, measured in this process (torch): the paper's Figure 3, without training.
The Init lab (ln_viz/init_lab.py) runs this in worker processes for each norm position and depth.

For each seed: build the model at init, run one forward/backward pass on the seed's first training
batch, and read the gradient norm of every weight matrix, plus the residual stream's mean square
E||x_l||^2 / d after every block (l = 0 is the embedding input).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
import torch.nn.functional as F

from ln_viz.config import RunConfig
from ln_viz.corpus import Batches, Corpus, load_corpus
from ln_viz.model import build_model
from ln_viz.probes import watch
from ln_viz.schema import PARAM_NAMES, Stat
from ln_viz.update_probes import grad_norms

GRAD_COLUMNS = ["seed", "layer", "param", "grad_norm"]


def init_grads(cfg: RunConfig, seeds: Iterable[int], corpus: Corpus | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(gradient norms: seed, layer (1 = input side), param, grad_norm;
    residual stream: seed, layer (0 = embeddings), mean_sq (E||x_l||^2 / d), std)."""
    cfg.validate()
    corpus = corpus or load_corpus(cfg.corpus, cfg.user_text, cfg.seq_len)
    grad_rows, resid_rows = [], []
    for seed in seeds:
        scfg = cfg.replace(seed=int(seed))
        model = build_model(scfg, corpus.vocab_size)
        x, y = Batches(corpus.train_ids, cfg.batch_size, cfg.seq_len, int(seed), cfg.device).next()
        with watch(model) as act:
            logits = model(x)
        F.cross_entropy(logits.flatten(0, 1), y.flatten()).backward()
        per_param, _ = grad_norms(model)
        for layer in range(cfg.depth):
            for j, name in enumerate(PARAM_NAMES):
                grad_rows.append((int(seed), layer + 1, name, float(per_param[layer, j])))
        rms = np.concatenate([[act.input_stats[Stat.RMS]], act.resid_stats[:, Stat.RMS]])
        std = np.concatenate([[act.input_stats[Stat.STD]], act.resid_stats[:, Stat.STD]])
        for layer, (r, s) in enumerate(zip(rms, std)):
            resid_rows.append((int(seed), layer, float(r) ** 2, float(s)))
    grads = pd.DataFrame(grad_rows, columns=GRAD_COLUMNS)
    resid = pd.DataFrame(resid_rows, columns=["seed", "layer", "mean_sq", "std"])
    return grads, resid
