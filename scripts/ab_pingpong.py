"""A/B: [128, 128] forward tiles (one 64-column chunk of left and gate) with two persistent
programs per SM, against the checked-in [128, 256] tiles (two 128-column halves, one program per
SM).  Without warp specialisation (triton 3.6 on sm90) a program's epilogue stalls its tensor
cores; two resident programs let the warp scheduler run one's MMAs during the other's epilogue
(a ping-pong by occupancy, triton#9279).  v0.13 tried it with 64-row tiles (half the work per
weight tile: slower); a [128, 128] tile keeps 128 rows and fits twice in an SM at BK 64 and 2-3
stages (96 + 16 KB of shared memory each) when its registers are capped at 128 a thread.

The 1-chunk module is rendered on a CPU with black (``--render``, TILE_COLUMNS patched so that a
64-column chunk is a whole tile) into build/abpp/; the GPU run loads it with per-config
constants.  Training forward with factors against cuBLAS F.linear, interleaved do_bench medians;
outputs compared with the checked-in module; registers, spills and shared memory printed.

    python scripts/ab_pingpong.py --render          # here (black)
    PYTHONPATH=. python scripts/ab_pingpong.py      # on the GPU
"""

import statistics
import sys

sys.path.insert(0, ".")

ONE_CHUNK = "build/abpp/pp_silu_bn64_1chunk.py"

CONFIGS = {  # name: (module, constants, programs per SM, maxnreg)
    "checked in bn128 (128x256)": ("generated/glu_silu_bf16_bn128_sm90.py", {}, 1, None),
    "128x128 bk128 w8 s3, 1/SM": (ONE_CHUNK, {}, 1, None),
    "128x128 bk64 w8 s3, 2/SM": (ONE_CHUNK, {"BLOCK_K": 64, "TILE_BLOCK_K": 64}, 2, 128),
    "128x128 bk64 w8 s2, 2/SM": (
        ONE_CHUNK,
        {"BLOCK_K": 64, "TILE_BLOCK_K": 64, "NUM_STAGES": 2},
        2,
        128,
    ),
    "128x128 bk64 w4 s3, 2/SM": (
        ONE_CHUNK,
        {"BLOCK_K": 64, "TILE_BLOCK_K": 64, "NUM_WARPS": 4},
        2,
        255,
    ),
}

SHAPES = (
    (11136, 3584, 14336),
    (8192, 4096, 14336),
    (4096, 2048, 5632),
    (65536, 1024, 2816),
    (131072, 512, 1408),
)


def render():
    import codegen.render as r
    from codegen.spec import Spec

    spec = Spec.create(act="silu", bn=64, arch="sm90", dtype="bf16")
    r.TILE_COLUMNS = 0  # tile_chunks = 1: one 64-column chunk per tile
    for name, text in r.render(spec).items():
        if not name.startswith("test_"):
            assert "TILE_CHUNKS = 1" in text
            with open(ONE_CHUNK, "w") as f:
                f.write(text)
    print("wrote", ONE_CHUNK)


def with_maxnreg(mod, maxnreg):
    """The module's _launch, compiling its kernels with registers capped at ``maxnreg``."""
    real = mod._launch

    def launch(kernel, grid, key, args, device, num_warps, num_stages, *plan):
        full = (kernel.fn, device.index, num_warps, num_stages, *key)
        if full in mod._COMPILED or mod._INTERPRET:
            return real(kernel, grid, key, args, device, num_warps, num_stages, *plan)
        compiled = kernel[grid](
            *mod._descriptors(args),
            num_warps=num_warps,
            num_stages=num_stages,
            maxnreg=maxnreg,
        )
        mod._COMPILED[full] = (compiled, mod._DirectLaunch.of(compiled))

    mod._launch = launch


def loaded():
    from codegen.bench import load_module
    from codegen.tune import pin_fused

    mods = {}
    for name, (path, constants, per_sm, maxnreg) in CONFIGS.items():
        mod = load_module(path)
        pin_fused(mod)
        for k, v in constants.items():
            setattr(mod, k, v)
        if per_sm != 1:
            real = mod._device_sms
            mod._device_sms = lambda device, real=real, n=per_sm: n * real(device)
        if maxnreg is not None:
            with_maxnreg(mod, maxnreg)
        mods[name] = mod
    return mods


def main():
    import torch
    from triton.testing import do_bench

    from scripts.ab_occupancy import resources  # registers, spills, shared memory per kernel

    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    mods = loaded()
    for M, K, N in SHAPES:
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
        fns = {"cublas F.linear": lambda: torch.nn.functional.linear(x, w)}
        for k, m in mods.items():
            fns[k] = lambda m=m: m.glu_forward(x, w, save_factors=True)
        s = {k: [] for k in fns}
        for _ in range(5):
            for k, f in fns.items():
                s[k].append(do_bench(f, warmup=10, rep=60, return_mode="median"))
        r = {k: statistics.median(v) for k, v in s.items()}
        base = r["cublas F.linear"]
        print(f"SwiGLU {M}x{K}x{N}, training forward x cuBLAS:", flush=True)
        for k, v in r.items():
            print(f"  {k:32s} {v:8.3f} ms  {v / base:6.3f}x", flush=True)
        ref = None
        for k, m in mods.items():
            out, fac = m.glu_forward(x, w, save_factors=True)[:2]
            if ref is None:
                ref = (out, fac)
                continue
            err = max((out.float() - ref[0].float()).abs().max().item(), 0)
            print(f"    {k}: out max |diff| vs checked in {err:.3g}", flush=True)
        del x, w
        torch.cuda.empty_cache()
    resources(mods)


if __name__ == "__main__":
    render() if "--render" in sys.argv else main()
