#!/usr/bin/env bash
# v0.55: is case 429's weight error (0.0155 on the GPU, 0.0029 on the CPU) cuBLAS's reduced-
# precision split-K reduction (PyTorch's default allow_bf16_reduced_precision_reduction)?
export PYTHONPATH=$PWD
python3 - <<'PY'
import torch
for flag in (True, False):
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = flag
    for M, P, Q in ((3072, 128, 520), (6145, 128, 520), (65536, 128, 520), (8192, 2048, 1024)):
        g = torch.Generator(device="cuda").manual_seed(0)
        a = torch.randn(M, P, device="cuda", generator=g).bfloat16()
        b = torch.randn(M, Q, device="cuda", generator=g).bfloat16()
        ref = a.double().t() @ b.double()
        got = a.t() @ b
        print("reduced" if flag else "full   ", M, P, Q, round(((got.double() - ref).norm() / ref.norm()).item(), 5))
PY
for flag in True False; do
  echo "== case 429, allow_bf16_reduced_precision_reduction=$flag"
  OUT=$OUT timeout 40 python3 -c "
import sys, runpy, torch
torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = $flag
sys.argv = ['scripts/fuzz_paths.py', 'generated/glu_silu_bf16_bn64_sm80_grouped.py', '--case', open('.gpu/case429.json').read()]
runpy.run_path('scripts/fuzz_paths.py', run_name='__main__')" 2>&1 | grep "cases in" | cut -c1-330
done
