"""The Python part of a GLU training step's host cost, measured on any CPU: the module's kernel
launches and GEMMs are stubbed out (tiny CPU tensors), so what is timed is the Python around
them (checks, descriptors, launch keys, the autograd.Function), against a bare
autograd.Function that allocates the same buffers and returns preallocated gradients.

    PYTHONPATH=. python scripts/host_python_cpu.py MODULE.py [MODULE.py ...] [--profile]
        [--launch-path] [--two-nodes] [--split] [--parts] [--network [--keep-dy]] [--mlp]
        [--minimal]

With --two-nodes every step takes the big-step path (glu's backward as two autograd nodes,
LOW_PEAK_MIN_FLOP = 0); with --split also split factor buffers (SPLIT_MIN_SAVING < 0,
SPLIT_MAX_OVER_FLOOR = inf).  With --parts each module also steps with its weight in FusedGLU's
two parts (v0.26: glu(x, (weight_a, weight_b)), one tensor's rows; N of two forward tiles; since
v0.38 FusedGLU holds them only from PARTS_MIN_WEIGHT elements on, a layer far bigger than these
tiny tensors: this is that layout's Python at a tiny size).  With --mlp also the whole MLP's step
(mlp(x, packed, down); with --parts also with the packed weight in two parts, v0.49's FusedMLP;
--split then splits its preactivation too).  With --minimal also scripts/host_gap.py's minimal
step (a bare Function with the first module's two launches through its own launchers: the least
Python our step can be made of).  SORT=cumulative (cProfile's order)
and CALLERS=<name> (who calls the functions matching it) shape --profile's report.
With --network dy is made by a next node's backward (a fresh tensor, as in a network and
the bench's in-network step) instead of being the caller's; --keep-dy adds each module again
with RELEASE_DY off (v0.35: one node frees such a dy itself).  With --launch-path the module's own _launch runs too (key lookup, the direct launcher's argument
expansion), with only Triton's C launcher and tensor-map encoder replaced by no-ops; modules with
launch plans (v0.19) then replay them where the step's buffers come back at the same addresses
(always for one buffer here; CPU malloc moves split buffers, so --split misses most plans: on an
H200 every launch replays, scripts/plan_hits.py).

Prints µs per fwd+bwd step (medians of 15 interleaved rounds of 1000 steps) for each module,
the bare Function, and eager PyTorch's step on tiny float32 tensors (its dispatch and autograd
without launches); with --profile, a cProfile of the first module (its two-part step with
--parts).  A GPU host runs the same Python (plus the real launches and GEMMs), so a
change that lowers "ours - bare" here lowers the bench's host µs by about as much."""

import cProfile
import os
import pstats
import statistics
import sys
import time

import torch

sys.path.insert(0, ".")
from codegen.bench import in_network_step, load_module  # noqa: E402
from codegen.tune import pin_fused  # noqa: E402


def _fake_direct_launches(mod):
    """Let _launch run as on a GPU with triton 3.6: every kernel it is asked for is found
    "compiled" (first use: an entry with a _DirectLaunch whose C launcher and encoder do nothing).
    """
    mod._INTERPRET = False
    torch.cuda.current_device = lambda: None  # a CPU tensor's device index
    mod._CURRENT_STREAM = lambda index: 0

    class Compiled:
        function, packed_metadata = 0, (8, 1, 0)

        class run:
            launch_cooperative_grid = launch_pdl = False

    meta = {
        "swizzle": 3,
        "elem_size": 2,
        "elem_type": 10,
        "block_size": [64, 64],
        "fp4_padded": False,
    }
    real = mod._launch

    seen = set()

    def first_use(kernel, grid, key, args, device, num_warps, num_stages, plan=None):
        if (id(kernel), *key) not in seen:  # the entry under the key _launch looks up
            seen.add((id(kernel), *key))
            descs = [
                i
                for i, a in enumerate(args)
                if type(a) is tuple or type(a).__name__ == "TensorDescriptor"
            ]
            direct = mod._DirectLaunch(
                Compiled(), lambda *a: None, tuple(descs), (meta,) * len(descs), lambda *a: 0
            )
            entry = (Compiled(), direct)
            for k in (kernel, kernel.fn):  # modules of v0.12 key on kernel.fn, before on kernel
                mod._COMPILED[(k, device.index, num_warps, num_stages, *key)] = entry
        extra = () if plan is None else (plan,)  # modules before v0.19 take no plan key
        real(kernel, grid, key, args, device, num_warps, num_stages, *extra)

    mod._launch = first_use
    mod._harness_launch = real  # put back after the warm-up: the timed steps run _launch itself


