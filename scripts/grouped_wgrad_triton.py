"""A Triton grouped weight gradient against torch._grouped_mm's, where each expert's reduction
is short (E=128: 512 rows per expert).  grad_W[e] = g_e^T @ x_e with g [T, M] (M = 2N, the
packed grad_de), x [T, K], rows sorted by expert, offsets int32 [E] (cumulative row ends) ->
[E, M, K].  The question (perf log v0.30): torch._grouped_mm's weight gradient runs well above
one forward-shaped grouped GEMM ("gmm") at E=128; does a persistent Triton kernel whose tile
loop is flattened with the reduction (the next tile's loads issued during this tile's
epilogue) do better?

Three ways to cut the reduction at each expert's rows:
  ptr       masked pointer loads (cp.async), pointer stores;
  tma_dev   TMA through per-expert descriptors made on the device (shape [end_e, cols]: rows of
            the next expert read as 0), TMA stores through a host descriptor; needs
            triton.set_allocator;
  tma_mask  TMA through host descriptors over all of g and x, the rows past the expert's end
            zeroed in registers (g only: 0 * x is 0 for finite x).

    PYTHONPATH=. python scripts/grouped_wgrad_triton.py [--shape T,K,N,E ...] [--rounds 5]
        [--quick] [--smoke]

Every config is first checked against torch._grouped_mm (bf16) and a float32 reference; then
configs, torch._grouped_mm's weight gradient and gmm are timed in interleaved rounds (every
other reversed; do_bench medians).  Results: $OUT/grouped_wgrad_triton.json (or build/), a table
on stdout (ms and x gmm; Triton / torch per round).  --smoke: tiny shapes in float32 on the CPU
under TRITON_INTERPRET=1."""

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, ".")
if "--smoke" in sys.argv:  # before Triton is imported: its kernels then run in the interpreter
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from generated.glu_silu_bf16_bn128_sm90 import _tile_coords  # noqa: E402  (grouped tile order)


@triton.jit
def _wgrad_step(
    g_ptr,
    x_ptr,
    g_desc,
    x_desc,
    t,
    end,
    off_m,
    off_n,
    K,
    stride_g,
    stride_x,
    acc,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_T: tl.constexpr,
    MODE: tl.constexpr,
):
    """acc += g[t : t + BLOCK_T, off_m:][rows < end]^T @ x[t : t + BLOCK_T, off_n:]."""
    ts = tl.arange(0, BLOCK_T)
    if MODE == 0:
        rows = (t + ts).to(tl.int64)
        row_ok = (t + ts) < end
        ms = off_m + tl.arange(0, BLOCK_M)
        ns = off_n + tl.arange(0, BLOCK_N)
        g = tl.load(g_ptr + rows[:, None] * stride_g + ms[None, :], mask=row_ok[:, None], other=0.0)
        xt = tl.load(
            x_ptr + rows[:, None] * stride_x + ns[None, :],
            mask=row_ok[:, None] & (ns < K)[None, :],
            other=0.0,
        )
    elif MODE == 1:  # descriptors of shape [end, cols]: rows past end read as 0
        g = g_desc.load([t, off_m])
        xt = x_desc.load([t, off_n])
    else:
        g = g_desc.load([t, off_m])
        g = tl.where(((t + ts) < end)[:, None], g, 0.0)
        xt = x_desc.load([t, off_n])
    return tl.dot(g.T, xt, acc)


