"""A/B: two persistent programs per SM for the TMA forwards.  Without warp specialisation (triton
3.6 on sm90) a program's epilogue stalls its tensor cores; with two programs resident on an SM the
warp scheduler can run one's MMAs during the other's epilogue (a ping-pong by occupancy).  That
needs tiles small enough for two programs' registers and shared memory: BM 64 with 4 or 8 warps
and 2-3 stages.  The launch grid and the kernels' tile stride (NUM_SMS) get 2 x the SM count by
patching the loaded copy's _device_sms.  Training forward with factors against cuBLAS F.linear
/ one torch._grouped_mm, interleaved do_bench medians; outputs compared with the checked-in
tiling; each compiled kernel's registers, spills and shared memory printed.

    PYTHONPATH=. python scripts/ab_occupancy.py
"""

import statistics
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module, routing_sizes  # noqa: E402
from codegen.tune import apply_tiling  # noqa: E402

CONFIGS = {  # name: (tiling, programs per SM)
    "checked in (bm128 w8 s3)": ({}, 1),
    "bm64 w4 s2, 2/SM": ({"bm": 64, "num_warps": 4, "num_stages": 2}, 2),
    "bm64 w4 s3, 2/SM": ({"bm": 64, "num_warps": 4, "num_stages": 3}, 2),
    "bm64 w8 s2, 2/SM": ({"bm": 64, "num_warps": 8, "num_stages": 2}, 2),
    "bm128 w8 s2, 2/SM": ({"num_stages": 2}, 2),
}


def loaded(path):
    mods = {}
    for name, (tiling, per_sm) in CONFIGS.items():
        mod = load_module(path)
        apply_tiling(mod, tiling)
        if per_sm != 1:
            real = mod._device_sms
            mod._device_sms = lambda device, real=real, n=per_sm: n * real(device)
        mods[name] = mod
    return mods


def resources(mods):
    for name, mod in mods.items():
        for key, (compiled, _) in mod._COMPILED.items():
            fn = getattr(key[0], "__name__", str(key[0]))
            if "fwd" not in fn:
                continue
            md = compiled.metadata
            print(
                f"    {name}: {fn} regs {getattr(compiled, 'n_regs', '?')} spills "
                f"{getattr(compiled, 'n_spills', '?')} shared {getattr(md, 'shared', '?')} B"
            )


def report(label, fns, outputs):
    s = {k: [] for k in fns}
    for _ in range(5):
        for k, f in fns.items():
            s[k].append(do_bench(f, warmup=10, rep=60, return_mode="median"))
    r = {k: statistics.median(v) for k, v in s.items()}
    base = next(iter(r.values()))
    print(label, flush=True)
    for k, v in r.items():
        print(f"  {k:28s} {v:8.3f} ms  {v / base:6.3f}x", flush=True)
    ref = None
    for k, outs in outputs():
        if ref is None:
            ref = outs
            continue
        same = all(torch.equal(a, b) for a, b in zip(outs, ref))
        print(f"    {k}: bit-identical to the checked-in tiling: {same}", flush=True)


def main():
    dev, dt = "cuda", torch.bfloat16
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    dense = loaded("generated/glu_silu_bf16_bn128_sm90.py")
    for M, K, N in ((4096, 2048, 5632), (8192, 4096, 14336), (2048, 4096, 1408)):
        x = torch.randn(M, K, device=dev, dtype=dt)
        w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt)
        fns = {"cublas": lambda: torch.nn.functional.linear(x, w)}
        for k, m in dense.items():
            fns[k] = lambda m=m: m.glu_forward(x, w, save_factors=True)
        report(
            f"SwiGLU dense {M}x{K}x{N}, training forward x cuBLAS:",
            fns,
            lambda: ((k, m.glu_forward(x, w, save_factors=True)) for k, m in dense.items()),
        )
    resources(dense)
    grouped = loaded("generated/glu_silu_bf16_bn128_sm90_grouped.py")
    for T, K, N, E in ((65536, 2048, 768, 128), (16384, 4096, 14336, 8)):
        offs = torch.tensor(routing_sizes(T, E, "balanced"), device=dev).cumsum(0).to(torch.int32)
        x = torch.randn(T, K, device=dev, dtype=dt)
        w = (torch.randn(E, 2 * N, K, device=dev) / K**0.5).to(dt)
        wf = w.transpose(-2, -1)
        fns = {"gmm": lambda: torch._grouped_mm(x, wf, offs=offs)}
        for k, m in grouped.items():
            fns[k] = lambda m=m: m._grouped_forward(x, w, offs, None, True)
        report(
            f"SwiGLU grouped {T},{K},{N},{E} balanced, forward x gmm:",
            fns,
            lambda: ((k, m._grouped_forward(x, w, offs, None, True)) for k, m in grouped.items()),
        )
        del x, w, wf
        torch.cuda.empty_cache()
    resources(grouped)


if __name__ == "__main__":
    main()
