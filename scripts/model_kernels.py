"""Where a whole decoder's training step spends its GPU time, per MLP variant (the models of
`swiglu-gen bench-model`): every kernel's device time over a few profiled steps
(torch.profiler, CUDA activity), summed by kind (GEMMs, attention, the module's Triton
kernels, Liger's, copies, other elementwise), per step.  With --mlp-only the same for one
layer's MLP timed alone inside the model (its input taken from the model's own forward).

    PYTHONPATH=. python scripts/model_kernels.py MODULE.py --model llama-3.1-8b:8192 [--layers 4]
"""

import argparse
import collections

import torch
from torch.profiler import ProfilerActivity, profile

from codegen import bench_model as bm
from codegen.bench import load_module


def kind(name):
    n = name.lower()
    if "nvjet" in n or "gemm" in n or "cutlass" in n or "xmma" in n or "sm90_" in n:
        return "gemm"
    if "flash" in n or "fmha" in n or "attention" in n or "sdpa" in n:
        return "attention"
    if n.startswith("_glu") or n.startswith("_mlp") or "factor" in n or n.startswith("_act"):
        return "ours"
    if "liger" in n or "_swiglu" in n or "_geglu" in n:
        return "liger"
    if "copy" in n or "cat" in n or "memcpy" in n or "memset" in n:
        return "copy/cat/memset"
    return "other"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("--model", default="llama-3.1-8b:8192")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    mod = load_module(args.module)
    name, batch, seq = bm.parse_model(args.model, args.seq)
    config = bm.model_config(name, args.layers, bm._hf_act(mod))
    models = bm.build_variants(mod, config, "cuda")
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (batch, seq), generator=gen).cuda()
    probe = torch.randn(batch, seq, config.hidden_size, generator=gen).cuda()
    print(
        f"{name} {batch}x{seq} tokens, {args.layers} layers, {mod.SPEC['name']}, "
        f"torch {torch.__version__}"
    )
    for variant, model in models.items():
        step = bm._step(model, ids, probe)
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            start.record()
            for _ in range(args.steps):
                step()
            end.record()
            torch.cuda.synchronize()
        wall = start.elapsed_time(end) / args.steps
        runtime = collections.Counter()  # CUDA runtime / driver calls that can stall the queue
        for evt in prof.events():
            if evt.device_type == torch.autograd.DeviceType.CPU and any(
                w in evt.name
                for w in ("Synchronize", "Memcpy", "Malloc", "Free", "EventSync", "StreamWait")
            ):
                runtime[evt.name] += 1
        per_kind = collections.Counter()
        per_kernel = collections.Counter()
        calls = collections.Counter()
        for evt in prof.events():
            if evt.device_type != torch.autograd.DeviceType.CUDA:
                continue
            us = evt.device_time_total if hasattr(evt, "device_time_total") else evt.cuda_time_total
            per_kind[kind(evt.name)] += us / args.steps
            per_kernel[evt.name[:90]] += us / args.steps
            calls[evt.name[:90]] += 1
        total = sum(per_kind.values())
        print(
            f"\n== {variant}: {total / 1e3:.3f} ms of kernels per step, {wall:.3f} ms wall "
            "(profiled); " + ", ".join(f"{k} {v / 1e3:.3f}" for k, v in per_kind.most_common())
        )
        print(
            "   runtime calls per step: "
            + (", ".join(f"{k} {v / args.steps:g}" for k, v in runtime.most_common()) or "none")
        )
        for k, v in per_kernel.most_common(14):
            print(f"   {v / 1e3:8.3f} ms  x{calls[k] // args.steps:3d}  {kind(k):10s} {k}")
        model.zero_grad(set_to_none=True)


if __name__ == "__main__":
    main()
