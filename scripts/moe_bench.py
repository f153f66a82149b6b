"""Grouped GLU (MoE experts' up-projection) on the GPU: fwd+bwd of grouped_glu vs a
torchtitan-style path (two torch._grouped_mm + activation, autograd) and the grouped floor
(3 x one torch._grouped_mm of the fused [T, K] x [E, K, 2N]); forward vs one gmm; activation
memory kept between forward and backward.  Balanced and skewed routing (one expert takes half
the tokens, two get none).  Usage: python scripts/moe_bench.py OUT.json"""
import json
import statistics
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import _torch_glu, load_module  # noqa: E402

SHAPES = [  # (module, T, K, N, E, bias)
    ("generated/glu_silu_bf16_bn128_sm90_grouped.py", 16384, 4096, 14336, 8, False),
    ("generated/glu_silu_bf16_bn128_sm90_grouped.py", 65536, 2048, 768, 128, False),
    ("generated/glu_swiglu_oai_bf16_bn64_sm90_grouped.py", 32768, 2880, 2880, 32, True),
]


def sizes_for(T, E, routing):
    if routing == "balanced":
        base = [T // E] * E
    else:  # one expert takes half, two get none, the rest share the other half
        rest = T - T // 2
        base = [T // 2, 0, 0] + [rest // (E - 3)] * (E - 3)
    base[-1] += T - sum(base)
    return base


def t(fn):
    return do_bench(fn, warmup=10, rep=60, return_mode="median")


def kept_mib(fn):
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    out = fn()
    torch.cuda.synchronize()
    k = torch.cuda.memory_allocated() - before - out.numel() * out.element_size()
    del out
    return k / 2**20


results = []
for path, T, K, N, E, bias in SHAPES:
    mod = load_module(path)
    glu = _torch_glu(mod)
    dev, dt = "cuda", mod.DTYPE
    torch.manual_seed(0)
    w1 = (torch.randn(E, N, K, device=dev) / K**0.5).to(dt)  # gate
    w3 = (torch.randn(E, N, K, device=dev) / K**0.5).to(dt)  # up
    packed = mod.pack_grouped_weight(w1, w3).contiguous()
    b1 = (torch.randn(E, N, device=dev) * 0.1).to(dt) if bias else None
    b3 = (torch.randn(E, N, device=dev) * 0.1).to(dt) if bias else None
    packed_b = torch.stack([mod.pack_bias(b1[e], b3[e]) for e in range(E)]) if bias else None
    for routing in ("balanced", "skewed"):
        sizes = sizes_for(T, E, routing)
        offs = torch.tensor(sizes, device=dev).cumsum(0).to(torch.int32)
        x = torch.randn(T, K, device=dev, dtype=dt)
        dy = torch.randn(T, N, device=dev, dtype=dt)
        xg = x.clone().requires_grad_()
        wg = packed.clone().requires_grad_()
        bg = packed_b.clone().requires_grad_() if bias else None
        w1g, w3g = w1.clone().requires_grad_(), w3.clone().requires_grad_()
        b1g = b1.clone().requires_grad_() if bias else None
        b3g = b3.clone().requires_grad_() if bias else None
        expert_of_row = torch.repeat_interleave(torch.arange(E, device=dev), torch.tensor(sizes, device=dev))
        w_fused = torch.cat([w3, w1], 1)  # [E, 2N, K], as a packed weight (same GEMM work)

        def ours():
            return mod.grouped_glu(xg, wg, offs, bg, check_offsets=False)

        def titan():
            gate = torch._grouped_mm(xg, w1g.transpose(-2, -1), offs=offs)
            up = torch._grouped_mm(xg, w3g.transpose(-2, -1), offs=offs)
            if bias:
                gate = gate + b1g[expert_of_row]
                up = up + b3g[expert_of_row]
            return glu(up, gate)

        def step(fn, params):
            def run():
                fn().backward(dy)
                for p in params:
                    p.grad = None
            return run

        params_ours = [xg, wg] + ([bg] if bias else [])
        params_titan = [xg, w1g, w3g] + ([b1g, b3g] if bias else [])
        gmm = lambda: torch._grouped_mm(x, w_fused.transpose(-2, -1), offs=offs)  # noqa: E731
        samples = {"ours": [], "titan": [], "gmm": [], "ours_fwd": []}
        for _ in range(3):  # interleaved rounds
            samples["gmm"].append(t(gmm))
            samples["ours_fwd"].append(t(lambda: mod._grouped_forward(x, packed, offs, packed_b, True)))
            samples["ours"].append(t(step(ours, params_ours)))
            samples["titan"].append(t(step(titan, params_titan)))
        r = {k: statistics.median(v) for k, v in samples.items()}
        r.update(shape=[T, K, N, E], routing=routing, act=mod.ACTIVATION, bias=bias)
        r["floor"] = 3 * r["gmm"]
        r["kept_ours_mib"] = kept_mib(ours)
        r["kept_titan_mib"] = kept_mib(titan)
        # correctness vs the torchtitan-style path at this shape
        xg.grad = None
        o1 = ours()
        o2 = titan()
        r["rel_err_out_vs_titan"] = ((o1.float() - o2.float()).norm() / o2.float().norm()).item()
        del o1, o2
        print(f"{T}x{K}x{N} E={E} {routing} {mod.ACTIVATION}{' +bias' if bias else ''}: fwd+bwd ours {r['ours']:.3f} "
              f"({r['ours'] / r['floor']:.3f}x floor) titan {r['titan']:.3f} ({r['titan'] / r['ours']:.2f}x ours) | "
              f"fwd {r['ours_fwd']:.3f} = {r['ours_fwd'] / r['gmm']:.3f}x gmm {r['gmm']:.3f} | kept MiB ours "
              f"{r['kept_ours_mib']:.0f} titan {r['kept_titan_mib']:.0f} | err {r['rel_err_out_vs_titan']:.4f}", flush=True)
        results.append(r)
        json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "results": results},
                  open(sys.argv[1], "w"), indent=1)
