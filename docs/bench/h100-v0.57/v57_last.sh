#!/usr/bin/env bash
# v0.57's last try: the _mm_rows fix on cuBLAS (case 429, the new tests), its cost, then the
# tail-loss map as far as time allows (each step's output written as it runs)
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; date +%T
python3 -c "import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)"
{
echo "== case 429 after the fix"
mkdir -p /tmp/f; OUT=/tmp/f timeout 30 python3 scripts/fuzz_paths.py generated/glu_silu_bf16_bn64_sm80_grouped.py --case "$(cat .gpu/case429.json)" 2>&1 | grep "cases in" | cut -c1-330
echo "== the new tests"
timeout 50 python3 -m pytest -q -p no:cacheprovider generated/test_glu_silu_bf16_bn64_sm80_grouped.py -k "row_tail or rows_gemm" 2>&1 | tail -2
timeout 30 python3 -m pytest -q -p no:cacheprovider generated/test_glu_silu_bf16_bn128_sm90.py -k "row_tail or rows_gemm" 2>&1 | tail -2
date +%T
} 2>&1 | tee $OUT/fix-checks.txt
timeout 70 python3 -u .gpu/rows_cost.py 2>&1 | grep --line-buffered -v Warn | tee $OUT/rows_cost.txt
date +%T
timeout 90 python3 -u .gpu/cublas_odd2.py 2>&1 | grep --line-buffered -v Warn | tee $OUT/cublas_odd2.txt
date +%T
