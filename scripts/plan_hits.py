"""How often a training step replays its launch plans (GPU): per shape, 10 warm-up steps of
glu (fwd+bwd, fresh outputs each step, as a training loop), then the launches recorded (plan
misses) and replayed over 30 more, for the module's own path at that shape, with the low-peak
path forced (two autograd nodes, split factor buffers where the rule splits), and (v0.44) with
the weight as FusedGLU holds it (two parts from PARTS_MIN_WEIGHT on: bench.fused_glu_call),
each with the gradients set to None every step and accumulated into .grad.  Also counted: the
launches that took _launch's path (a plan miss, or a launch without a plan) and the TMA tensor
maps encoded (a _DirectLaunch cache miss: a driver call each).

    PYTHONPATH=. python scripts/plan_hits.py [MODULE.py] [M,K,N ...]
"""

import sys

import torch

sys.path.insert(0, ".")
from codegen.bench import fused_glu_call, load_module, write_results  # noqa: E402

SHAPES = [(2048, 4096, 1408), (4096, 2048, 5632), (8192, 4096, 14336)]


def main():
    args = sys.argv[1:]
    path = next((a for a in args if a.endswith(".py")), "generated/glu_silu_bf16_bn128_sm90.py")
    shapes = [tuple(map(int, a.split(","))) for a in args if not a.endswith(".py")] or SHAPES
    mod = load_module(path)
    counts = {"recorded": 0, "replayed": 0, "launch_path": 0, "maps_encoded": 0}
    record, replay, launch = mod._record, mod._replay, mod._launch
    expand = mod._DirectLaunch._expand

    def counted_record(*a):
        counts["recorded"] += 1
        return record(*a)

    def counted_replay(*a):
        hit = replay(*a)
        counts["replayed"] += hit
        return hit

    def counted_launch(*a, **k):
        counts["launch_path"] += 1
        return launch(*a, **k)

    def counted_expand(self, i, spec):
        before = len(self.maps)
        out = expand(self, i, spec)
        counts["maps_encoded"] += len(self.maps) != before
        return out

    mod._record, mod._replay, mod._launch = counted_record, counted_replay, counted_launch
    mod._DirectLaunch._expand = counted_expand
    shipped_rule = mod.LOW_PEAK_MIN_FLOP
    res = {}
    for M, K, N in shapes:
        x = torch.randn(M, K, device="cuda", dtype=mod.DTYPE, requires_grad=True)
        w = (torch.randn(2 * N, K, device="cuda") / K**0.5).to(mod.DTYPE).requires_grad_()
        dy = torch.randn(M, N, device="cuda", dtype=mod.DTYPE)
        fused, fused_inputs = fused_glu_call(mod, w.detach(), x)
        paths = [
            ("shipped", shipped_rule, mod.glu, (x, w)),
            ("low_peak", 0, mod.glu, (x, w)),
            ("FusedGLU", shipped_rule, fused, fused_inputs),
        ]
        for path_name, low_peak, f, inputs in paths:
            leaves = [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]
            for grads in ("None", "accumulated"):
                mod.LOW_PEAK_MIN_FLOP = low_peak
                for t in leaves:
                    t.grad = None
                for i in range(40):
                    if i == 10:
                        counts.update(dict.fromkeys(counts, 0))
                    f(*inputs).backward(dy)
                    if grads == "None":
                        for t in leaves:
                            t.grad = None
                torch.cuda.synchronize()
                row = dict(counts, split=mod._split_point(M, N, K) < N, leaves=len(leaves))
                res[f"{M}x{K}x{N} {path_name} grads {grads}"] = row
                print(f"{M}x{K}x{N} {path_name:8s} grads {grads:11s} 30 steps: {row}", flush=True)
        mod.LOW_PEAK_MIN_FLOP = shipped_rule
        del x, w, dy, fused_inputs
        torch.cuda.empty_cache()
    write_results("plan_hits.json", res)


if __name__ == "__main__":
    main()
