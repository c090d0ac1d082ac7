"""Writes a tiny gpt-oss checkpoint with Hugging Face transformers and the reference outputs our model must match.

Run where `transformers` and `torch` are installed:  OUT=dir python3 scripts/hf/gpt_oss_reference.py
Writes to $OUT: config.json + model.safetensors (save_pretrained, float32), reference.safetensors (logits, hidden
states, the loss's gradient for every parameter), meta.json (versions, token ids, loss, parameter names and shapes).
The weights are drawn so every feature bites: sinks of either sign, biases, a router whose top-k has no near ties,
expert activations that reach the SwiGLU clamp, a sliding window much shorter than the sequence, YaRN frequencies.
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import GptOssConfig, GptOssForCausalLM

out = os.environ["OUT"]
torch.manual_seed(1234)
torch.set_num_threads(4)

LAYERS = 4
base = dict(
    num_hidden_layers=LAYERS, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
    sliding_window=8, num_local_experts=4, num_experts_per_tok=2, intermediate_size=48, vocab_size=300,
    max_position_embeddings=2048, rms_norm_eps=1e-5, attention_bias=True, swiglu_limit=7.0,
    tie_word_embeddings=False, initializer_range=0.02,
    layer_types=["sliding_attention", "full_attention"] * (LAYERS // 2),
)
rope = dict(rope_type="yarn", factor=4.0, beta_fast=32.0, beta_slow=1.0, original_max_position_embeddings=512, truncate=False)
attempts = [
    dict(rope_parameters={**rope, "rope_theta": 10000.0}),
    dict(rope_scaling=rope, rope_theta=10000.0),
]
cfg = None
errors = []
for extra in attempts:
    try:
        cfg = GptOssConfig(**base, **extra)
        break
    except Exception as e:  # older/newer keyword names
        errors.append(repr(e))
if cfg is None:
    sys.exit("no GptOssConfig form worked: " + "; ".join(errors))
cfg._attn_implementation = "eager"
print("config:", cfg.to_dict())

model = GptOssForCausalLM(cfg).float().eval()
with torch.no_grad():
    for name, p in model.named_parameters():
        if name.endswith("sinks"):
            p.copy_(torch.randn_like(p) * 1.5)
        elif "norm" in name:
            p.copy_(1 + 0.2 * torch.randn_like(p))
        elif "router" in name:
            p.copy_(torch.randn_like(p) * (0.5 if name.endswith("weight") else 0.3))
        elif "gate_up_proj" in name and not name.endswith("bias"):
            p.copy_(torch.randn_like(p) * 0.6)
        elif name.endswith("bias"):
            p.copy_(torch.randn_like(p) * 0.1)
        else:
            p.copy_(torch.randn_like(p) * 0.12)

model.save_pretrained(out, safe_serialization=True)

T = 40
ids = torch.randint(0, cfg.vocab_size, (2, T), generator=torch.Generator().manual_seed(7))
res = model(input_ids=ids, output_hidden_states=True, use_cache=False)
logits = res.logits
V = logits.shape[-1]
loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1))
loss.backward()

tensors = {"logits": logits.detach().contiguous()}
for i, h in enumerate(res.hidden_states):
    tensors[f"hidden.{i}"] = h.detach().contiguous()
for name, p in model.named_parameters():
    tensors[f"grad.{name}"] = p.grad.detach().contiguous()
save_file(tensors, os.path.join(out, "reference.safetensors"))

# What the saved file holds (names may differ from named_parameters if save_pretrained converts them).
from safetensors import safe_open
with safe_open(os.path.join(out, "model.safetensors"), "pt") as f:
    saved = {k: list(f.get_slice(k).get_shape()) for k in f.keys()}
meta = {
    "transformers": transformers.__version__, "torch": torch.__version__, "attn": "eager", "dtype": "float32",
    "input_ids": ids.tolist(), "loss": loss.item(),
    "loss_definition": "mean cross-entropy of logits[:, :-1] against input_ids[:, 1:] over both rows",
    "named_parameters": {n: list(p.shape) for n, p in model.named_parameters()},
    "saved_tensors": saved,
    "hidden_states": "output_hidden_states: embeddings, then each layer's output; the last has the final norm applied",
}
with open(os.path.join(out, "meta.json"), "w") as f:
    json.dump(meta, f, indent=1)
print("loss", loss.item(), "logits", tuple(logits.shape), "saved", len(saved), "tensors")
