#!/usr/bin/env bash
# v0.57 call 1: v0.56's owed call (the _mm_rows fix on the GPU, cuBLAS's tail loss by output size,
# the fix's cost), then the SwiGLU default bench on whatever card came
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; date +%T
python3 -c "import torch, triton; print(torch.__version__, torch.version.cuda, triton.__version__)"
{
echo "== case 429 after the fix"
mkdir -p $OUT/fuzz429; OUT=$OUT/fuzz429 timeout 30 python3 scripts/fuzz_paths.py generated/glu_silu_bf16_bn64_sm80_grouped.py --case "$(cat .gpu/case429.json)" 2>&1 | grep "cases in" | cut -c1-330
echo "== the new tests (sm80 grouped file: the dense paths and the grouped ones)"
timeout 60 python3 -m pytest -q -p no:cacheprovider generated/test_glu_silu_bf16_bn64_sm80_grouped.py -k "row_tail or rows_gemm" 2>&1 | tail -3
timeout 40 python3 -m pytest -q -p no:cacheprovider generated/test_glu_silu_bf16_bn128_sm90.py -k "row_tail or rows_gemm" 2>&1 | tail -3
date +%T
} 2>&1 | tee $OUT/fix-checks.txt
timeout 60 python3 -u .gpu/cublas_odd2.py 2>&1 | grep -v Warn > $OUT/cublas_odd2.txt; tail -5 $OUT/cublas_odd2.txt
date +%T
timeout 50 python3 -u .gpu/rows_cost.py 2>&1 | grep -v Warn > $OUT/rows_cost.txt; cat $OUT/rows_cost.txt
date +%T
timeout 175 python3 -u -m codegen.cli bench generated/glu_silu_bf16_bn128_sm90.py --out $OUT/bench-silu --time-limit 150 > $OUT/bench-silu.log 2>&1
tail -30 $OUT/bench-silu.log | cut -c1-250
python3 scripts/issue_targets.py $OUT/bench-silu/bench.json > $OUT/issue-targets-silu.txt 2>&1; tail -30 $OUT/issue-targets-silu.txt
date +%T
cd $OUT && tar czf rest.tgz fuzz429 bench-silu && rm -rf fuzz429 bench-silu; ls $OUT
