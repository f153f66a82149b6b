#!/usr/bin/env bash
# v0.56 call 1: case 429's hypothesis (cuBLAS reduced-precision split-K reduction in bf16 weight
# gradients), plain GEMMs, the case replayed and the dense module at long-M small-weight shapes, the
# flag on and off; then the SwiGLU default bench on an H200, or the dense GPU fuzzer on an H100
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader); echo "$GPU"; hostname; date +%T; T0=$(date +%s)
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)"
python3 - <<'PY'
import torch, importlib.util
print("default allow_bf16_reduced_precision_reduction:", torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction)
spec = importlib.util.spec_from_file_location("m", "generated/glu_silu_bf16_bn128_sm90.py")
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
def rel(a, b):
    return round(((a.double() - b.double()).norm() / b.double().norm()).item(), 5)
for flag in (True, False):
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = flag
    tag = "reduced" if flag else "full   "
    for M, P, Q in ((3072, 128, 520), (6145, 128, 520), (65536, 128, 520), (65536, 256, 2048), (8192, 2048, 1024)):
        g = torch.Generator(device="cuda").manual_seed(0)
        a = torch.randn(M, P, device="cuda", generator=g).bfloat16()
        b = torch.randn(M, Q, device="cuda", generator=g).bfloat16()
        print(tag, "gemm a^T b", M, P, Q, rel(a.t() @ b, a.double().t() @ b.double()))
    for M, K, N in ((6145, 520, 128), (65536, 512, 128), (65536, 1024, 128), (131072, 256, 256), (4096, 2048, 5632)):
        g = torch.Generator(device="cuda").manual_seed(1)
        x = torch.randn(M, K, device="cuda", generator=g).bfloat16().requires_grad_()
        w = (torch.randn(2 * N, K, device="cuda", generator=g) / K**0.5).bfloat16().requires_grad_()
        dy = torch.randn(M, N, device="cuda", generator=g).bfloat16()
        wp = m.pack_weight(w[N:], w[:N]).detach().requires_grad_()
        out = m.glu(x, wp)
        out.backward(dy)
        xd, wd = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
        h = xd @ wd.t(); ref = h[:, :N] * torch.nn.functional.silu(h[:, N:])
        ref.backward(dy.double())
        gg, gu = m.unpack_weight(wp.grad)
        gw = torch.cat([gu, gg])
        # eager bf16 control: the same step in plain PyTorch
        xe, we = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
        he = xe @ we.t(); (he[:, :N] * torch.nn.functional.silu(he[:, N:])).backward(dy)
        print(tag, "dense glu", M, K, N, "out", rel(out, ref), "grad_x ours", rel(x.grad, xd.grad), "grad_W ours", rel(gw, wd.grad), "eager", rel(we.grad, wd.grad))
        x.grad = None
PY
for flag in 1 0; do
  echo "== case 429, allow_bf16_reduced_precision_reduction=$flag, mm instrumented"
  FLAG=$flag OUT=$OUT timeout 60 python3 .gpu/probe429.py 2>&1 | grep "^MM\|cases in" | cut -c1-330
done
date +%T
S="--shape 11136,3584,14336 --shape 8192,4096,14336 --shape 4096,2048,5632 --shape 2048,4096,1408"
LEFT=$(( 560 - ($(date +%s) - T0) - 40 ))
if [[ "$GPU" == *H200* ]]; then
  mkdir -p $OUT/s; echo "== SwiGLU bench, $LEFT s"
  timeout $((LEFT + 35)) python3 -m codegen.cli bench generated/glu_silu_bf16_bn128_sm90.py $S --out $OUT/s --time-limit $LEFT 2>&1 | grep -v Warn | tee $OUT/s/bench.log | tail -8
  python3 scripts/issue_targets.py $OUT/s/bench.json > $OUT/s/issue_targets.txt 2>&1; tail -1 $OUT/s/issue_targets.txt
  tar czf $OUT/s.tgz -C $OUT s && rm -rf $OUT/s
else
  LEFT=$(( LEFT < 200 ? LEFT : 200 )); mkdir -p $OUT/fz; echo "== dense GPU fuzzer, $LEFT s"
  for mod in glu_silu_bf16_bn128_sm90 glu_gelu_tanh_bf16_bn128_sm90 glu_swiglu_oai_bf16_bn64_sm90; do
    (OUT=$OUT/fz timeout -s INT $((LEFT + 20)) python3 scripts/fuzz_paths.py generated/$mod.py --seconds $LEFT --seed 5601 > $OUT/fz/$mod.log 2>&1) &
  done; wait
  grep -h "FAILED\|cases in\|above" $OUT/fz/*.log | cut -c1-400
  tar czf $OUT/fz.tgz -C $OUT fz && rm -rf $OUT/fz
fi
date +%T
