#!/usr/bin/env python3
"""PyTorch peers of bench/attention.ts: gpt-oss sink attention on the CPU, at the benchmark's shapes.

One run per process; prints one JSON line. Implementations (--impl):
  eager       scores materialised, the sink as an extra softmax column (how Hugging Face's eager gpt-oss attention
              computes it), forward and backward;
  flex-sink   torch.nn.attention.flex_attention with return_lse, the sink applied through the log-sum-exp:
              out * sigmoid(lse - sink) (softmax over [scores, sink] without the sink column); add --compile for
              torch.compile;
  flex        flex_attention without the sink, compiled (--compile): PyTorch's fused CPU kernel, a speed anchor.
What PyTorch refuses (backward through FlexAttention on CPU, return_lse under torch.compile on CPU) is caught and
reported verbatim in "fwd_error" / "bwd_error". --mem-gib caps the data segment (RLIMIT_DATA, which counts anonymous mappings), so a run too big for the machine
fails with PyTorch's allocation error instead of waking the OOM killer.

  torch_attention.py --impl eager --t 2048 [--window 128] [--fwd-only] [--compile] [--reps 3] [--mem-gib 20]
  torch_attention.py --check CASE.bin       agreement with our kernels on the case bench/attention.ts wrote
  torch_attention.py --matmul               PyTorch's float32 matmul GFLOP/s at the shapes of our matmul benchmark
"""
from __future__ import annotations

import argparse
import json
import math
import resource
import struct
import sys
import time
from typing import Any, Callable

import torch

HQ, HKV, D = 64, 8, 64


def blas_info() -> str:
    """The BLAS line of torch.__config__.show(): a peer on the reference ('generic') BLAS is not reported."""
    for part in torch.__config__.show().replace("\n", ",").split(","):
        if "BLAS_INFO=" in part:
            return part.strip().split("BLAS_INFO=")[1]
    return "unknown"


def allowed_mask(t: int, window: int) -> torch.Tensor:
    i = torch.arange(t).view(t, 1)
    j = torch.arange(t).view(1, t)
    m = j <= i
    return m & (i - j < window) if window else m


def eager(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sinks: torch.Tensor, window: int) -> torch.Tensor:
    """Sink attention with every [Hq, T, T] matrix materialised (inputs [1, H, T, D])."""
    t = q.shape[2]
    rep = q.shape[1] // k.shape[1]
    kk = k.repeat_interleave(rep, dim=1)
    vv = v.repeat_interleave(rep, dim=1)
    s = (q @ kk.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
    s = s.masked_fill(~allowed_mask(t, window), float("-inf"))
    s = torch.cat([s, sinks.view(1, -1, 1, 1).expand(1, q.shape[1], t, 1)], dim=-1)
    p = torch.softmax(s, dim=-1)[..., :-1]
    return p @ vv


def flex_fn(t: int, window: int, sink: bool, compiled: bool) -> Callable[..., torch.Tensor]:
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    def mask_mod(b: Any, h: Any, qi: Any, ki: Any) -> Any:
        m = qi >= ki
        return m & (qi - ki < window) if window else m

    block_mask = create_block_mask(mask_mod, B=None, H=None, Q_LEN=t, KV_LEN=t, device="cpu")
    attn = torch.compile(flex_attention) if compiled else flex_attention

    def run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, sinks: torch.Tensor) -> torch.Tensor:
        if not sink:
            return attn(q, k, v, block_mask=block_mask, enable_gqa=True)
        o, lse = attn(q, k, v, block_mask=block_mask, enable_gqa=True, return_lse=True)
        return o * torch.sigmoid(lse - sinks.view(1, -1, 1)).unsqueeze(-1)

    return run


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


