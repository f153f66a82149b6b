"""Compile the Triton kernels listed in signatures() (the grouped TMA forward so far) of a
generated module for its GPU target without a GPU (the MLIR passes
and ptxas run on the CPU): catches "PassManager::run failed" before device time is spent.

    python scripts/compile_check.py generated/glu_silu_bf16_bn128_sm90_grouped.py [KERNEL ...]

Each kernel is compiled with the constexprs its launcher passes for a typical call (below);
prints registers / spills / shared memory per kernel.
"""

import importlib.util
import sys

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


def load(path):
    spec = importlib.util.spec_from_file_location("mod_under_check", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def signatures(mod):
    dt = {"torch.bfloat16": "bf16", "torch.float16": "fp16"}[str(mod.DTYPE)]
    BM, BN, BK, CH = mod.BLOCK_M, mod.CHUNK, mod.BLOCK_K, mod.CHUNK
    sigs = {}
    if hasattr(mod, "_grouped_glu_fwd_tma_kernel"):
        for save in (True, False):
            for bias in (False, True):
                sig = {
                    "x_desc": f"tensordesc<{dt}[{BM}, {BK}]>",
                    "w_desc": f"tensordesc<{dt}[{2 * CH}, {BK}]>",
                    "out_desc": f"tensordesc<{dt}[{BM}, {CH}]>",
                    "f_desc": f"tensordesc<{dt}[{BM}, {CH}]>" if save else "constexpr",
                    "out_ptr": f"*{dt}",
                    "f_ptr": f"*{dt}",
                    "b_ptr": f"*{dt}",
                    "offsets_ptr": "*i32",
                    "T": "i32",
                    "E": "i32",
                    "N": "i32",
                    "K": "i32",
                    "stride_be": "i32",
                }
                const = {
                    "BLOCK_M": BM,
                    "BLOCK_N": BN,
                    "BLOCK_K": BK,
                    "BLOCK_E": 128,
                    "GROUP_M": mod.GROUP_M,
                    "NUM_SMS": 132,
                    "SAVE_FACTORS": save,
                    "HAS_BIAS": bias,
                }
                if not save:
                    const["f_desc"] = None
                sigs[f"_grouped_glu_fwd_tma_kernel save={save} bias={bias}"] = (
                    mod._grouped_glu_fwd_tma_kernel,
                    sig,
                    const,
                    mod.NUM_WARPS,
                    mod.NUM_STAGES,
                )
    if hasattr(mod, "_grouped_glu_fwd_kernel"):
        sig = {n: f"*{dt}" for n in ("x_ptr", "w_ptr", "out_ptr", "f_ptr", "b_ptr")}
        sig["offsets_ptr"] = "*i32"
        for n in (
            "T",
            "E",
            "N",
            "K",
            "stride_xm",
            "stride_we",
            "stride_wn",
            "stride_om",
            "stride_be",
        ):
            sig[n] = "i32"
        const = {
            "BLOCK_M": BM,
            "BLOCK_N": BN,
            "BLOCK_K": BK,
            "BLOCK_E": 8,
            "GROUP_M": mod.GROUP_M,
            "SAVE_FACTORS": True,
            "HAS_BIAS": True,
        }
        sigs["_grouped_glu_fwd_kernel (pointers)"] = (
            mod._grouped_glu_fwd_kernel,
            sig,
            const,
            mod.NUM_WARPS,
            mod.NUM_STAGES,
        )
    return sigs


def _ptxas_usage(kernel, arch):
    """Registers and spills as ptxas -v reports them for the kernel's PTX (Triton's own ptxas)."""
    import os
    import re
    import subprocess
    import tempfile

    from triton.backends.nvidia.compiler import get_ptxas

    try:
        ptxas = get_ptxas(arch)  # triton 3.6
    except TypeError:
        ptxas = get_ptxas()
    ptxas = ptxas.path if hasattr(ptxas, "path") else ptxas[0]
    suffix = "a" if arch >= 90 else ""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(kernel.asm["ptx"])
        res = subprocess.run(
            [ptxas, "-v", f"--gpu-name=sm_{arch}{suffix}", src, "-o", os.path.join(d, "k.o")],
            capture_output=True,
            text=True,
        )
    text = res.stderr + res.stdout
    regs = re.findall(r"Used (\d+) registers", text)
    spills = re.findall(r"(\d+) bytes spill stores", text)
    return f"regs {regs[-1] if regs else '?'} spill stores {spills[-1] if spills else '?'} B"


def main():
    mod = load(sys.argv[1])
    arch = int(mod.ARCH[2:])
    target = GPUTarget("cuda", arch, 128 if arch >= 90 else 64)
    ok = True
    for name, (fn, sig, const, warps, stages) in signatures(mod).items():
        full = {**sig}
        for k in const:
            full[k] = "constexpr"
        src = ASTSource(
            fn=fn,
            signature=full,
            constexprs={(fn.arg_names.index(k),): v for k, v in const.items()},
        )
        try:
            k = triton.compile(
                src, target=target, options={"num_warps": warps, "num_stages": stages}
            )
            print(f"OK   {name}: shared {k.metadata.shared} B; {_ptxas_usage(k, arch)}")
        except Exception as e:  # noqa: BLE001
            ok = False
            print(f"FAIL {name}: {str(e).splitlines()[0][:300]}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
