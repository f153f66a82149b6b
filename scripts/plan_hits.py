"""How often a training step replays its launch plans (GPU): per shape, 10 warm-up steps of
glu (fwd+bwd, fresh outputs and gradients each step, as a training loop), then the launches
recorded (plan misses) and replayed over 30 more, for the module's own path at that shape and
with the low-peak path forced (two autograd nodes, split factor buffers where the rule splits).

    PYTHONPATH=. python scripts/plan_hits.py [MODULE.py] [M,K,N ...]
"""

import sys

import torch

sys.path.insert(0, ".")
from codegen.bench import load_module, write_results  # noqa: E402

SHAPES = [(2048, 4096, 1408), (4096, 2048, 5632), (8192, 4096, 14336)]


def main():
    args = sys.argv[1:]
    path = next((a for a in args if a.endswith(".py")), "generated/glu_silu_bf16_bn128_sm90.py")
    shapes = [tuple(map(int, a.split(","))) for a in args if not a.endswith(".py")] or SHAPES
    mod = load_module(path)
    counts = {"recorded": 0, "replayed": 0}
    record, replay = mod._record, mod._replay

    def counted_record(*a):
        counts["recorded"] += 1
        return record(*a)

    def counted_replay(*a):
        hit = replay(*a)
        counts["replayed"] += hit
        return hit

    mod._record, mod._replay = counted_record, counted_replay
    shipped_rule = mod.LOW_PEAK_MIN_FLOP
    res = {}
    for M, K, N in shapes:
        x = torch.randn(M, K, device="cuda", dtype=mod.DTYPE, requires_grad=True)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE).requires_grad_()
        dy = torch.randn(M, N, device="cuda", dtype=mod.DTYPE)
        for path_name, low_peak in [("shipped", shipped_rule), ("low_peak", 0)]:
            mod.LOW_PEAK_MIN_FLOP = low_peak
            for i in range(40):
                if i == 10:
                    counts.update(recorded=0, replayed=0)
                mod.glu(x, w).backward(dy)
                x.grad = w.grad = None
            torch.cuda.synchronize()
            row = dict(counts, split=mod._split_point(M, N, K) < N)
            res[f"{M}x{K}x{N} {path_name}"] = row
            print(f"{M}x{K}x{N} {path_name:8s} over 30 steps: {row}", flush=True)
        del x, w, dy
        torch.cuda.empty_cache()
    write_results("plan_hits.json", res)


if __name__ == "__main__":
    main()
