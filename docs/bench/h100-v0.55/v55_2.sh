#!/usr/bin/env bash
# v0.55: which form of the capture-after-looping-warm-ups scenario reproduces v0.53's failure
# (the GPU test does not); plain PyTorch's control for case 304's first form
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name --format=csv,noheader; date +%T
echo "== control: plain PyTorch, forward-only warm-ups then a captured backward"
timeout 60 python3 .gpu/control_cublas.py 2>&1 | grep -v Warn | tail -2
S655='"sizes": [13, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12], "K": 2048, "N": 128'
SKEW='"sizes": [4096, 0, 1000, 0, 1, 2047, 1024, 0], "K": 1024, "N": 256'
BAL4='"sizes": [49, 48, 48, 48], "K": 2048, "N": 128'
declare -A P
P[A655]="{$S655, \"bias\": true, \"down\": false, \"warm\": \"train\", \"ref\": true}"
P[A655noref]="{$S655, \"bias\": true, \"down\": false, \"warm\": \"train\", \"ref\": false}"
P[A655nobias]="{$S655, \"bias\": false, \"down\": false, \"warm\": \"train\", \"ref\": true}"
P[A655down]="{$S655, \"bias\": true, \"down\": true, \"warm\": \"train\", \"ref\": true}"
P[A655fwd]="{$S655, \"bias\": true, \"down\": false, \"warm\": \"forward\", \"ref\": true}"
P[Bal4]="{$BAL4, \"bias\": true, \"down\": false, \"warm\": \"train\", \"ref\": true}"
P[Skew]="{$SKEW, \"bias\": true, \"down\": false, \"warm\": \"train\", \"ref\": true}"
P[SkewDown]="{$SKEW, \"bias\": true, \"down\": true, \"warm\": \"train\", \"ref\": true}"
for d in .gpu/old .gpu/v53 generated; do
  for s in A655 A655noref A655nobias A655down A655fwd Bal4 Skew SkewDown; do
    echo "$d $s: $(timeout 60 python3 .gpu/probe_capture.py $d/glu_silu_bf16_bn64_sm80_grouped.py "${P[$s]}" 2>&1 | grep "PASS\|FAIL" | tail -1)"
  done
done
date +%T
