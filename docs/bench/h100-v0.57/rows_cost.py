"""v0.56: what _mm_rows costs against one cuBLAS GEMM (the weight gradient a^T b over M rows),
M with and without a tail, and a whole fwd+bwd step of the SwiGLU module at odd M, v0.55 vs now."""
import importlib.util, sys, torch, triton

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); sys.modules[name] = m; spec.loader.exec_module(m); return m

new = load("generated/glu_silu_bf16_bn128_sm90.py", "new_glu")
old = load(".gpu/old56/glu_silu_bf16_bn128_sm90.py", "old_glu")
rel = lambda a, b: ((a.double() - b).norm() / b.norm()).item()
for M, P, Q in ((8192, 28672, 4096), (8191, 28672, 4096), (8193, 28672, 4096), (6145, 11264, 2048), (4097, 2816, 4096), (6145, 128, 520), (65537, 1536, 2048), (2049, 256, 4096)):
    a = torch.randn(M, P, device="cuda").bfloat16(); b = torch.randn(M, Q, device="cuda").bfloat16()
    t_mm = triton.testing.do_bench(lambda: torch.mm(a.t(), b), warmup=20, rep=100)
    t_rows = triton.testing.do_bench(lambda: new._mm_rows(a, b), warmup=20, rep=100)
    t_mm2 = triton.testing.do_bench(lambda: torch.mm(a.t(), b), warmup=20, rep=100)
    err = ""
    if M * P * Q <= 3e10:
        ref = a.double().t() @ b.double()
        err = f" err mm {rel(torch.mm(a.t(), b), ref):.5f} rows {rel(new._mm_rows(a, b), ref):.5f}"
    print(f"wgrad {M}x{P}x{Q}: mm {t_mm:.4f} / {t_mm2:.4f} ms, _mm_rows {t_rows:.4f} ms ({t_rows / min(t_mm, t_mm2):.3f}x){err}")
    del a, b
for M, K, N in ((8191, 4096, 14336), (4095, 2048, 5632), (6145, 520, 128)):
    x = torch.randn(M, K, device="cuda").bfloat16().requires_grad_()
    w = (torch.randn(2 * N, K, device="cuda") / K**0.5).bfloat16().requires_grad_()
    dy = torch.randn(M, N, device="cuda").bfloat16()
    ts = {}
    for r in range(2):
        for tag, m in (("v0.55", old), ("now", new)):
            def step():
                x.grad = w.grad = None
                m.glu(x, w).backward(dy)
            ts.setdefault(tag, []).append(triton.testing.do_bench(step, warmup=5, rep=100))
    print(f"fwd+bwd {M}x{K}x{N}: v0.55 {min(ts['v0.55']):.4f} ms, now {min(ts['now']):.4f} ms ({min(ts['now']) / min(ts['v0.55']):.3f}x)")