def timed(args: argparse.Namespace) -> dict[str, Any]:
    t, w = args.t, args.window
    name = f"torch-{torch.__version__}-{args.impl}{'-compiled' if args.compile else ''}"
    out: dict[str, Any] = {"peer": name, "impl": args.impl, "compiled": args.compile, "T": t, "window": w, "torch": torch.__version__,
                           "blas": blas_info(), "cpu_capability": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads()}
    gen = torch.Generator().manual_seed(0)
    grad = not args.fwd_only
    q = torch.randn(1, HQ, t, D, generator=gen, requires_grad=grad)
    k = torch.randn(1, HKV, t, D, generator=gen, requires_grad=grad)
    v = torch.randn(1, HKV, t, D, generator=gen, requires_grad=grad)
    sinks = (torch.randn(HQ, generator=gen) * 0.5).requires_grad_(grad)
    d_o = torch.randn(1, HQ, t, D, generator=gen) * 0.1
    if args.impl == "eager":
        fn: Callable[..., torch.Tensor] = lambda a, b, c, s: eager(a, b, c, s, w)
    else:
        fn = flex_fn(t, w, args.impl == "flex-sink", args.compile)
    best_fwd = best_total = math.inf
    for rep in range(args.warmup + args.reps):
        try:
            t0 = time.perf_counter()
            o = fn(q, k, v, sinks)
            t1 = time.perf_counter()
        except Exception as e:  # PyTorch's refusal or an allocation failure, reported as it is
            out["fwd_error"] = first_line(e)
            break
        if grad:
            try:
                o.backward(d_o)
            except Exception as e:
                out["bwd_error"] = first_line(e)
                grad = False
            for x in (q, k, v, sinks):
                x.grad = None
        t2 = time.perf_counter()
        del o
        if rep >= args.warmup:
            best_fwd = min(best_fwd, t1 - t0)
            if grad:
                best_total = min(best_total, t2 - t0)
    if best_fwd < math.inf:
        out["fwd_s"] = round(best_fwd, 4)
    if best_total < math.inf:
        out["fwdbwd_s"] = round(best_total, 4)
    out["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3)
    return out


def read_case(path: str) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """bench/attention.ts's case file: u32 header length, JSON header {t, window, arrays: [[name, shape]…]}, float32 LE."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<I", f.read(4))
        header = json.loads(f.read(n))
        arrays: dict[str, torch.Tensor] = {}
        for name, shape in header["arrays"]:
            count = math.prod(shape)
            values = struct.unpack(f"<{count}f", f.read(4 * count))
            arrays[name] = torch.tensor(values, dtype=torch.float64).reshape(shape)
    return header, arrays


def check(path: str) -> dict[str, Any]:
    header, a = read_case(path)
    t, w = header["t"], header["window"]
    res: dict[str, Any] = {"T": t, "window": w, "torch": torch.__version__, "blas": blas_info()}

    def inputs(dtype: torch.dtype, grad: bool) -> list[torch.Tensor]:
        xs = [a[n].to(dtype).unsqueeze(0).contiguous() for n in ("q", "k", "v")] + [a["sinks"].to(dtype).contiguous()]
        return [x.requires_grad_(True) for x in xs] if grad else xs

    def diffs(run: Callable[..., torch.Tensor], dtype: torch.dtype, backward: bool) -> dict[str, Any]:
        q, k, v, s = inputs(dtype, backward)
        o = run(q, k, v, s)
        d: dict[str, Any] = {"out": float((o.detach()[0].double() - a["out"]).abs().max())}
        if backward:
            try:
                o.backward(a["dO"].to(dtype).unsqueeze(0))
                for name, x in (("dq", q), ("dk", k), ("dv", v)):
                    d[name] = float((x.grad[0].double() - a[name]).abs().max())
                d["dsinks"] = float((s.grad.double() - a["dsinks"]).abs().max())
            except Exception as e:
                d["bwd_error"] = first_line(e)
        return d

    res["eager_float64"] = diffs(lambda q, k, v, s: eager(q, k, v, s, w), torch.float64, True)
    try:
        # forward only: PyTorch has no FlexAttention backward on the CPU
        res["flex_sink_float32"] = diffs(flex_fn(t, w, True, False), torch.float32, False)
    except Exception as e:
        res["flex_sink_float32"] = {"error": first_line(e)}
    return res


def matmul_rates() -> dict[str, Any]:
    """GFLOP/s = 2·M·N·K / median of 5 timed runs after 2 warm-ups, the convention of bench/matmul.ts."""
    out = []
    for m, k, n in ((512, 512, 512), (2048, 256, 1024)):
        gen = torch.Generator().manual_seed(0)
        a, b = torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen)
        times = []
        for rep in range(7):
            t0 = time.perf_counter()
            a @ b
            if rep >= 2:
                times.append(time.perf_counter() - t0)
        times.sort()
        out.append({"M": m, "K": k, "N": n, "gflops": round(2 * m * n * k / times[2] / 1e9, 1)})
    return {"torch": torch.__version__, "blas": blas_info(), "threads": torch.get_num_threads(), "matmul": out}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--impl", choices=["eager", "flex-sink", "flex"], default="eager")
    p.add_argument("--t", type=int, default=1024)
    p.add_argument("--window", type=int, default=0)
    p.add_argument("--fwd-only", action="store_true")
    p.add_argument("--compile", action="store_true")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--mem-gib", type=float, default=0, help="data-segment cap in GiB (0: none)")
    p.add_argument("--check", metavar="CASE", help="agreement with bench/attention.ts's case file")
    p.add_argument("--matmul", action="store_true", help="PyTorch's matmul rate at our benchmark's shapes")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    if args.mem_gib > 0:
        cap = int(args.mem_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))
    print(json.dumps(check(args.check) if args.check else matmul_rates() if args.matmul else timed(args)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
