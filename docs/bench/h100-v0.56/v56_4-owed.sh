#!/usr/bin/env bash
# v0.56 call 3 (the last: ~200 s of device time left): the _mm_rows fix checked on the GPU (case
# 429, the new tests), cuBLAS's split-K tail loss mapped by output size, the fix's cost
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; date +%T
echo "== case 429 after the fix"
OUT=$OUT timeout 30 python3 scripts/fuzz_paths.py generated/glu_silu_bf16_bn64_sm80_grouped.py --case "$(cat .gpu/case429.json)" 2>&1 | grep "cases in" | cut -c1-330
echo "== the new tests (sm80 grouped file: the dense paths and the grouped ones)"
timeout 45 python3 -m pytest -q -p no:cacheprovider generated/test_glu_silu_bf16_bn64_sm80_grouped.py -k "row_tail or rows_gemm" 2>&1 | tail -1
date +%T
timeout 55 python3 -u .gpu/cublas_odd2.py 2>&1 | grep -v Warn | tee $OUT/cublas_odd2.txt
date +%T
timeout 45 python3 -u .gpu/rows_cost.py 2>&1 | grep -v Warn | tee $OUT/rows_cost.txt
date +%T
