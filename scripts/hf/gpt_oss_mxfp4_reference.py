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
route = "from_pretrained(quantization_config=Mxfp4Config(dequantize=True))"
try:
    model = GptOssForCausalLM.from_pretrained(src, quantization_config=Mxfp4Config(dequantize=True), dtype=torch.float32,
                                              attn_implementation="eager").eval()
except Exception as e:  # the loader may insist on GPU kernels; dequantise with the library's own function instead
    print("from_pretrained failed:", repr(e)[:2000])
    from safetensors import safe_open
    from transformers import GptOssConfig
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    route = "transformers.integrations.mxfp4.convert_moe_packed_tensors(blocks, scales).transpose(1, 2)"
    cfg = GptOssConfig.from_pretrained(src)
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config
    cfg._attn_implementation = "eager"
    model = GptOssForCausalLM(cfg).float().eval()
    state = {}
    with safe_open(os.path.join(src, "model.safetensors"), "pt") as f:
        keys = list(f.keys())
        for k in keys:
            if k.endswith("_blocks"):
                base = k[: -len("_blocks")]
                deq = convert_moe_packed_tensors(f.get_tensor(k), f.get_tensor(base + "_scales"))
                state[base] = deq.transpose(1, 2).contiguous().float()
            elif not k.endswith("_scales"):
                state[k] = f.get_tensor(k).float()
    missing, unexpected = model.load_state_dict(state, strict=False)
    print("missing", missing, "unexpected", unexpected)
print("route:", route)
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
meta = {"route": route, "transformers": transformers.__version__, "torch": torch.__version__, "attn": "eager", "input_ids": ids.tolist(),
        "parameters": {n: [list(p.shape), str(p.dtype)] for n, p in model.named_parameters()}}
with open(os.path.join(out, "mxfp4_meta.json"), "w") as f:
    json.dump(meta, f, indent=1)
print("logits", tuple(logits.shape), "experts", [k for k in tensors if "experts" in k][:2])
