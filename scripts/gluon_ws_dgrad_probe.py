"""Probe: FusedMLP's dgrad GEMM (dh = dY @ W_down with the GLU derivative in its epilogue, in
place over the saved preactivation h) in Gluon with warp specialisation, against cuBLAS dY @ W_down
and the generated module's Triton kernel (SwiGLU, bn 128, bf16, sm90).

The generated dgrad kernel is 1.4-1.8x cuBLAS (perf log v0.6, v0.16): its epilogue moves 10
bytes per output element (h read and rewritten, y written) after each tile's main loop, with no
overlap; loading h before the main loop spilled.  Here (the structure of gluon_ws_probe.py): a
producer warp feeds a ring of [dY | W_down] k-slices, two consumer warp groups each own 64 rows
of a [128, 128] tile; each consumer loads its h tile (left and gate, TMA) right after its
previous epilogue, so the load runs under the main loop, and stores grad_de over those same
shared-memory buffers; the groups run free, so one group's epilogue overlaps the other's MMAs.

    python scripts/gluon_ws_dgrad_probe.py --compile   # compile for sm90 (triton 3.6), any host
    python scripts/gluon_ws_dgrad_probe.py             # an H200: check and time ($OUT)
    python scripts/gluon_ws_dgrad_probe.py --quick     # an H200: a smoke run (two shapes)

Written against triton 3.6's Gluon API; compiles on triton 3.9 too through gluon_common's TMA
names (compile-checked, not run).  Results: perf log v0.16.
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
from gluon_common import compile_report, interleaved, make_ring, producer, ratios  # noqa: E402
from gluon_common import rel_err, shapes_to_run, SHAPES  # noqa: E402
from gluon_common import tile_coords as _tile_coords  # noqa: E402
from gluon_common import tma_load, tma_store  # noqa: E402

BM, BN, BK = 128, 128, 64  # dh tile rows, its hidden units (= the chunk), k-step over D
HM = BM // 2


@gluon.jit
def _load_h(
    h_desc,
    hl,
    hg,
    h_bar,
    t,
    pid,
    num_pid_m,
    num_pid_n,
    GROUP_M: gl.constexpr,
    NUM_SMS: gl.constexpr,
    WG: gl.constexpr,
):
    """This group's rows of tile t's [left | gate] preactivation -> hl, hg (barrier h_bar)."""
    HALF_M: gl.constexpr = h_desc.block_type.shape[0]
    CHUNK: gl.constexpr = h_desc.block_type.shape[1]
    pid_m, pid_n = _tile_coords(pid + t * NUM_SMS, num_pid_m, num_pid_n, GROUP_M)
    row = pid_m * 2 * HALF_M + WG * HALF_M
    mbarrier.expect(h_bar, 2 * h_desc.block_type.nbytes)
    tma_load(h_desc, [row, pid_n * 2 * CHUNK], h_bar, hl)
    tma_load(h_desc, [row, pid_n * 2 * CHUNK + CHUNK], h_bar, hg)


@gluon.jit
def _consumer(
    h_desc,
    y_desc,
    ring,
    GROUP_M: gl.constexpr,
    NUM_SMS: gl.constexpr,
    STAGES: gl.constexpr,
    bufs,
    WG: gl.constexpr,
):
    """One consumer warp group: its 64 rows of each tile's dh, then the epilogue in place over
    h.  ``bufs`` = its shared-memory (h left, h gate, y) tiles and the h barrier."""
    a_bufs, b_bufs, full, empty, pid, my_tiles, k_tiles, num_pid_m, num_pid_n = ring
    hl, hg, ysm, h_bar = bufs
    HALF_M: gl.constexpr = h_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = h_desc.block_type.shape[1]
    dtype: gl.constexpr = h_desc.dtype
    mma_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16]
    )
    _load_h(h_desc, hl, hg, h_bar, 0, pid, num_pid_m, num_pid_n, GROUP_M, NUM_SMS, WG)
    c = 0
    for t in range(my_tiles):
        pid_m, pid_n = _tile_coords(pid + t * NUM_SMS, num_pid_m, num_pid_n, GROUP_M)
        acc = gl.zeros([HALF_M, BLOCK_N], gl.float32, mma_layout)
        for kk in range(k_tiles):
            slot = c % STAGES
            mbarrier.wait(full.index(slot), (c // STAGES) & 1)
            a = a_bufs.index(slot).slice(WG * HALF_M, HALF_M, dim=0)
            acc = warpgroup_mma(a, b_bufs.index(slot), acc, is_async=True)
            acc = warpgroup_mma_wait(1, deps=(acc,))
            mbarrier.arrive(empty.index((c + STAGES - 1) % STAGES), pred=kk > 0)
            c += 1
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((c + STAGES - 1) % STAGES))
        # the epilogue: h of this tile (loaded during the main loop) -> y, grad_de in place
        mbarrier.wait(h_bar, t & 1)
        left = hl.load(mma_layout).to(gl.float32)
        gate = hg.load(mma_layout).to(gl.float32)
        sig = 1.0 / (1.0 + gl.exp(-gate))
        silu = gate * sig
        row = pid_m * 2 * HALF_M + WG * HALF_M
        col = pid_n * 2 * BLOCK_N
        ysm.store((left * silu).to(dtype))
        hl.store((acc * silu).to(dtype))
        hg.store((acc * left * sig * (1.0 + gate * (1.0 - sig))).to(dtype))
        fence_async_shared()
        tma_store(y_desc, [row, pid_n * BLOCK_N], ysm)
        tma_store(h_desc, [row, col], hl)
        tma_store(h_desc, [row, col + BLOCK_N], hg)
        tma.store_wait(pendings=0)  # hl, hg take the next tile's h
        if t + 1 < my_tiles:
            _load_h(h_desc, hl, hg, h_bar, t + 1, pid, num_pid_m, num_pid_n, GROUP_M, NUM_SMS, WG)


@gluon.jit
def dgrad_ws(
    dy_desc,
    wd_desc,
    h_desc,
    y_desc,
    M,
    N,
    D,
    GROUP_M: gl.constexpr,
    NUM_SMS: gl.constexpr,
    STAGES: gl.constexpr,
):
    BLOCK_M: gl.constexpr = dy_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = dy_desc.block_type.shape[1]
    BLOCK_N: gl.constexpr = wd_desc.block_type.shape[1]
    HALF_M: gl.constexpr = h_desc.block_type.shape[0]
    dtype: gl.constexpr = dy_desc.dtype

    h_bufs = gl.allocate_shared_memory(dtype, [4, HALF_M, BLOCK_N], h_desc.layout)
    y_bufs = gl.allocate_shared_memory(dtype, [2, HALF_M, BLOCK_N], y_desc.layout)
    h_bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(h_bars.index(i), count=1)
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = N // BLOCK_N
    k_tiles = gl.cdiv(D, BLOCK_K)
    ring = make_ring(dy_desc, wd_desc, num_pid_m, num_pid_n, k_tiles, NUM_SMS, STAGES)
    h0 = (h_bufs.index(0), h_bufs.index(1), y_bufs.index(0), h_bars.index(0))
    h1 = (h_bufs.index(2), h_bufs.index(3), y_bufs.index(1), h_bars.index(1))
    gl.warp_specialize(
        [
            (_consumer, (h_desc, y_desc, ring, GROUP_M, NUM_SMS, STAGES, h0, 0)),
            (_consumer, (h_desc, y_desc, ring, GROUP_M, NUM_SMS, STAGES, h1, 1)),
            (producer, (dy_desc, wd_desc, ring, GROUP_M, NUM_SMS, STAGES, False)),
        ],
        [4, 1],
        [240, 24],
    )


CONFIGS = {"ws_s4": 4, "ws_s3": 3}  # name: STAGES


def _layouts():
    lay = gl.NVMMASharedLayout.get_default_for
    return lay([BM, BK], gl.bfloat16), lay([BK, BN], gl.bfloat16), lay([HM, BN], gl.bfloat16)


def compile_only():
    """Compile every config for sm90 on this machine (no GPU): shared memory, registers, spills."""
    al, bl, hl = _layouts()

    def args(stages):
        return {
            "dy_desc": ((BM, BK), al),
            "wd_desc": ((BK, BN), bl),
            "h_desc": ((HM, BN), hl),
            "y_desc": ((HM, BN), hl),
            "M": None,
            "N": None,
            "D": None,
            "GROUP_M": 16,
            "NUM_SMS": 132,
            "STAGES": stages,
        }

    compile_report(dgrad_ws, {n: args(s) for n, s in CONFIGS.items()}, 4)


def run_gpu():
    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    sys.path.insert(0, ".")
    from codegen.bench import load_module

    mod = load_module("generated/glu_silu_bf16_bn128_sm90.py")
    al, bl, hl = _layouts()
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def ws_dgrad(dy, wd, h, y, stages):
        M, D = dy.shape
        N = wd.shape[1]
        dd = TensorDescriptor.from_tensor(dy, [BM, BK], al)
        wdd = TensorDescriptor.from_tensor(wd, [BK, BN], bl)
        hd = TensorDescriptor.from_tensor(h, [HM, BN], hl)
        yd = TensorDescriptor.from_tensor(y, [HM, BN], hl)
        grid = (min(sms, triton.cdiv(M, BM) * (N // BN)),)
        dgrad_ws[grid](dd, wdd, hd, yd, M, N, D, 16, sms, stages, num_warps=4)

    res = {}
    for M, D, N in shapes_to_run(SHAPES):
        dy = torch.randn(M, D, device="cuda", dtype=torch.bfloat16)
        wd = (torch.randn(D, N, device="cuda") / D**0.5).to(torch.bfloat16)
        h0 = torch.randn(M, 2 * N, device="cuda", dtype=torch.bfloat16)
        h_ref, y_ref = h0.clone(), torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        mod._launch_dgrad(dy, wd, h_ref, y_ref)
        ok = []
        for name, stages in CONFIGS.items():
            h, y = h0.clone(), torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
            try:
                ws_dgrad(dy, wd, h, y, stages)
                torch.cuda.synchronize()
            except Exception as exc:
                print(M, D, N, name, "FAILED", str(exc)[-2000:], flush=True)
                continue
            dh_ = (h.float() - h_ref.float()).abs().max().item()
            dy_ = (y.float() - y_ref.float()).abs().max().item()
            rel = rel_err(h, h_ref)
            print(
                f"{M}x{D}x{N} {name}: max|d grad_de| {dh_:.3g} (rel {rel:.2e}) max|d y| {dy_:.3g}",
                flush=True,
            )
            if rel < 1e-3 and dy_ == 0:
                ok.append(name)
        if M < 1024:
            continue
        h, y = h0.clone(), torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        fns = {
            "cublas": lambda: torch.mm(dy, wd),
            "module": lambda: mod._launch_dgrad(dy, wd, h, y),
        }
        for name in ok:
            fns[name] = lambda s=CONFIGS[name]: ws_dgrad(dy, wd, h, y, s)
        # in place: restore h before each timing so the values stay finite
        r = res[f"{M}x{D}x{N}"] = interleaved(fns, before=lambda: h.copy_(h0))
        print(ratios(f"{M}x{D}x{N}", r), flush=True)
        del dy, wd, h0, h, y, h_ref, y_ref
        torch.cuda.empty_cache()
    with open(os.path.join(os.environ.get("OUT", "build"), "gluon_ws_dgrad_probe.json"), "w") as fh:
        json.dump(res, fh, indent=1)


if __name__ == "__main__":
    if "--compile" in sys.argv:
        compile_only()
    else:
        run_gpu()
