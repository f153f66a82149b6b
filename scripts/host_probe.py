"""Host (CPU) cost of each piece of a training step, on a GPU: where do the microseconds go?

    PYTHONPATH=. python scripts/host_probe.py generated/glu_silu_bf16_bn128_sm90.py [M K N]

Each line: median host µs per call over 7 rounds of 200 calls (no synchronisation inside a
round; shapes small enough that the GPU keeps up, so the time is the CPU's).
"""

import statistics
import sys
import time

import torch
import triton

from codegen.bench import load_module


def host_us(fn, n=200, rounds=7):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    res = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        res.append((time.perf_counter() - t0) / n * 1e6)
        torch.cuda.synchronize()
    return statistics.median(res)


def main():
    mod = load_module(sys.argv[1])
    M, K, N = (int(v) for v in sys.argv[2:5]) if len(sys.argv) > 4 else (512, 1024, 1024)
    dev, dt = "cuda", mod.DTYPE
    x = torch.randn(M, K, device=dev, dtype=dt)
    w = (torch.randn(2 * N, K, device=dev) / K**0.5).to(dt)
    dy = torch.randn(M, N, device=dev, dtype=dt)
    print(f"{torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__}"
          f" module {mod.SPEC['name']} shape {M}x{K}x{N}")
    rows = {}

    def row(name, fn):
        rows[name] = host_us(fn)
        print(f"{name:48s} {rows[name]:8.1f} us", flush=True)

    row("torch.empty", lambda: torch.empty((M, N), device=dev, dtype=dt))
    row("F.linear (cuBLAS)", lambda: torch.nn.functional.linear(x, w))
    out = torch.empty((M, N), device=dev, dtype=dt)
    fac = torch.empty((M, 2 * N), device=dev, dtype=dt)
    row("glu_forward(save_factors, out, factors)", lambda: mod.glu_forward(x, w, save_factors=True, out=out, factors=fac))
    row("glu_forward(no factors)", lambda: mod.glu_forward(x, w))
    if hasattr(mod, "TensorDescriptor"):
        TD = mod.TensorDescriptor
        row("TensorDescriptor.from_tensor", lambda: TD.from_tensor(x, [mod.BLOCK_M, mod.BLOCK_K]))
        descs = [TD.from_tensor(x, [mod.BLOCK_M, mod.BLOCK_K]), TD.from_tensor(w, [2 * mod.CHUNK, mod.BLOCK_K]),
                 TD.from_tensor(out, [mod.BLOCK_M, mod.CHUNK]), TD.from_tensor(fac, [mod.BLOCK_M, mod.CHUNK])]
        nsm = torch.cuda.get_device_properties(0).multi_processor_count
        ntiles = triton.cdiv(M, mod.BLOCK_M) * (N // mod.CHUNK)
        g = min(nsm, ntiles)
        kw = dict(BLOCK_M=mod.BLOCK_M, BLOCK_N=mod.CHUNK, BLOCK_K=mod.BLOCK_K, GROUP_M=mod.GROUP_M, NUM_SMS=g,
                  SAVE_FACTORS=True)
        launch = lambda: mod._glu_fwd_tma_kernel[(g,)](*descs, M, N, K, **kw, num_warps=mod.NUM_WARPS,
                                                        num_stages=mod.NUM_STAGES)  # noqa: E731
        row("JIT launch, 4 prebuilt descriptors", launch)
        ck = launch()
        args = (*descs, M, N, K, *kw.values())
        stream = torch.cuda.current_stream().cuda_stream
        row("CompiledKernel.run, prebuilt descriptors",
            lambda: ck.run(g, 1, 1, stream, ck.function, ck.packed_metadata, None, None, None, *args))
        row("CompiledKernel.run, fresh descriptors", lambda: ck.run(
            g, 1, 1, stream, ck.function, ck.packed_metadata, None, None, None,
            TD.from_tensor(x, [mod.BLOCK_M, mod.BLOCK_K]), TD.from_tensor(w, [2 * mod.CHUNK, mod.BLOCK_K]),
            TD(out, out.shape, out.stride(), [mod.BLOCK_M, mod.CHUNK]),
            TD(fac, fac.shape, fac.stride(), [mod.BLOCK_M, mod.CHUNK]), M, N, K, *kw.values()))
    grid = (triton.cdiv(M, mod.BLOCK_M) * (N // mod.CHUNK),)
    pk = dict(BLOCK_M=mod.BLOCK_M, BLOCK_N=mod.CHUNK, BLOCK_K=mod.BLOCK_K, GROUP_M=mod.GROUP_M, SAVE_FACTORS=True)
    plaunch = lambda: mod._glu_fwd_kernel[grid](x, w, out, fac, M, N, K, x.stride(0), x.stride(1), w.stride(0),  # noqa
                                                 w.stride(1), out.stride(0), **pk, num_warps=mod.NUM_WARPS,
                                                 num_stages=mod.NUM_STAGES)
    row("JIT launch, pointer kernel", plaunch)
    pck = plaunch()
    pargs = (x, w, out, fac, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1), out.stride(0), *pk.values())
    stream = torch.cuda.current_stream().cuda_stream
    row("CompiledKernel.run, pointer kernel",
        lambda: pck.run(grid[0], 1, 1, stream, pck.function, pck.packed_metadata, None, None, None, *pargs))
    row("glu_backward_factors_ (JIT launch)", lambda: mod.glu_backward_factors_(dy, fac))
    row("torch.cuda.current_stream().cuda_stream", lambda: torch.cuda.current_stream().cuda_stream)
    row("triton driver get_current_stream", lambda: triton.runtime.driver.active.get_current_stream(0))
    row("torch.cuda.get_device_properties().mpc", lambda: torch.cuda.get_device_properties(x.device).multi_processor_count)
    row("torch.cuda.get_device_capability", lambda: torch.cuda.get_device_capability(x.device))

    xg = x.clone().requires_grad_()
    wg = w.clone().requires_grad_()
    with torch.no_grad():
        row("glu under no_grad", lambda: mod.glu(x, w))
    row("glu training forward (graph built, no bwd)", lambda: mod.glu(xg, wg))

    def step():
        mod.glu(xg, wg).backward(dy)
        xg.grad = wg.grad = None

    row("glu fwd+bwd step", step)
    wcat = w.clone().requires_grad_()

    def eager_step():
        left, gate = torch.nn.functional.linear(xg, wcat).chunk(2, dim=-1)
        (left * torch.nn.functional.silu(gate)).backward(dy)
        xg.grad = wcat.grad = None

    row("eager fwd+bwd step (silu)", eager_step)
    with torch.no_grad():
        row("eager forward under no_grad", lambda: (lambda lg: lg[0] * torch.nn.functional.silu(lg[1]))(
            torch.nn.functional.linear(x, w).chunk(2, dim=-1)))


if __name__ == "__main__":
    main()
