"""Probe: the SwiGLU training forward (bn 128 packed weight, bf16, sm90) in Gluon with warp
specialisation, so that one warp group's epilogue runs while the other's MMAs keep the tensor
cores busy.

scripts/gluon_forward_probe.py (perf log v0.16) showed that the forward's exposed epilogue is the
epilogue's own work on the warps that issue the next MMAs.  Here a [128, 256] tile ([128 rows] x
[128 left | 128 gate]) is split by rows between two consumer warp groups (each a [64, 256] fp32
accumulator, 128 registers a thread, as in the generated kernel's 8 warps), fed by one producer
warp (TMA loads into a ring of STAGES slots; a slot is refilled once both consumers released
it).  The consumers take turns at the epilogue (WG1's epilogue of a tile after WG0's, WG0's next
after WG1's), so after the first tile WG1 runs a few k-steps behind WG0: while one stores, the
other's wgmmas run alone at the tensor cores' full rate.  How far behind it can run is bounded
by the ring (STAGES - 1 steps), i.e. by shared memory.

    python scripts/gluon_ws_probe.py --compile   # compile for sm90 anywhere (triton 3.6)
    python scripts/gluon_ws_probe.py             # an H200: check and time vs cuBLAS / module
    python scripts/gluon_ws_probe.py --quick     # an H200: a smoke run (two shapes)
    python scripts/gluon_ws_probe.py --shape 4096x2048x5632   # an H200: these shapes only

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
from gluon_common import compile_report, interleaved, make_ring, producer, ratios  # noqa: E402
from gluon_common import rel_err, shapes_to_run, SHAPES  # noqa: E402
from gluon_common import tile_coords as _tile_coords  # noqa: E402
from gluon_common import tma_store  # noqa: E402

BM, BN, BK = 128, 128, 64  # the tile's rows, its chunk (left and gate columns each), k-step
HM = BM // 2  # each consumer warp group's rows


@gluon.jit
def _consumer(
    out_desc,
    f_desc,
    turn,
    ring,
    GROUP_M: gl.constexpr,
    NUM_SMS: gl.constexpr,
    STAGES: gl.constexpr,
    EPI_BUFS: gl.constexpr,
    FACTORS: gl.constexpr,
    ORDERED: gl.constexpr,
    MATH: gl.constexpr,
    epi,
    WG: gl.constexpr,
):
    a_bufs, b_bufs, full, empty, pid, my_tiles, k_tiles, num_pid_m, num_pid_n = ring
    HALF_M: gl.constexpr = out_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = out_desc.block_type.shape[1]
    dtype: gl.constexpr = out_desc.dtype
    mma_layout: gl.constexpr = gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 2 * BLOCK_N, 16]
    )
    c = 0
    e = 0
    for t in range(my_tiles):
        pid_m, pid_n = _tile_coords(pid + t * NUM_SMS, num_pid_m, num_pid_n, GROUP_M)
        acc = gl.zeros([HALF_M, 2 * BLOCK_N], gl.float32, mma_layout)
        for kk in range(k_tiles):
            slot = c % STAGES
            mbarrier.wait(full.index(slot), (c // STAGES) & 1)
            a = a_bufs.index(slot).slice(WG * HALF_M, HALF_M, dim=0)
            acc = warpgroup_mma(a, b_bufs.index(slot).permute((1, 0)), acc, is_async=True)
            acc = warpgroup_mma_wait(1, deps=(acc,))
            # the previous step's wgmma is done: release its slot
            mbarrier.arrive(empty.index((c + STAGES - 1) % STAGES), pred=kk > 0)
            c += 1
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((c + STAGES - 1) % STAGES))
        # the epilogue, in turn: WG0's of tile t after WG1's of t - 1, WG1's after WG0's of t
        if ORDERED:
            if WG == 0:
                mbarrier.wait(turn.index(0), (t & 1) ^ 1)
            else:
                mbarrier.wait(turn.index(1), t & 1)
        left, gate = acc.reshape([HALF_M, 2, BLOCK_N]).permute((0, 2, 1)).split()
        row = pid_m * 2 * HALF_M + WG * HALF_M
        # MATH: 0 = the module's sigmoid 1 / (1 + exp(-g)) (two MUFU instructions), 1 = one
        # MUFU instruction (0.5 + 0.5 tanh.approx(g / 2): inaccurate in the far negative tail),
        # 2 = no activation (out = left * gate, factors [gate | left]): what the math costs
        if MATH == 0:
            sig = 1.0 / (1.0 + gl.exp(-gate))
        elif MATH == 1:
            t_half = gl.inline_asm_elementwise(
                "tanh.approx.f32 $0, $1;",
                "=f,f",
                [0.5 * gate],
                dtype=gl.float32,
                is_pure=True,
                pack=1,
            )
            sig = 0.5 + 0.5 * t_half
        if MATH == 2:
            f_left = gate
        else:
            f_left = gate * sig
        buf = epi.index(e % EPI_BUFS)
        tma.store_wait(pendings=EPI_BUFS - 1)
        buf.store((left * f_left).to(dtype))
        fence_async_shared()
        tma_store(out_desc, [row, pid_n * BLOCK_N], buf)
        if FACTORS:  # (else: inference, out only)
            buf = epi.index((e + 1) % EPI_BUFS)
            tma.store_wait(pendings=EPI_BUFS - 1)
            buf.store(f_left.to(dtype))
            fence_async_shared()
            tma_store(f_desc, [row, pid_n * 2 * BLOCK_N], buf)
            if MATH == 2:
                d_gate = left
            else:
                d_gate = left * sig * (1.0 + gate * (1.0 - sig))
            buf = epi.index((e + 2) % EPI_BUFS)
            tma.store_wait(pendings=EPI_BUFS - 1)
            buf.store(d_gate.to(dtype))
            fence_async_shared()
            tma_store(f_desc, [row, pid_n * 2 * BLOCK_N + BLOCK_N], buf)
            e += 3
        else:
            e += 1
        if ORDERED:
            mbarrier.arrive(turn.index(1 - WG))
    tma.store_wait(pendings=0)


@gluon.jit
def glu_fwd_ws(
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
    CONSUMER_REGS: gl.constexpr,
    FACTORS: gl.constexpr,
    ORDERED: gl.constexpr,
    MATH: gl.constexpr,
):
    BLOCK_M: gl.constexpr = x_desc.block_type.shape[0]
    BLOCK_K: gl.constexpr = x_desc.block_type.shape[1]
    HALF_M: gl.constexpr = out_desc.block_type.shape[0]
    BLOCK_N: gl.constexpr = out_desc.block_type.shape[1]
    dtype: gl.constexpr = x_desc.dtype

    epi0 = gl.allocate_shared_memory(dtype, [EPI_BUFS, HALF_M, BLOCK_N], out_desc.layout)
    epi1 = gl.allocate_shared_memory(dtype, [EPI_BUFS, HALF_M, BLOCK_N], out_desc.layout)
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(turn.index(i), count=1)
    num_pid_m = gl.cdiv(M, BLOCK_M)
    num_pid_n = N // BLOCK_N
    k_tiles = gl.cdiv(K, BLOCK_K)
    ring = make_ring(x_desc, w_desc, num_pid_m, num_pid_n, k_tiles, NUM_SMS, STAGES)
    gl.warp_specialize(
        [
            (
                _consumer,
                (
                    out_desc,
                    f_desc,
                    turn,
                    ring,
                    GROUP_M,
                    NUM_SMS,
                    STAGES,
                    EPI_BUFS,
                    FACTORS,
                    ORDERED,
                    MATH,
                    epi0,
                    0,
                ),
            ),
            (
                _consumer,
                (
                    out_desc,
                    f_desc,
                    turn,
                    ring,
                    GROUP_M,
                    NUM_SMS,
                    STAGES,
                    EPI_BUFS,
                    FACTORS,
                    ORDERED,
                    MATH,
                    epi1,
                    1,
                ),
            ),
            (producer, (x_desc, w_desc, ring, GROUP_M, NUM_SMS, STAGES, True)),
        ],
        [4, 1],
        [CONSUMER_REGS, 24],
    )


CONFIGS = {  # name: (STAGES, EPI_BUFS per consumer, CONSUMER_REGS, FACTORS, ORDERED, MATH)
    "ws_s4e1": (4, 1, 240, True, True, 0),
    "ws_s4e1_unordered": (4, 1, 240, True, False, 0),
    "ws_s3e2_unordered": (3, 2, 240, True, False, 0),
    "ws_s3e1_unordered": (3, 1, 240, True, False, 0),
    "ws_s4e1_infer": (4, 1, 240, False, True, 0),
    "ws_s4e1_unordered_tanh": (4, 1, 240, True, False, 1),
    "ws_s4e1_unordered_nomath": (4, 1, 240, True, False, 2),
}


def _layouts():
    lay = gl.NVMMASharedLayout.get_default_for
    return lay([BM, BK], gl.bfloat16), lay([HM, BN], gl.bfloat16)


def compile_only():
    """Compile every config for sm90 on this machine (no GPU): shared memory, registers, spills."""
    xl, ol = _layouts()

    def args(stages, epi, regs, factors, ordered, math):
        return {
            "x_desc": ((BM, BK), xl),
            "w_desc": ((2 * BN, BK), xl),
            "out_desc": ((HM, BN), ol),
            "f_desc": ((HM, BN), ol),
            "M": None,
            "N": None,
            "K": None,
            "GROUP_M": 16,
            "NUM_SMS": 132,
            "STAGES": stages,
            "EPI_BUFS": epi,
            "CONSUMER_REGS": regs,
            "FACTORS": factors,
            "ORDERED": ordered,
            "MATH": math,
        }

    compile_report(glu_fwd_ws, {n: args(*cfg) for n, cfg in CONFIGS.items()}, 4)


def run_gpu():
    import torch
    import torch.nn.functional as F
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    sys.path.insert(0, ".")
    from codegen.bench import load_module

    mod = load_module("generated/glu_silu_bf16_bn128_sm90.py")
    xl, ol = _layouts()
    sms = torch.cuda.get_device_properties(0).multi_processor_count

    def ws_fwd(x, w, out, f, stages, epi, regs, factors, ordered, math):
        M, K = x.shape
        N = w.shape[0] // 2
        xd = TensorDescriptor.from_tensor(x, [BM, BK], xl)
        wd = TensorDescriptor.from_tensor(w, [2 * BN, BK], xl)
        od = TensorDescriptor.from_tensor(out, [HM, BN], ol)
        fd = TensorDescriptor.from_tensor(f, [HM, BN], ol)
        grid = (min(sms, triton.cdiv(M, BM) * (N // BN)),)
        glu_fwd_ws[grid](
            xd,
            wd,
            od,
            fd,
            M,
            N,
            K,
            16,
            sms,
            stages,
            epi,
            regs,
            factors,
            ordered,
            math,
            num_warps=4,
        )

    res = {}
    for M, K, N in shapes_to_run(SHAPES):
        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(torch.bfloat16)
        out_ref, fa, fb = mod._forward(x, w, None, True)
        f_ref = fa if fb is None else torch.cat([fa, fb], 1)
        # MATH 2 (no activation): out = left * gate, factors [gate | left] per chunk
        h = (x.float() @ w.float().t()).view(M, N // BN, 2, BN)
        plain_out = (h[:, :, 0] * h[:, :, 1]).reshape(M, N)
        plain_f = h.flip(2).reshape(M, 2 * N)
        del h

        ok = {}
        for name, cfg in CONFIGS.items():
            out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
            f = torch.empty(M, 2 * N, device="cuda", dtype=torch.bfloat16)
            try:
                ws_fwd(x, w, out, f, *cfg)
                torch.cuda.synchronize()
            except Exception as exc:
                print(M, K, N, name, "FAILED", str(exc)[-2000:], flush=True)
                continue
            factors, math = cfg[3], cfg[5]
            if math == 0:  # the module's math: bit-identical
                d_out = (out.float() - out_ref.float()).abs().max().item()
                d_f = (f.float() - f_ref.float()).abs().max().item()
                print(f"{M}x{K}x{N} {name}: max|d out| {d_out:.3g} max|d f| {d_f:.3g}", flush=True)
                good = d_out == 0 and (d_f == 0 or not factors)
            else:  # another math: against its own reference, norm-relative
                o_ref, fr = (out_ref, f_ref) if math == 1 else (plain_out, plain_f)
                r_out, r_f = rel_err(out, o_ref), rel_err(f, fr)
                print(f"{M}x{K}x{N} {name}: rel out {r_out:.2e} rel f {r_f:.2e}", flush=True)
                good = r_out < 1e-2 and (r_f < 1e-2 or not factors)
            if good:
                ok[name] = (out, f)
        if M < 1024:
            continue
        fns = {
            "cublas": lambda: F.linear(x, w),
            "module": lambda: mod._forward(x, w, None, True),
            "module_infer": lambda: mod._forward(x, w, None, False),
        }
        for name in ok:
            out, f = ok[name]
            fns[name] = lambda out=out, f=f, cfg=CONFIGS[name]: ws_fwd(x, w, out, f, *cfg)
        r = res[f"{M}x{K}x{N}"] = interleaved(fns)
        print(ratios(f"{M}x{K}x{N}", r), flush=True)
    with open(os.path.join(os.environ.get("OUT", "build"), "gluon_ws_probe.json"), "w") as fh:
        json.dump(res, fh, indent=1)


if __name__ == "__main__":
    if "--compile" in sys.argv:
        compile_only()
    else:
        run_gpu()