def _prepare(path, launch_path):
    mod = load_module(path)
    mod._check_device = lambda device: 132  # no CUDA device here
    if launch_path:
        _fake_direct_launches(mod)
    else:
        mod._launch = lambda *args, **kwargs: None  # the kernel launch itself
    pin_fused(mod)  # the fused forward (no cuBLAS call), whatever the rows or tile waves
    if "--two-nodes" in sys.argv or "--split" in sys.argv:
        mod.LOW_PEAK_MIN_FLOP = 0
    if "--split" in sys.argv:
        mod.SPLIT_MIN_SAVING, mod.SPLIT_MAX_OVER_FLOOR = -1.0, float("inf")
        mod.PARTS_SPLIT_MIN_SAVING = -1.0  # (v0.27: a weight in two parts has its own)
    return mod


def main():
    paths = [a for a in sys.argv[1:] if not a.startswith("--")]
    mods = {
        f"{i}:{p.rsplit('/', 1)[-1]}": _prepare(p, "--launch-path" in sys.argv)
        for i, p in enumerate(paths)
    }
    first = next(iter(mods.values()))
    M, K = 512, 64
    parts = "--parts" in sys.argv
    two_tiles = "--split" in sys.argv or parts
    N = first.CHUNK * (2 * getattr(first, "TILE_CHUNKS", 1) if two_tiles else 1)
    x = torch.randn(M, K, dtype=first.DTYPE, requires_grad=True)
    w = torch.randn(2 * N, K, dtype=first.DTYPE, requires_grad=True)
    dy = torch.randn(M, N, dtype=first.DTYPE)
    grad_x, grad_w = torch.empty_like(x), torch.empty_like(w)
    assert all(m._tma_ok(x, w) for m in mods.values() if hasattr(m, "_tma_ok"))  # the TMA path

    results = {}

    def no_gemm(a, b, out=None):  # torch.mm -> a preallocated result (no CPU GEMM)
        shape = (a.shape[0], b.shape[1])
        if shape not in results:
            results[shape] = torch.empty(shape, dtype=a.dtype)
        return results[shape]

    torch.mm = no_gemm  # this process only; Bare below calls no GEMM either
    torch.Tensor.addmm_ = lambda self, a, b: self  # the split path's second grad_x GEMM

    class Bare(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            out = torch.empty((M, N), dtype=x.dtype)
            factors = torch.empty((M, 2 * N), dtype=x.dtype)
            ctx.save_for_backward(x, w, factors)
            return out

        @staticmethod
        def backward(ctx, g):
            ctx.saved_tensors
            return grad_x, grad_w

    def step(fn):
        in_network = in_network_step(fn, (x, w), dy)  # --network: dy made by the next node

        def run():
            if network:
                in_network()
            else:
                fn(x, w).backward(dy)
            x.grad = w.grad = None

        return run

    network = "--network" in sys.argv
    for name, m in list(mods.items()) if "--keep-dy" in sys.argv else ():
        if hasattr(m, "RELEASE_DY"):  # the same module, dy kept (v0.35's _release off)
            kept = _prepare(paths[int(name.split(":")[0])], "--launch-path" in sys.argv)
            kept.RELEASE_DY = False
            mods[name + " (RELEASE_DY off)"] = kept

    # Eager PyTorch's step on tiny float32 tensors (8 rows: its kernels cost ~nothing here, so
    # this is the dispatch and autograd of its ops, as a GPU host pays it, without the launches)
    xe = torch.randn(8, K, requires_grad=True)
    we = torch.randn(2 * N, K, requires_grad=True)
    dye = torch.randn(8, N)

    def eager():
        left, gate = torch.nn.functional.linear(xe, we).chunk(2, dim=-1)
        (left * torch.nn.functional.silu(gate)).backward(dye)
        xe.grad = we.grad = None

    steps = {name: step(m.glu) for name, m in mods.items()}
    for name, m in list(mods.items()) if parts else ():
        rows = 2 * m._weight_split(N)
        joined = w.detach().clone()
        wa, wb = torch.nn.Parameter(joined[:rows]), torch.nn.Parameter(joined[rows:])

        def parts_step(m=m, wa=wa, wb=wb):
            m.glu(x, (wa, wb)).backward(dy)
            x.grad = wa.grad = wb.grad = None

        steps[f"{name} (two parts)"] = parts_step
    if "--mlp" in sys.argv:  # the whole MLP: mlp(x, packed, down), and with the weight in parts
        down = torch.randn(K, N, dtype=first.DTYPE, requires_grad=True)
        dz = torch.randn(M, K, dtype=first.DTYPE)
        for name, m in list(mods.items()):
            if not hasattr(m, "mlp"):
                continue

            def mlp_step(m=m, weight=w):
                m.mlp(x, weight, down).backward(dz)
                x.grad = down.grad = w.grad = None
                for p in weight if isinstance(weight, tuple) else ():
                    p.grad = None

            steps[f"{name} mlp"] = mlp_step
            if parts:
                rows = 2 * m._weight_split(N)
                joined = w.detach().clone()
                pair = (torch.nn.Parameter(joined[:rows]), torch.nn.Parameter(joined[rows:]))
                steps[f"{name} mlp (two parts)"] = lambda m=m, pair=pair: mlp_step(m, pair)
    steps["bare"] = step(Bare.apply)
    if "--minimal" in sys.argv:  # bare plus the first module's two launches (host_gap's minimal)
        from host_gap import minimal_function

        steps["minimal (bare + our two launches)"] = step(minimal_function(first).apply)
    steps["eager (tiny fp32, real ops)"] = eager
    if "--mlp" in sys.argv:  # HF LlamaMLP's step on the same tiny float32 tensors
        gate_e, up_e = (torch.randn(N, K, requires_grad=True) for _ in range(2))
        down_e = torch.randn(K, N, requires_grad=True)
        dze = torch.randn(8, K)

        def eager_mlp():
            F = torch.nn.functional
            F.linear(F.silu(F.linear(xe, gate_e)) * F.linear(xe, up_e), down_e).backward(dze)
            xe.grad = gate_e.grad = up_e.grad = down_e.grad = None

        steps["eager MLP (tiny fp32, real ops)"] = eager_mlp
    for fn in list(steps.values()) * 300:
        fn()
    for m in mods.values():  # every kernel has its stand-in entry now: no wrapper in the timing
        if hasattr(m, "_harness_launch"):
            m._launch = m._harness_launch
    times = {k: [] for k in steps}
    for _ in range(15):  # interleaved rounds: this machine's speed drifts
        for name, fn in steps.items():
            t0 = time.perf_counter()
            for _ in range(1000):
                fn()
            times[name].append((time.perf_counter() - t0) / 1000 * 1e6)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(
        "µs per fwd+bwd step, Python only (launches and GEMMs stubbed), medians of 15 interleaved rounds"
    )
    for name in steps:
        extra = statistics.median(a - b for a, b in zip(times[name], times["bare"]))
        print(f"  {name:44s} {med[name]:7.1f}  (over bare autograd.Function: {extra:6.1f})")
    if "--profile" in sys.argv:
        prof = cProfile.Profile()
        prof.enable()
        first = next(iter(mods))
        which = f"{first} mlp" if "--mlp" in sys.argv else first
        profiled = steps[f"{which} (two parts)" if parts else which]  # (--parts: FusedGLU's step)
        for _ in range(3000):
            profiled()
        prof.disable()
        stats = pstats.Stats(prof).sort_stats(os.environ.get("SORT", "tottime"))
        stats.print_stats(25)
        if os.environ.get("CALLERS"):  # who calls the functions matching it
            stats.print_callers(os.environ["CALLERS"])


if __name__ == "__main__":
    main()