@triton.jit
def _grouped_wgrad_kernel(
    # g [T, M], x [T, K] (unit inner strides), grad_W [E, M, K] (contiguous; dw_desc its
    # [E * M, K] view for TMA stores), offsets int32 [E]
    g_ptr,
    x_ptr,
    dw_ptr,
    dw_desc,
    offsets_ptr,
    T,
    E,
    M,
    K,
    stride_g,
    stride_x,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_T: tl.constexpr,
    GROUP_M: tl.constexpr,
    NUM_SMS: tl.constexpr,
    NUM_STAGES: tl.constexpr,
    MODE: tl.constexpr,  # 0 ptr, 1 tma_dev, 2 tma_mask
    FLATTEN: tl.constexpr,
    BLOCK_E: tl.constexpr,
    g_desc,
    x_desc,
):
    """Persistent: tiles (expert, [BLOCK_M, BLOCK_N] of grad_W[e]) NUM_SMS apart, an expert's
    tiles consecutive (its rows stay in L2 while they are read M / BLOCK_M + K / BLOCK_N
    times); each tile reduces over its expert's rows only, an empty expert's tile is 0."""
    num_pid_m = M // BLOCK_M
    num_pid_n = tl.cdiv(K, BLOCK_N)
    per_expert = num_pid_m * num_pid_n
    total = E * per_expert
    if FLATTEN:
        # Triton fuses the loop nest only where the inner loop's bounds do not change with the
        # tile: every tile runs the longest expert's steps, the steps past its own rows masked
        es = tl.arange(0, BLOCK_E)
        ends = tl.load(offsets_ptr + es, mask=es < E, other=0)
        firsts = tl.load(offsets_ptr + es - 1, mask=(es > 0) & (es < E), other=0)
        max_steps = tl.cdiv(tl.max(ends - firsts, axis=0), BLOCK_T)
    for tile_id in tl.range(tl.program_id(0), total, NUM_SMS, flatten=FLATTEN):
        e = tile_id // per_expert
        pid_m, pid_n = _tile_coords(tile_id % per_expert, num_pid_m, num_pid_n, GROUP_M)
        end = tl.minimum(tl.maximum(tl.load(offsets_ptr + e), 0), T)
        start = tl.load(offsets_ptr + e - 1, mask=e > 0, other=0)
        start = tl.minimum(tl.maximum(start, 0), end)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        if MODE == 1:
            ge_desc = tl.make_tensor_descriptor(
                g_ptr, shape=[end, M], strides=[stride_g, 1], block_shape=[BLOCK_T, BLOCK_M]
            )
            xe_desc = tl.make_tensor_descriptor(
                x_ptr, shape=[end, K], strides=[stride_x, 1], block_shape=[BLOCK_T, BLOCK_N]
            )
        if FLATTEN:
            for ki in range(0, max_steps):
                acc = _wgrad_step(
                    g_ptr, x_ptr, ge_desc if MODE == 1 else g_desc, xe_desc if MODE == 1 else x_desc,
                    start + ki * BLOCK_T, end, off_m, off_n, K, stride_g, stride_x, acc,
                    BLOCK_M, BLOCK_N, BLOCK_T, MODE,
                )  # fmt: skip
        else:
            for t in range(start, end, BLOCK_T):
                acc = _wgrad_step(
                    g_ptr, x_ptr, ge_desc if MODE == 1 else g_desc, xe_desc if MODE == 1 else x_desc,
                    t, end, off_m, off_n, K, stride_g, stride_x, acc,
                    BLOCK_M, BLOCK_N, BLOCK_T, MODE,
                )  # fmt: skip
        out = acc.to(dw_ptr.dtype.element_ty)
        if MODE == 0:
            ms = off_m + tl.arange(0, BLOCK_M)
            ns = off_n + tl.arange(0, BLOCK_N)
            rows_w = (e * M + ms).to(tl.int64)
            tl.store(dw_ptr + rows_w[:, None] * K + ns[None, :], out, mask=(ns < K)[None, :])
        else:
            dw_desc.store([e * M + off_m, off_n], out)


MODES = {"ptr": 0, "tma_dev": 1, "tma_mask": 2}


