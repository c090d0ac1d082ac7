#!/usr/bin/env python3
"""Peer of bench/model.ts: the same tiny gpt-oss in Hugging Face transformers (GptOssForCausalLM) on the CPU.

Reads a config.json our model writes (the same fields transformers' GptOssConfig takes), builds the model with
random weights, and times training steps the way bench/model.ts does: forward with the next-token loss on random
tokens of shape B × T, backward, gradient clipping at 1, AdamW; the median step after one warm-up, tokens/s, and the
process's peak RSS and its RSS before the first step (model built, PyTorch loaded). Prints one JSON line.

  transformers_gpt_oss.py --config CONFIG.json --batch 4 --seq 256 [--steps 6] [--attn eager] [--threads 2]
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from typing import Any

import torch
import transformers
from transformers import GptOssConfig, GptOssForCausalLM


def current_rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", required=True)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--attn", default="eager", help="transformers attn_implementation (gpt-oss sinks: eager)")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    with open(args.config) as f:
        raw: dict[str, Any] = json.load(f)
    fields = {k: v for k, v in raw.items() if k not in ("architectures", "torch_dtype", "dtype")}
    for k in ("swiglu_limit", "rope_theta", "rms_norm_eps", "initializer_range", "router_aux_loss_coef"):
        if isinstance(fields.get(k), int):
            fields[k] = float(fields[k])  # JSON writes 7.0 as 7; transformers' strict config wants a float
    cfg = GptOssConfig(**fields)
    cfg._attn_implementation = args.attn
    model = GptOssForCausalLM(cfg).float().train()
    base_rss = current_rss_mib()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), generator=gen)
    times: list[float] = []
    loss = float("nan")
    for _ in range(args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        out = model(input_ids=tokens, labels=tokens)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        times.append(time.perf_counter() - t0)
        loss = out.loss.detach().item()
    step = statistics.median(times[1:]) if len(times) > 1 else times[0]
    print(json.dumps({
        "peer": f"transformers-{transformers.__version__}-torch-{torch.__version__}", "attn": args.attn, "threads": torch.get_num_threads(),
        "params": sum(x.numel() for x in model.parameters()), "batch": args.batch, "seq": args.seq, "step_ms": round(step * 1e3, 1),
        "tokens_per_s": round(args.batch * args.seq / step, 1), "loss": round(loss, 4),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rss_before_training_mib": round(base_rss, 1),
    }))


if __name__ == "__main__":
    main()
