"""Shared pieces of the Gluon probes (scripts/gluon_forward_probe.py, gluon_ws_probe.py,
gluon_ws_dgrad_probe.py; perf log v0.16): the grouped tile order, the k-slice ring and the TMA
producer warp of the warp-specialised probes, the TMA copies under names that triton 3.6 and
3.9 both have, compiling a kernel for sm90 on any machine, and interleaved timing."""

import statistics
import sys

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

# triton 3.9 renamed the TMA copies (3.6: async_copy_global_to_shared / async_copy_shared_to_global)
# and made the old names raise; the probes call them through these two names.
tma_load = tma.async_load if hasattr(tma, "async_load") else tma.async_copy_global_to_shared
tma_store = tma.async_store if hasattr(tma, "async_store") else tma.async_copy_shared_to_global


@gluon.jit
def tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: gl.constexpr):
    """Grouped ordering (the generated modules' _tile_coords): GROUP_M row tiles share each
    weight tile while it is in L2."""
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@gluon.jit
def make_ring(a_desc, b_desc, num_pid_m, num_pid_n, k_tiles, NUM_SMS: gl.constexpr, STAGES):
    """The warp-specialised probes' k-slice ring: STAGES slots of A and B tiles in shared memory,
    a full and an empty barrier per slot (empty counts both consumer warp groups), and this
    program's share of the persistent tiles.  Returns the tuple that the producer and the
    consumers take as ``ring``."""
    A_SHAPE: gl.constexpr = a_desc.block_type.shape
    B_SHAPE: gl.constexpr = b_desc.block_type.shape
    a_bufs = gl.allocate_shared_memory(
        a_desc.dtype, [STAGES, A_SHAPE[0], A_SHAPE[1]], a_desc.layout
    )
    b_bufs = gl.allocate_shared_memory(
        b_desc.dtype, [STAGES, B_SHAPE[0], B_SHAPE[1]], b_desc.layout
    )
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(full.index(i), count=1)
        mbarrier.init(empty.index(i), count=2)
    pid = gl.program_id(0)
    my_tiles = gl.cdiv(num_pid_m * num_pid_n - pid, NUM_SMS)
    return a_bufs, b_bufs, full, empty, pid, my_tiles, k_tiles, num_pid_m, num_pid_n


@gluon.jit
def producer(
    a_desc,
    b_desc,
    ring,
    GROUP_M: gl.constexpr,
    NUM_SMS: gl.constexpr,
    STAGES: gl.constexpr,
    B_K_MAJOR: gl.constexpr,
):
    """The producer warp: the k-slices of this program's tiles (A [rows, K]; B [rows, K] when
    B_K_MAJOR, else [K, columns]) into a ring of STAGES slots; slot s is filled once both
    consumer warp groups released it (empty[s], count 2) and signals full[s] (TMA bytes).
    ``ring`` = (a_bufs, b_bufs, full, empty, pid, my_tiles, k_tiles, num_pid_m, num_pid_n), the
    tuple that the consumers get too."""
    a_bufs, b_bufs, full, empty, pid, my_tiles, k_tiles, num_pid_m, num_pid_n = ring
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    nbytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes
    p = 0
    for t in range(my_tiles):
        pid_m, pid_n = tile_coords(pid + t * NUM_SMS, num_pid_m, num_pid_n, GROUP_M)
        for kk in range(k_tiles):
            slot = p % STAGES
            # the first pass finds every slot free (a fresh barrier's phase of parity 1)
            mbarrier.wait(empty.index(slot), ((p // STAGES) & 1) ^ 1)
            bar = full.index(slot)
            mbarrier.expect(bar, nbytes)
            tma_load(a_desc, [pid_m * BLOCK_M, kk * BLOCK_K], bar, a_bufs.index(slot))
            if B_K_MAJOR:
                b_rows: gl.constexpr = b_desc.block_type.shape[0]
                b_coord = [pid_n * b_rows, kk * BLOCK_K]
            else:
                b_cols: gl.constexpr = b_desc.block_type.shape[1]
                b_coord = [kk * BLOCK_K, pid_n * b_cols]
            tma_load(b_desc, b_coord, bar, b_bufs.index(slot))
            p += 1


def compile_sm90(kernel, args, num_warps):
    """Compile a Gluon kernel for sm90 on this machine (no GPU needed): ``args`` maps each
    parameter to its value, a TMA descriptor to (block shape, shared layout), a runtime integer
    to None.  Returns (shared memory bytes, ptxas's register / spill line, the PTX)."""
    sys.path.insert(0, ".")
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from codegen.compile_check import _ptxas_usage

    signature, constexprs = {}, {}
    for param in kernel.params:
        value = args[param.name]
        if param.is_constexpr:
            signature[param.name], constexprs[param.name] = "constexpr", value
        elif isinstance(value, tuple):
            block, layout = value
            signature[param.name] = f"tensordesc<bf16{list(block)},{layout!r}>"
        else:
            signature[param.name] = "i32"
    compiled = triton.compile(
        GluonASTSource(kernel, signature, constexprs),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": num_warps},
    )
    ptx = compiled.asm["ptx"]
    return compiled.metadata.shared, _ptxas_usage(ptx, 90), ptx


def compile_report(kernel, configs, num_warps):
    """compile_sm90 for each (name, args) of ``configs``; one line each, failures reported."""
    for name, args in configs.items():
        try:
            shared, usage, _ = compile_sm90(kernel, args, num_warps)
        except Exception as exc:  # report and go on with the next config
            print(name, "FAILED", str(exc)[-3000:])
            continue
        print(name, "shared", shared, usage)


# The probes' shapes (M, K, N; the dgrad probe reads them as M, D, N): the bench's, a long M
# with a small weight, M not a multiple of the row tile, and a tiny ragged one (checked only).
SHAPES = [
    (4096, 2048, 5632),
    (2048, 4096, 1408),
    (8192, 4096, 14336),
    (11136, 3584, 14336),
    (65536, 1024, 2816),
    (4000, 2048, 5632),
    (300, 256, 384),
]


def rel_err(a, b):
    """Norm-relative error of a against the reference b, in float32."""
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


def shapes_to_run(shapes):
    """The probe's shapes; with ``--quick`` (a smoke run) the first and the last: one timed
    shape and the ragged one (checked, not timed); with ``--shape MxKxN`` (repeatable) those."""
    argv = sys.argv[1:]
    picked = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--shape"]
    if picked:
        return [tuple(int(v) for v in s.split("x")) for s in picked]
    return [shapes[0], shapes[-1]] if "--quick" in argv else shapes


def interleaved(fns, rounds=5, before=None):
    """Median ms of each function over ``rounds`` interleaved rounds of do_bench; ``before()``
    runs ahead of each timing (e.g. to restore a buffer that a kernel rewrites in place)."""
    from triton.testing import do_bench

    samples = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            if before is not None:
                before()
            samples[k].append(do_bench(fn, warmup=10, rep=60, return_mode="median"))
    return {k: statistics.median(v) for k, v in samples.items()}


def ratios(shape, r, base="cublas"):
    """One printed line: each median and its ratio to ``base``'s."""
    return f"{shape} " + " ".join(f"{k} {v:.4f} ({v / r[base]:.3f}x)" for k, v in r.items())
