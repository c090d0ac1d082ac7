"""Loads a gpt-oss checkpoint with MXFP4 experts (written by longrun, scripts/hf/make-mxfp4-model.ts) with Hugging Face
transformers' MXFP4 dequantiser and writes what transformers reads out of it.

    OUT=dir python3 scripts/hf/gpt_oss_mxfp4_reference.py CHECKPOINT_DIR

Writes to $OUT: mxfp4_reference.safetensors (the dequantised expert weights
`model.layers.N.mlp.experts.{gate_up_proj,down_proj}` as transformers holds them; `logits` for the token ids in
mxfp4_meta.json with the model in float32, and `logits_as_loaded` with the experts in bfloat16 as loaded),
mxfp4_meta.json.
"""
import json
import os
import sys

import torch
import transformers
from safetensors.torch import save_file
from transformers import GptOssForCausalLM, Mxfp4Config

src, out = sys.argv[1], os.environ["OUT"]
model = GptOssForCausalLM.from_pretrained(src, quantization_config=Mxfp4Config(dequantize=True), dtype=torch.float32,
                                          attn_implementation="eager").eval()
cfg = model.config
T = 64
ids = torch.randint(0, cfg.vocab_size, (2, T), generator=torch.Generator().manual_seed(11))
with torch.no_grad():
    # as loaded: transformers keeps the dequantised experts in bfloat16 and runs them in bfloat16
    logits_bf16 = model(input_ids=ids, use_cache=False).logits.float()
tensors = {"logits_as_loaded": logits_bf16.contiguous()}
for name, p in model.named_parameters():
    if ".mlp.experts." in name and not name.endswith("bias"):
        tensors[name] = p.detach().float().contiguous()
model = model.float()  # the same weights (bf16 holds MXFP4 values exactly), run in float32
with torch.no_grad():
    logits = model(input_ids=ids, use_cache=False).logits
tensors["logits"] = logits.contiguous()
save_file(tensors, os.path.join(out, "mxfp4_reference.safetensors"))
meta = {"route": "from_pretrained(quantization_config=Mxfp4Config(dequantize=True))", "transformers": transformers.__version__, "torch": torch.__version__, "attn": "eager", "input_ids": ids.tolist(),
        "parameters": {n: [list(p.shape), str(p.dtype)] for n, p in model.named_parameters()}}
with open(os.path.join(out, "mxfp4_meta.json"), "w") as f:
    json.dump(meta, f, indent=1)
print("logits", tuple(logits.shape), "experts", [k for k in tensors if "experts" in k][:2])
