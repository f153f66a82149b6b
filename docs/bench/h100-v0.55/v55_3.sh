#!/usr/bin/env bash
# v0.55: the capture test, its outputs now freed after the captured step's work: does it fail on
# the module before v0.53's fix and on v0.53's, and pass on the new ones?
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; date +%T
for d in .gpu/old .gpu/v53 generated; do
  echo "== $d"
  timeout 120 python3 -m pytest -q -p no:cacheprovider -W ignore $d/test_glu_silu_bf16_bn64_sm80_grouped.py -k "captured_after_warm_ups" 2>&1 | grep "passed\|failed\|Error:" | grep -v "^E  " | tail -5 | cut -c1-200
done
for m in glu_silu_bf16_bn128_sm90_grouped glu_swiglu_oai_bf16_bn64_sm90_grouped; do
  echo "== generated $m"
  timeout 120 python3 -m pytest -q -p no:cacheprovider -W ignore generated/test_$m.py -k "cuda_graph or reduce_overhead" 2>&1 | tail -1 | cut -c1-200
done
date +%T
