"""Probe: the SwiGLU training forward (bn 128 packed weight, bf16, sm90) written in Gluon, to
test whether an epilogue whose TMA stores overlap the next tile's main loop reaches cuBLAS.

The generated kernel (plain Triton 3.6) stores each tile's out, d_left and d_gate through one
staging buffer, each store waiting for the one before, after the tile's last MMA: the epilogue
runs while the tensor cores idle (perf log v0.15).  Here the staging buffers rotate
(EPI_BUFS of them; a store waits only for the one that last used its buffer) and the loads of
the next tile are in flight during the epilogue (nested loops over tiles and k-steps, the loads
STAGES - 1 steps ahead across tile boundaries).  One [BM, 2 BN] accumulator split in registers,
or two (left, gate: [BM, BN] each, two wgmmas per k-step).

    python scripts/gluon_forward_probe.py --compile      # any machine with triton 3.6: compile
                                                         # for sm90, print shared memory/spills
    python scripts/gluon_forward_probe.py                # an H200: check against the generated
                                                         # module, time vs cuBLAS and it ($OUT)
    python scripts/gluon_forward_probe.py --quick        # an H200: a smoke run (two shapes)

Written against triton 3.6's Gluon API (the H200 machines' version); compiles on triton 3.9
too through gluon_common's TMA names (compile-checked, not run).  Results: perf log v0.16.
"""

import json
import os
import sys

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gluon_common import (
    compile_report,
    compile_sm90,
    interleaved,
    ratios,
    rel_err,
    shapes_to_run,
    SHAPES,
)  # noqa: E402
from gluon_common import tile_coords as _tile_coords  # noqa: E402
from gluon_common import tma_load, tma_store  # noqa: E402

BM, BN, BK = 128, 128, 64


@gluon.jit
def _issue_loads(
    p,
    total,
    kk,
    pid_m,
    pid_n,
    x_desc,
    w_desc,
    x_bufs,
    wl_bufs,
    wg_bufs,
    bars,
    STAGES: gl.constexpr,
    ONE_ACC: gl.constexpr,
):
    """Loads of k-step p (of all this program's tiles, in order: step kk of tile (pid_m, pid_n))
    into slot p % STAGES; with ONE_ACC the weight tile is one [2 BN, BK] load (wl_bufs)."""
    BLOCK_M: gl.constexpr = x_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = x_desc.block_type.shape[1]
    pred = p < total
    slot = p % STAGES
    bar = bars.index(slot)
    mbarrier.expect(bar, x_desc.block_type.nbytes + 2 * BLOCK_M * BLOCK_K * 2, pred=pred)
    tma_load(x_desc, [pid_m * BLOCK_M, kk * BLOCK_K], bar, x_bufs.index(slot), pred)
    if ONE_ACC:
        W_ROWS: gl.constexpr = w_desc.block_type.shape[0]
        tma_load(w_desc, [pid_n * W_ROWS, kk * BLOCK_K], bar, wl_bufs.index(slot), pred)
    else:
        BLOCK_N: gl.constexpr = w_desc.block_type.shape[0]
        w_row = pid_n * 2 * BLOCK_N
        tma_load(w_desc, [w_row, kk * BLOCK_K], bar, wl_bufs.index(slot), pred)
        tma_load(w_desc, [w_row + BLOCK_N, kk * BLOCK_K], bar, wg_bufs.index(slot), pred)


@gluon.jit
def _next_step(
    kk,
    tile,
    pid_m,
    pid_n,
    k_tiles,
    num_pid_m,
    num_pid_n,
    GROUP_M: gl.constexpr,
    NUM_SMS: gl.constexpr,
):
    """The k-step after step kk of tile `tile` (tile coordinates recomputed only on a new tile)."""
    kk += 1
    if kk == k_tiles:
        kk = 0
        tile += NUM_SMS
        pid_m, pid_n = _tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
    return kk, tile, pid_m, pid_n


@gluon.jit
def _stage_store(value, desc, row, col, epi, e, EPI_BUFS: gl.constexpr):
    """Store number e of this program through staging buffer e % EPI_BUFS: wait only for the
    store that used that buffer last (EPI_BUFS - 1 later ones may still be in flight)."""
    buf = epi.index(e % EPI_BUFS)
    tma.store_wait(pendings=EPI_BUFS - 1)
    buf.store(value)
    fence_async_shared()
    tma_store(desc, [row, col], buf)
    return e + 1


