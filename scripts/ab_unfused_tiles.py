"""Fused forward vs cuBLAS GEMM + one elementwise pass where the persistent kernel has few tiles.
The fused kernel's [128, 2 x 128] tiles are wave-quantised when there are few of them (2048 x
4096 x 1408: 176 tiles on 132 SMs, 1.33 waves run as 2), where cuBLAS picks smaller tiles or
splits K; the few-row rule (UNFUSED_MAX_ROWS) looks at M alone.  Training (factors) and
inference forwards, interleaved do_bench medians, x cuBLAS F.linear of the same size; the
unfused path is forced on a loaded copy (UNFUSED_MAX_ROWS huge), the fused one on another
(UNFUSED_MAX_ROWS 0, the wave rule off), and a third copy runs the module's own rule.

    PYTHONPATH=. python scripts/ab_unfused_tiles.py [MODULE.py] [--shape M,K,N ...] [--step]

--step adds a whole eager training step (glu forward + backward, host included) with the
module's own rule and with the fused kernel pinned.
"""

import statistics
import sys

import torch
from triton.testing import do_bench

sys.path.insert(0, ".")
from codegen.bench import load_module  # noqa: E402
from codegen.tune import pin_fused  # noqa: E402

SHAPES = [
    (1024, 4096, 1408),
    (2048, 4096, 1408),
    (3072, 4096, 1408),
    (4096, 4096, 1408),
    (8192, 4096, 1408),
    (2048, 2048, 2816),
    (2048, 8192, 2816),
    (1024, 2048, 5632),
    (2048, 2048, 5632),
    (512, 4096, 14336),
    (1024, 4096, 14336),
    (4096, 2048, 5632),
]


def main():
    args = sys.argv[1:]
    with_step = "--step" in args
    shapes = [tuple(map(int, args[i + 1].split(","))) for i, a in enumerate(args) if a == "--shape"]
    paths = [
        a for i, a in enumerate(args) if a.endswith(".py") and (i == 0 or args[i - 1] != "--shape")
    ]
    path = paths[0] if paths else "generated/glu_silu_bf16_bn128_sm90.py"
    fused, unfused, default = load_module(path), load_module(path), load_module(path)
    pin_fused(fused)  # the few-row and wave rules off
    unfused.UNFUSED_MAX_ROWS = 1 << 40
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(torch.cuda.get_device_name(), torch.__version__, path, flush=True)
    print(
        "M x K x N | tiles (waves) | cuBLAS ms | train fused / pass | infer fused / pass (x cuBLAS)"
    )
    for M, K, N in shapes or SHAPES:
        x = torch.randn(M, K, device="cuda", dtype=fused.DTYPE)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(fused.DTYPE)
        xg, wg = x.clone().requires_grad_(), w.clone().requires_grad_()
        dy = torch.randn(M, N, device="cuda", dtype=fused.DTYPE)

        def step(mod):
            def run():
                xg.grad = wg.grad = None
                mod.glu(xg, wg).backward(dy)

            return run

        fns = {
            "cublas": lambda: torch.nn.functional.linear(x, w),
            "train fused": lambda: fused.glu_forward(x, w, save_factors=True),
            "train pass": lambda: unfused.glu_forward(x, w, save_factors=True),
            "infer fused": lambda: fused.glu_forward(x, w, save_factors=False),
            "infer pass": lambda: unfused.glu_forward(x, w, save_factors=False),
            "train default": lambda: default.glu_forward(x, w, save_factors=True),
        }
        if with_step:
            fns["step fused"], fns["step default"] = step(fused), step(default)
        a, b = fused.glu_forward(x, w, save_factors=True), unfused.glu_forward(
            x, w, save_factors=True
        )
        err = max((p.float() - q.float()).abs().max().item() for p, q in zip(a, b))
        s = {k: [] for k in fns}
        for _ in range(5):
            for k, f in fns.items():
                s[k].append(do_bench(f, warmup=10, rep=50, return_mode="median"))
        r = {k: statistics.median(v) for k, v in s.items()}
        c = r["cublas"]
        tiles = -(-M // fused.BLOCK_M) * -(-(N // fused.CHUNK) // fused.TILE_CHUNKS)
        print(
            f"{M}x{K}x{N} | {tiles} ({tiles / sms:.2f}) | {c:.4f} | "
            f"{r['train fused'] / c:.3f} / {r['train pass'] / c:.3f} | "
            f"{r['infer fused'] / c:.3f} / {r['infer pass'] / c:.3f} | "
            f"train, the module's rule: {r['train default'] / c:.3f} | max |diff| {err:.3g}"
            + (
                f" | step ms fused {r['step fused']:.4f} / rule {r['step default']:.4f}"
                f" (rule picks {'pass' if default._unfused(M, N, K, sms) else 'fused'})"
                if with_step
                else ""
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
