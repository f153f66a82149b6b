"""Host µs of each layer of one training step's launches on the GPU host (TMA forward), all in
one set of interleaved rounds: what the autograd Function, our launcher, Triton's launcher
(descriptor encoding) and the raw C launch each cost, beside eager's step.

    PYTHONPATH=. python scripts/host_layers.py generated/glu_silu_bf16_bn128_sm90.py [M K N]

The shape is small enough (default 1024x1024x1024) that the GPU never holds the host back, and
the forward rules are pinned (codegen.tune.pin_fused), so the fused TMA forward runs."""

import sys

import torch

from codegen.bench import _eager_glu, host_us, load_module
from codegen.tune import pin_fused


def main():
    mod = load_module(sys.argv[1])
    pin_fused(mod)  # the fused TMA forward, whatever the rows or tile waves
    M, K, N = (int(v) for v in sys.argv[2:5]) if len(sys.argv) > 4 else (1024, 1024, 1024)
    dev, dt = "cuda", mod.DTYPE
    x = torch.randn(M, K, device=dev, dtype=dt, requires_grad=True)
    w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt).requires_grad_()
    wc = w.detach().clone().requires_grad_()
    dy = torch.randn(M, N, device=dev, dtype=dt)
    xd, wd = x.detach(), w.detach()
    out = torch.empty((M, N), device=dev, dtype=dt)
    fac = torch.empty((M, 2 * N), device=dev, dtype=dt)
    eager_glu = _eager_glu(mod)
    print(
        f"{torch.cuda.get_device_name()} torch {torch.__version__} triton {mod.triton.__version__}"
    )
    print(f"{mod.SPEC['name']} {M}x{K}x{N}")

    def ours():
        mod.glu(x, w).backward(dy)
        x.grad = w.grad = None

    def eager():
        eager_glu(x, wc).backward(dy)
        x.grad = wc.grad = None

    class Bare(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            o = torch.empty((M, N), device=dev, dtype=dt)
            f = torch.empty((M, 2 * N), device=dev, dtype=dt)
            ctx.save_for_backward(x, w, f)
            return o

        @staticmethod
        def backward(ctx, g):
            x, w, f = ctx.saved_tensors
            return torch.mm(f, w), torch.mm(f.t(), x)

    def bare():  # the Function, the allocations and the two GEMMs: no Triton launch
        Bare.apply(x, w).backward(dy)
        x.grad = w.grad = None

    def fwd_launch():
        mod._launch_forward(xd, wd, None, out, fac, fac, N, mod.WRITE_FACTORS)

    def bwd_launch():
        mod._launch_backward(dy, fac, fac, N)

    fwd_launch()
    bwd_launch()
    torch.cuda.synchronize()
    ((key, (compiled, direct)),) = [
        (k, c) for k, c in mod._COMPILED.items() if k[0] is mod._glu_fwd_tma_kernel.fn
    ]
    # the forward's launch arguments as _launch_forward builds them: (tensor, block) pairs for
    # the descriptors (the direct launch), TensorDescriptor objects for CompiledKernel.run
    num_sms = torch.cuda.get_device_properties(0).multi_processor_count
    constexprs = (mod.BLOCK_M, mod.CHUNK, mod.TILE_BLOCK_K, mod.GROUP_M, num_sms, 1, False, False)
    split_tiles = mod._cdiv(N // mod.CHUNK, mod.TILE_CHUNKS)
    blocks = ((mod.BLOCK_M, mod.TILE_BLOCK_K), (2 * mod.CHUNK * mod.TILE_CHUNKS, mod.TILE_BLOCK_K))
    blocks += ((mod.BLOCK_M, mod.CHUNK),) * 2
    specs = (*zip((xd, wd, out, fac), blocks), None, wd, M, N, K, split_tiles, *constexprs)
    args = mod._descriptors(specs)
    tiles = mod._cdiv(M, mod.BLOCK_M) * mod._cdiv(N // mod.CHUNK, mod.TILE_CHUNKS)
    grid = (min(num_sms, tiles), 1, 1)
    stream = torch.cuda.current_stream().cuda_stream

    def compiled_run():
        compiled.run(
            *grid, stream, compiled.function, compiled.packed_metadata, None, None, None, *args
        )

    rows = {
        "eager step": eager,
        "ours step": ours,
        "bare Function + 2 mm (no Triton)": bare,
        "ours training forward only": lambda: mod.glu(x, w),
        "_launch_forward (TMA, 4 descriptors)": fwd_launch,
        "_launch_backward": bwd_launch,
        "compiled.run (args prebuilt)": compiled_run,
        "4 x _descriptor": lambda: [
            mod._descriptor(t, [mod.BLOCK_M, mod.CHUNK]) for t in (xd, wd, out, fac)
        ],
        "torch.cuda.current_device()": torch.cuda.current_device,
        "_launch_hooks()": mod._launch_hooks,
        "hash(key)": lambda: hash(key),
        "torch.empty [M, 2N]": lambda: torch.empty((M, 2 * N), device=dev, dtype=dt),
        "torch.mm(fac, w)": lambda: torch.mm(fac, wd),
    }
    if direct is not None:  # the module's own direct launch (triton 3.6's launcher layout)

        def direct_launch():
            direct(grid, stream, specs)

        rows["direct C launch (tensor maps cached)"] = direct_launch
        rows["one tensor-map encode"] = lambda: direct.encode(
            xd.data_ptr(), *direct.metas[0], xd.shape, xd.stride(), 0
        )
    fac2 = torch.empty((M, 2 * N), device=dev, dtype=dt)
    needs = (True, True, False)
    rows["_backward alone (no free)"] = lambda: mod._backward(dy, xd, wd, fac2, None, needs, False)
    free = mod._free

    def ours_no_free():
        mod._free = lambda t, eager: None
        try:
            ours()
        finally:
            mod._free = free

    rows["ours step, factors not freed early"] = ours_no_free
    for _ in range(2):
        res = host_us(rows, n=100, rounds=9, warmup=20)
        for name, us in res.items():
            print(f"{name:44s} {us:8.1f} us")
        print()
    import cProfile
    import io
    import pstats

    for fn in (ours, eager):
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(500):
            fn()
        prof.disable()
        torch.cuda.synchronize()
        text = io.StringIO()
        pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(22)
        print("\n".join(text.getvalue().splitlines()[4:34]))
    # correctness of the direct path: same output as the normal launch
    if "direct C launch (tensor maps cached)" in rows:
        out.zero_()
        fwd_launch()
        ref = out.clone()
        out.zero_()
        rows["direct C launch (tensor maps cached)"]()
        torch.cuda.synchronize()
        print("direct launch output identical:", torch.equal(out, ref))


if __name__ == "__main__":
    main()