@gluon.jit
def glu_fwd_gluon(
    x_desc,
    w_desc,
    out_desc,
    f_desc,
    M,
    N,
    K,
    GROUP_M: gl.constexpr,
    NUM_SMS: gl.constexpr,
    STAGES: gl.constexpr,
    EPI_BUFS: gl.constexpr,
    ONE_ACC: gl.constexpr,
    num_warps: gl.constexpr,
):
    BLOCK_M: gl.constexpr = x_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = x_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = out_desc.block_type.shape[1]
    dtype: gl.constexpr = x_desc.dtype

    x_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_M, BLOCK_K], x_desc.layout)
    if ONE_ACC:
        wl_bufs = gl.allocate_shared_memory(dtype, [STAGES, 2 * BLOCK_N, BLOCK_K], w_desc.layout)
        wg_bufs = wl_bufs
    else:
        wl_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
        wg_bufs = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, BLOCK_K], w_desc.layout)
    epi = gl.allocate_shared_memory(dtype, [EPI_BUFS, BLOCK_M, BLOCK_N], out_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(bars.index(i), count=1)

    pid = gl.program_id(0)
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = N // BLOCK_N
    my_tiles = gl.cdiv(num_pid_m * num_pid_n - pid, NUM_SMS)
    k_tiles = gl.cdiv(K, BLOCK_K)
    total = my_tiles * k_tiles

    # producer: the k-step whose loads are issued next
    p_kk = 0
    p_tile = pid
    p_m, p_n = _tile_coords(pid, num_pid_m, num_pid_n, GROUP_M)
    for s in gl.static_range(STAGES - 1):
        if s > 0:
            p_kk, p_tile, p_m, p_n = _next_step(
                p_kk, p_tile, p_m, p_n, k_tiles, num_pid_m, num_pid_n, GROUP_M, NUM_SMS
            )
        _issue_loads(
            s,
            total,
            p_kk,
            p_m,
            p_n,
            x_desc,
            w_desc,
            x_bufs,
            wl_bufs,
            wg_bufs,
            bars,
            STAGES,
            ONE_ACC,
        )
    if ONE_ACC:
        mma_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, 2 * BLOCK_N, 16]
        )
    else:
        mma_layout: gl.constexpr = gl.NVMMADistributedLayout(
            version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BLOCK_N, 16]
        )
    # Nested loops (tiles, then k-steps; the loads run STAGES - 1 steps ahead across tiles):
    # with one flat loop and the epilogue in a branch, ptxas waits for every wgmma at the
    # branch's join ("warpgroup.wait is injected"), which serialises the MMAs.
    c = 0  # this program's k-steps consumed so far
    e = 0  # its stores issued so far
    for t in range(my_tiles):
        c_m, c_n = _tile_coords(pid + t * NUM_SMS, num_pid_m, num_pid_n, GROUP_M)
        if ONE_ACC:
            acc = gl.zeros([BLOCK_M, 2 * BLOCK_N], gl.float32, mma_layout)
        else:
            acc_l = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, mma_layout)
            acc_g = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, mma_layout)
        for kk in range(k_tiles):
            # the producer's next step (a branch on a new tile: before the MMAs)
            p_kk, p_tile, p_m, p_n = _next_step(
                p_kk, p_tile, p_m, p_n, k_tiles, num_pid_m, num_pid_n, GROUP_M, NUM_SMS
            )
            slot = c % STAGES
            mbarrier.wait(bars.index(slot), (c // STAGES) & 1)
            a = x_bufs.index(slot)
            if ONE_ACC:
                acc = warpgroup_mma(a, wl_bufs.index(slot).permute((1, 0)), acc, is_async=True)
                acc = warpgroup_mma_wait(1, deps=(acc,))
            else:
                acc_l = warpgroup_mma(a, wl_bufs.index(slot).permute((1, 0)), acc_l, is_async=True)
                acc_g = warpgroup_mma(a, wg_bufs.index(slot).permute((1, 0)), acc_g, is_async=True)
                acc_l, acc_g = warpgroup_mma_wait(2, deps=(acc_l, acc_g))
            # step c - 1's MMAs are done: its slot takes the loads of step c + STAGES - 1
            _issue_loads(
                c + STAGES - 1,
                total,
                p_kk,
                p_m,
                p_n,
                x_desc,
                w_desc,
                x_bufs,
                wl_bufs,
                wg_bufs,
                bars,
                STAGES,
                ONE_ACC,
            )
            c += 1
        if ONE_ACC:
            acc = warpgroup_mma_wait(0, deps=(acc,))
            left, gate = acc.reshape([BLOCK_M, 2, BLOCK_N]).permute((0, 2, 1)).split()
        else:
            left, gate = warpgroup_mma_wait(0, deps=(acc_l, acc_g))
        row = c_m * BLOCK_M
        sig = 1.0 / (1.0 + gl.exp(-gate))
        silu = gate * sig
        e = _stage_store((left * silu).to(dtype), out_desc, row, c_n * BLOCK_N, epi, e, EPI_BUFS)
        e = _stage_store(silu.to(dtype), f_desc, row, c_n * 2 * BLOCK_N, epi, e, EPI_BUFS)
        d_gate = left * sig * (1.0 + gate * (1.0 - sig))
        e = _stage_store(
            d_gate.to(dtype), f_desc, row, c_n * 2 * BLOCK_N + BLOCK_N, epi, e, EPI_BUFS
        )
    tma.store_wait(pendings=0)
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(i))


CONFIGS = {  # name: (STAGES, EPI_BUFS, ONE_ACC)
    "1acc_s3e1": (3, 1, True),
    "1acc_s3e2": (3, 2, True),
    "2acc_s3e1": (3, 1, False),
    "2acc_s3e2": (3, 2, False),
    "1acc_s4e1": (4, 1, True),
}


def _layouts():
    lay = gl.NVMMASharedLayout.get_default_for
    return (
        lay([BM, BK], gl.bfloat16),
        lay([BN, BK], gl.bfloat16),
        lay([BM, BN], gl.bfloat16),
    )


def compile_only():
    """Compile every config for sm90 on this machine (no GPU): shared memory, registers, spills."""
    xl, _, ol = _layouts()

    def args(stages, epi, one):
        return {
            "x_desc": ((BM, BK), xl),
            "w_desc": ((2 * BN if one else BN, BK), xl),
            "out_desc": ((BM, BN), ol),
            "f_desc": ((BM, BN), ol),
            "M": None,
            "N": None,
            "K": None,
            "GROUP_M": 16,
            "NUM_SMS": 132,
            "STAGES": stages,
            "EPI_BUFS": epi,
            "ONE_ACC": one,
            "num_warps": 8,
        }

    compile_report(glu_fwd_gluon, {n: args(*cfg) for n, cfg in CONFIGS.items()}, 8)
    ptx = compile_sm90(glu_fwd_gluon, args(3, 1, True), 8)[2]
    print(
        "  1acc_s3e1: wgmma",
        ptx.count("wgmma.mma_async"),
        "cp.async.bulk.tensor",
        ptx.count("cp.async.bulk.tensor"),
        "wait_group",
        ptx.count("cp.async.bulk.wait_group"),
    )


def run_gpu():
    import torch
    import torch.nn.functional as F
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    sys.path.insert(0, ".")
    from codegen.bench import load_module

    mod = load_module("generated/glu_silu_bf16_bn128_sm90.py")
    xl, wl, ol = _layouts()
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def gluon_fwd(x, w, out, f, stages, epi, one):
        M, K = x.shape
        N = w.shape[0] // 2
        xd = TensorDescriptor.from_tensor(x, [BM, BK], xl)
        wd = TensorDescriptor.from_tensor(w, [2 * BN if one else BN, BK], xl)
        od = TensorDescriptor.from_tensor(out, [BM, BN], ol)
        fd = TensorDescriptor.from_tensor(f, [BM, BN], ol)
        tiles = triton.cdiv(M, BM) * (N // BN)
        grid = (min(sms, tiles),)
        glu_fwd_gluon[grid](xd, wd, od, fd, M, N, K, 16, sms, stages, epi, one, num_warps=8)

    res = {}
    for M, K, N in shapes_to_run(SHAPES[:-1]):  # the timed ones (no ragged check)
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
        out_ref, fa, fb = mod._forward(x, w, None, True)
        ok = {}
        for name, (stages, epi, one) in CONFIGS.items():
            out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
            f = torch.empty(M, 2 * N, device="cuda", dtype=torch.bfloat16)
            try:
                gluon_fwd(x, w, out, f, stages, epi, one)
                torch.cuda.synchronize()
            except Exception as exc:
                print(M, K, N, name, "FAILED", str(exc)[-2000:], flush=True)
                continue
            d_out = (out.float() - out_ref.float()).abs().max().item()
            fa_all = fa if fa.shape[1] == 2 * N else torch.cat([fa, fb], 1)
            d_f = (f.float() - fa_all.float()).abs().max().item()
            rel = rel_err(out, out_ref)
            ok[name] = (out, f)
            print(
                f"{M}x{K}x{N} {name}: max|d out| {d_out:.3g} max|d f| {d_f:.3g} rel {rel:.2e}",
                flush=True,
            )
        fns = {
            "cublas": lambda: F.linear(x, w),
            "module": lambda: mod._forward(x, w, None, True),
        }
        for name in ok:
            out, f = ok[name]
            fns[name] = lambda out=out, f=f, cfg=CONFIGS[name]: gluon_fwd(x, w, out, f, *cfg)
        r = res[f"{M}x{K}x{N}"] = interleaved(fns)
        print(ratios(f"{M}x{K}x{N}", r), flush=True)
        del x, w, out_ref, fa, fb, ok
        torch.cuda.empty_cache()
    out_dir = os.environ.get("OUT", "build")
    with open(os.path.join(out_dir, "gluon_probe.json"), "w") as fh:
        json.dump(res, fh, indent=1)


if __name__ == "__main__":
    if "--compile" in sys.argv:
        compile_only()
    else:
        run_gpu()