def grouped_wgrad(g, x, offsets, cfg, num_sms):
    """[E, M, K] = per expert g_e^T @ x_e (cfg: mode, bm, bn, bt, group_m, stages, warps,
    flatten)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    T, M = g.shape
    K = x.shape[1]
    E = offsets.shape[0]
    assert M % cfg["bm"] == 0, (M, cfg)
    dw = torch.empty(E, M, K, device=g.device, dtype=g.dtype)
    mode = MODES[cfg["mode"]]
    bm, bn, bt = cfg["bm"], cfg["bn"], cfg["bt"]
    if mode == 0:
        dw_desc = g_desc = x_desc = None
    else:
        dw_desc = TensorDescriptor.from_tensor(dw.view(E * M, K), [bm, bn])
        g_desc = TensorDescriptor.from_tensor(g, [bt, bm])
        x_desc = TensorDescriptor.from_tensor(x, [bt, bn])
    tiles = E * (M // bm) * triton.cdiv(K, bn)
    grid = (max(1, min(num_sms * cfg.get("ctas", 1), tiles)),)
    _grouped_wgrad_kernel[grid](
        g, x, dw, dw_desc, offsets, T, E, M, K, g.stride(0), x.stride(0),
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_T=bt, GROUP_M=cfg["group_m"], NUM_SMS=grid[0],
        NUM_STAGES=cfg["stages"], MODE=mode, FLATTEN=cfg["flatten"],
        BLOCK_E=triton.next_power_of_2(E), g_desc=g_desc,
        x_desc=x_desc, num_warps=cfg["warps"],
    )  # fmt: skip
    return dw


def compile_check(cfgs):
    """Compile every config for sm90 on this machine (no GPU: Triton's passes and ptxas run on
    the CPU), as `swiglu-gen compile-check` does: shared memory, registers, spills, failures."""
    from types import SimpleNamespace

    from codegen.compile_check import Launch, compile_launches
    from triton.tools.tensor_descriptor import TensorDescriptor

    T, M, K, E = 4096, 1536, 2048, 8
    g, x = torch.empty(T, M, dtype=torch.bfloat16), torch.empty(T, K, dtype=torch.bfloat16)
    dw, offs = torch.empty(E * M, K, dtype=torch.bfloat16), torch.empty(E, dtype=torch.int32)
    for cfg in cfgs:
        bm, bn, bt = cfg["bm"], cfg["bn"], cfg["bt"]
        descs = (None, None, None)
        if cfg["mode"] != "ptr":
            descs = tuple(TensorDescriptor.from_tensor(t, b) for t, b in
                          ((dw, [bm, bn]), (g, [bt, bm]), (x, [bt, bn])))  # fmt: skip
        args = (g, x, dw, descs[0], offs, T, E, M, K, M, K, bm, bn, bt, cfg["group_m"], 132,
                cfg["stages"], MODES[cfg["mode"]], cfg["flatten"], 8, descs[1], descs[2])  # fmt: skip
        launch = Launch(str(cfg), _grouped_wgrad_kernel, args, cfg["warps"], cfg["stages"])
        (res,) = compile_launches(SimpleNamespace(ARCH="sm90"), [launch])
        print(f"{triton.__version__} {res.what}: {'ok' if res.ok else 'FAIL ' + res.error} "
              f"{res.shared} B {res.usage}")  # fmt: skip


def configs(quick):
    """The GPU sweep: each way to cut the reduction at [128, 128] and [128, 256] tiles, with the
    tile loop flattened or not (persistent, one program per SM); and with the tile loop not
    flattened, two programs per SM and one program per tile (another program's main loop
    hides this one's epilogue)."""
    out = []
    for mode, (bn, stages), flatten in itertools.product(
        MODES, ((128, 4), (256, 3)), (True, False)
    ):
        out.append(dict(mode=mode, bm=128, bn=bn, bt=64, group_m=8, stages=stages, warps=8,
                        flatten=flatten, ctas=1))  # fmt: skip
    for mode, ctas in (("ptr", 2), ("ptr", 10**6), ("tma_dev", 10**6), ("tma_mask", 10**6)):
        out.append(dict(mode=mode, bm=128, bn=128, bt=64, group_m=8, stages=3, warps=8,
                        flatten=False, ctas=ctas))  # fmt: skip
    if quick:
        out = [c for c in out if c["bn"] == 128]
    return out


def big_tile_configs():
    """--big: the tiles past [128, 256] (v0.31's first sweep: [128, 256] beat [128, 128] by
    20-30%), TMA modes only: [256, 128] and [128, 256] with 32-row steps and more stages."""
    out = []
    for mode, (bm, bn, bt, stages), flatten in itertools.product(
        ("tma_dev", "tma_mask"),
        ((256, 128, 64, 3), (128, 256, 32, 5), (256, 128, 32, 5), (128, 256, 64, 3)),
        (False, True),
    ):
        out.append(dict(mode=mode, bm=bm, bn=bn, bt=bt, group_m=8, stages=stages, warps=8,
                        flatten=flatten, ctas=1))  # fmt: skip
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shape", action="append", default=[])
    p.add_argument("--routing", action="append", default=[])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--smoke", action="store_true")
    p.add_argument("--compile-check", action="store_true")
    p.add_argument("--big", action="store_true", help="the big-tile sweep (big_tile_configs)")
    a = p.parse_args()
    if a.compile_check:
        return compile_check(big_tile_configs() if a.big else configs(a.quick))
    from codegen.bench import parse_shape, routing_sizes

    if a.smoke:
        dev, dt, rounds, num_sms = "cpu", torch.float32, 1, 4
        shapes = [(150, 40, 16, 5)]  # an empty expert, 3 rows, 37 (not a multiple of 16)
        cfgs = [
            dict(mode=m, bm=16, bn=16, bt=16, group_m=2, stages=2, warps=4, flatten=f)
            for m in MODES
            for f in (True, False)
        ]
    else:
        dev, dt, rounds = "cuda", torch.bfloat16, a.rounds
        num_sms = torch.cuda.get_device_properties(0).multi_processor_count
        shapes = [parse_shape(s) for s in a.shape] or [
            (65536, 2048, 768, 128),
            (32768, 2880, 2880, 32),
        ]
        cfgs = big_tile_configs() if a.big else configs(a.quick)
        triton.set_allocator(
            lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda")
        )
        print(
            torch.cuda.get_device_name(), "torch", torch.__version__, "triton", triton.__version__
        )
    routings = a.routing or (["ragged"] if a.smoke else ["balanced", "ragged"])
    out_dir = Path(os.environ.get("OUT", "build"))
    out_dir.mkdir(parents=True, exist_ok=True)
    results = {}
    for T, K, N, E in shapes:
        M = 2 * N
        for routing in routings:
            torch.manual_seed(0)
            sizes = [0, 37, 3, 64, T - 104] if a.smoke else routing_sizes(T, E, routing)
            offs = torch.tensor(sizes, device=dev).cumsum(0).to(torch.int32)
            g = torch.randn(T, M, device=dev, dtype=dt)
            x = torch.randn(T, K, device=dev, dtype=dt)
            ref = torch.zeros(E, M, K, device=dev, dtype=torch.float32)
            lo = 0
            for e, hi in enumerate(offs.tolist()):
                ref[e] = g[lo:hi].float().t() @ x[lo:hi].float()
                lo = hi
            scale = ref.norm()
            case = f"{T}x{K}x{N} E={E} {routing}"
            timed = {}
            row = {"sizes_min_max": [min(sizes), max(sizes)], "rel_err": {}, "ms": {}}
            if not a.smoke:
                w = torch.randn(E, M, K, device=dev, dtype=dt)
                titan = torch._grouped_mm(g.t(), x, offs=offs)
                row["rel_err"]["torch"] = float((titan.float() - ref).norm() / scale)
                timed["torch wgrad"] = lambda: torch._grouped_mm(g.t(), x, offs=offs)
                timed["gmm"] = lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)
                # the backward's other GEMM (grad_x = grad_de @ W), for the step's arithmetic
                timed["torch dgrad"] = lambda: torch._grouped_mm(g, w, offs=offs)
            for cfg in cfgs:
                name = "{mode} {bm}x{bn}x{bt} s{stages} w{warps}{f}{c}".format(
                    **cfg,
                    f=" flat" if cfg["flatten"] else "",
                    c={1: "", 2: " 2/SM"}.get(cfg.get("ctas", 1), " grid"),
                )
                try:
                    got = grouped_wgrad(g, x, offs, cfg, num_sms)
                except Exception as exc:  # a config that does not compile: say so, go on
                    msg = str(exc).strip().splitlines()
                    print(f"{case} {name}: {type(exc).__name__} {msg[-1] if msg else ''}"[:300])
                    continue
                err = float((got.float() - ref).norm() / scale)
                row["rel_err"][name] = err
                if not (err < 1e-2):
                    print(f"{case} {name}: WRONG rel_err {err:.3g}")
                    continue
                timed[name] = lambda cfg=cfg: grouped_wgrad(g, x, offs, cfg, num_sms)
            per_round = {k: [] for k in timed}
            if not a.smoke:
                from triton.testing import do_bench

                for r in range(rounds):
                    order = list(timed) if r % 2 == 0 else list(reversed(timed))
                    for k in order:
                        per_round[k].append(do_bench(timed[k], warmup=25, rep=100))
            else:
                for k, fn in timed.items():
                    t0 = time.perf_counter()
                    fn()
                    per_round[k].append((time.perf_counter() - t0) * 1e3)
            row["ms"] = {k: statistics.median(v) for k, v in per_round.items()}
            if "torch wgrad" in per_round:
                row["over_torch_per_round"] = {
                    k: [v[i] / per_round["torch wgrad"][i] for i in range(len(v))]
                    for k, v in per_round.items()
                }
            results[case] = row
            gmm = row["ms"].get("gmm")
            print(f"\n## {case} (rows per expert {row['sizes_min_max']})")
            print("| impl | ms | x gmm | / torch wgrad (median [min, max]) | rel err |")
            print("|---|---|---|---|---|")
            for k in sorted(row["ms"], key=row["ms"].get):
                ratio = row.get("over_torch_per_round", {}).get(k)
                rs = (
                    f"{statistics.median(ratio):.3f} [{min(ratio):.3f}, {max(ratio):.3f}]"
                    if ratio
                    else "-"
                )
                xg = f"{row['ms'][k] / gmm:.3f}" if gmm else "-"
                err = row["rel_err"].get(k)
                print(f"| {k} | {row['ms'][k]:.4f} | {xg} | {rs} | {err if err is None else f'{err:.2g}'} |")  # fmt: skip
            sys.stdout.flush()
    (out_dir / "grouped_wgrad_triton.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
