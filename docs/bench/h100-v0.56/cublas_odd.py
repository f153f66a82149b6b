"""v0.56: a^T @ b in bf16 on cuBLAS with an odd reduction length (case 429: 6145 rows, [128, 520]
output, 0.0127 relative error against 0.0017 at 6144): which shapes, which layouts, whether the
last row is what is lost, and which formulation is right."""
import torch, importlib.util

def rel(a, b):
    return ((a.double() - b).norm() / b.norm()).item()

def case(M, P, Q, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randn(M, P, device="cuda", generator=g).bfloat16(), torch.randn(M, Q, device="cuda", generator=g).bfloat16()

print("M P Q: a.t()@b | vs ref without last row | first row dropped | (b.t()@a).t() | a.t().contiguous()@b | fp32 operands")
for P, Q in ((128, 520), (128, 512), (128, 528), (64, 520), (256, 520), (128, 1040), (520, 128), (2048, 520)):
    for M in (6144, 6145, 6143, 3073, 1025, 12289, 65537):
        a, b = case(M, P, Q)
        ad, bd = a.double(), b.double()
        ref = ad.t() @ bd
        got = a.t() @ b
        print(M, P, Q, f"{rel(got, ref):.5f} | {rel(got, ad[:-1].t() @ bd[:-1]):.5f} | {rel(got, ad[1:].t() @ bd[1:]):.5f} |"
              f" {rel((b.t() @ a).t(), ref):.5f} | {rel(a.t().contiguous() @ b, ref):.5f} | {rel(a.float().t() @ b.float(), ref):.5f}")
a, b = case(6145, 128, 520)
ad, bd = a.double(), b.double(); ref = ad.t() @ bd
for lib in ("cublas", "cublaslt"):
    try:
        torch.backends.cuda.preferred_blas_library(lib)
        print("preferred_blas_library", lib, f"{rel(a.t() @ b, ref):.5f}", "fp16:", f"{rel(a.half().t() @ b.half(), ad.t() @ bd):.5f}")
    except Exception as e:
        print(lib, "error", e)
torch.backends.cuda.preferred_blas_library("cublas")
lin = torch.nn.Linear(520, 128, bias=False, device="cuda", dtype=torch.bfloat16)
x = b.clone().requires_grad_(); lin(x).backward(a)
print("nn.Linear(520, 128) weight grad, 6145 rows:", f"{rel(lin.weight.grad, ref):.5f}")
lin = torch.nn.Linear(520, 128, bias=True, device="cuda", dtype=torch.bfloat16)
lin(x).backward(a)
print("nn.Linear(520, 128, bias) weight grad, 6145 rows:", f"{rel(lin.weight.grad, ref):.5f}")
# where the error is: per output element against the reference
d = (a.t() @ b).double() - ref
print("max |err| / max |ref|:", (d.abs().max() / ref.abs().max()).item(), " rows of the output with big errors:", int((d.abs().amax(1) > 0.05 * ref.abs().max()).sum()), "of", d.shape[0])
# the dense sm80 bf16 bn64 module at the case's shape (its grad_W is this GEMM)
spec = importlib.util.spec_from_file_location("m", "generated/glu_sigmoid_bf16_bn64_sm80.py")
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
for M in (6144, 6145):
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(M, 520, device="cuda", generator=g).bfloat16().requires_grad_()
    w = (torch.randn(128, 520, device="cuda", generator=g) / 520**0.5).bfloat16()
    dy = torch.randn(M, 64, device="cuda", generator=g).bfloat16()
    wp = m.pack_weight(w[64:], w[:64]).requires_grad_()
    m.glu(x, wp).backward(dy)
    xd, wd = x.detach().double().requires_grad_(), w.double().requires_grad_()
    h = xd @ wd.t(); (h[:, :64] * torch.sigmoid(h[:, 64:])).backward(dy.double())
    gg, gu = m.unpack_weight(wp.grad)
    print("dense sm80 bn64 glu", M, "x520 -> 64: grad_W", f"{rel(torch.cat([gu, gg]), wd.grad):.5f}", "grad_x", f"{rel(x.grad, xd.grad):.5f}")
