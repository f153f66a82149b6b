#!/usr/bin/env bash
# v0.55: the GPU fuzzer's cases 80 / 111 (compiled grouped operators' strides) replayed after the
# fix; the new opcheck tests and the compile tests on the GPU; the fuzzer again (seed 5502)
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; date +%T
mkdir -p $OUT/r $OUT/t $OUT/fz
for f in .gpu/case_*.json; do
  m=$(basename $f .json); m=${m#case_}; m=${m%_*}
  echo "== $(basename $f): $(OUT=$OUT/r timeout 60 python3 scripts/fuzz_paths.py generated/$m.py --case "$(cat $f)" 2>&1 | grep "cases in" | cut -c1-150)"
done
for f in silu_bf16_bn128_sm90_grouped silu_bf16_bn64_sm80_grouped swiglu_oai_bf16_bn64_sm90_grouped silu_bf16_bn128_sm90; do
  (timeout 185 python3 -m pytest -q -p no:cacheprovider -W ignore generated/test_glu_$f.py -k "fakes_say or compile" > $OUT/t/$f.txt 2>&1; echo "rc=$?" >> $OUT/t/$f.txt) &
done
for m in glu_silu_bf16_bn128_sm90_grouped glu_silu_bf16_bn64_sm80_grouped glu_swiglu_oai_bf16_bn64_sm90_grouped; do
  (OUT=$OUT/fz timeout -s INT 185 python3 scripts/fuzz_paths.py generated/$m.py --seconds 150 --seed 5502 > $OUT/fz/$m.log 2>&1) &
done
wait
for f in $OUT/t/*.txt; do echo "$(basename $f): $(grep -E 'passed|failed|error' $f | tail -1) $(tail -1 $f)"; done
grep -h "FAILED\|cases in" $OUT/fz/*.log | cut -c1-400
date +%T
tar czf $OUT/t.tgz -C $OUT r t fz && rm -rf $OUT/r $OUT/t $OUT/fz
