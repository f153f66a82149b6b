#!/usr/bin/env bash
# v0.55: the grouped GPU files whole (the capture test in its new form), side by side with the GPU
# fuzzer on the three grouped modules (captured steps warmed up by a training step + a forward)
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; hostname; date +%T
mkdir -p $OUT/t $OUT/fz
for f in silu_bf16_bn128_sm90_grouped silu_bf16_bn64_sm80_grouped swiglu_oai_bf16_bn64_sm90_grouped; do
  (timeout 330 python3 -m pytest -q -p no:cacheprovider generated/test_glu_$f.py > $OUT/t/$f.txt 2>&1; echo "rc=$?" >> $OUT/t/$f.txt) &
done
for m in glu_silu_bf16_bn128_sm90_grouped glu_silu_bf16_bn64_sm80_grouped glu_swiglu_oai_bf16_bn64_sm90_grouped; do
  (OUT=$OUT/fz timeout -s INT 300 python3 scripts/fuzz_paths.py generated/$m.py --seconds 250 --seed 5501 > $OUT/fz/$m.log 2>&1) &
done
wait
for f in $OUT/t/*.txt; do echo "$(basename $f): $(grep -E 'passed|failed|error' $f | tail -1) $(tail -1 $f)"; done
grep -h "FAILED\|cases in" $OUT/fz/*.log | cut -c1-300
python3 - <<'PY'
import json, glob, os
for p in glob.glob(os.environ["OUT"] + "/fz/fuzz_paths-*.json"):
    d = json.load(open(p)); rs = d["results"]
    g = [r for r in rs if r["case"].get("wrap") == "graph"]
    print(os.path.basename(p), len(rs), "cases;", len(g), "captured,", sum(r["case"].get("warm_up") == "forward" for r in g), "warmed by a forward;", sum(bool(r["failures"]) for r in rs), "failed")
PY
date +%T
tar czf $OUT/t.tgz -C $OUT t fz && rm -rf $OUT/t $OUT/fz
