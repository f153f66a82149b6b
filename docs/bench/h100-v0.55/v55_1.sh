#!/usr/bin/env bash
# owed by v0.54 (its call 2 never started): forward-only warm-ups after a training step (the fuzzer's and the test's new
# meaning of warm_up=forward) on three versions of the sm80 grouped module: now (the pool),
# v0.53 (drop on read), before v0.53 (fa4c55f^)
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; hostname; date +%T
mkdir -p $OUT/r
C304='{"lead": [2048], "K": 520, "N": 320, "form": "experts_bias", "wants": ["weight", "bias", "down"], "grad_mode": "train", "strided_x": false, "autocast": false, "config": "expert_loop", "forward": "fused", "sizes": null, "experts": {"E": 8, "k": 3, "skewed": false}, "wrap": "graph", "seed": 208589913, "master": false, "steps": 1, "weight_layout": "contiguous"}'
C655='{"lead": [193], "K": 2048, "N": 128, "form": "grouped_bias", "wants": ["weight", "bias"], "grad_mode": "train", "strided_x": false, "autocast": false, "config": "expert_loop", "forward": "fused", "sizes": [13, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12], "experts": null, "wrap": "graph", "seed": 973895858, "master": false, "steps": 1, "weight_layout": "contiguous"}'
C304F="${C304/\"wrap\": \"graph\"/\"wrap\": \"graph\", \"warm_up\": \"forward\"}"
C655F="${C655/\"wrap\": \"graph\"/\"wrap\": \"graph\", \"warm_up\": \"forward\"}"
for d in generated .gpu/v53 .gpu/old; do
  CS="C304 C304F C655F"
  for c in $CS; do echo "== $d $c"; OUT=$OUT/r timeout 100 python3 scripts/fuzz_paths.py $d/glu_silu_bf16_bn64_sm80_grouped.py --case "${!c}" 2>&1 | grep -v "Warn\|warn\|run_backward" | grep "cases in\|CUDA error" | tail -2 | cut -c1-160; done
  echo "== $d the capture test"
  timeout 100 python3 -m pytest -q -p no:cacheprovider -W ignore $d/test_glu_silu_bf16_bn64_sm80_grouped.py -k "captured_after_warm_ups" 2>&1 | grep -v "Warn\|warn" | grep "passed\|failed\|Error" | tail -4 | cut -c1-300
done
echo "== C304F as the first call ran it (two forward-only warm-ups, fuzz_paths at 1cb52a1), launch-blocking"
mkdir -p $OUT/a
CUDA_LAUNCH_BLOCKING=1 OUT=$OUT/a timeout 100 python3 .gpu/fuzz_v54a.py generated/glu_silu_bf16_bn64_sm80_grouped.py --case "$C304F" 2>&1 | grep "cases in" | cut -c1-120
python3 -c "
import json; d = json.load(open('$OUT/a/fuzz_paths-glu_silu_bf16_bn64_sm80_grouped.json'))
print('\n'.join(str(f)[-1500:] for r in d['results'] for f in r['failures']))"
date +%T
tar czf $OUT/r.tgz -C $OUT r a && rm -rf $OUT/r $OUT/a
