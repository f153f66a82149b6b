"""Whole decoder training steps captured in CUDA graphs (GPU): can each bench-model variant be
captured, what does the replay cost against the eager step, and does it compute the same.

`swiglu-gen bench-model` found 1B-sized decoders host-bound by transformers' own Python (~20 ms
of host time per 4-layer step on the H200 hosts, v0.22), where every variant's wall time is
about the same.  A CUDA graph of the whole step (forward, loss, backward; gradients set to None
first, as a training loop's zero_grad) removes the host from the replay.  Per model and
variant this prints: whether the capture succeeded (else the error's first line), the eager
step's and the replay's ms (interleaved rounds, medians), and after a replay with new token
ids the largest relative error of the loss' gradients against an eager step with those ids,
beside the same measure between two eager steps (kernels that are not deterministic, and a MoE
router's top-k that flips with them, set that floor).

    PYTHONPATH=. python scripts/model_graphs.py MODULE.py --model NAME[:TOKENS] ... [--layers L]

Results: $OUT/model-graphs.json (or build/).
"""

import argparse
import statistics
import sys
import traceback

import torch

sys.path.insert(0, ".")
from codegen.bench import cuda_graph, load_module, write_results  # noqa: E402
from codegen.bench_model import (  # noqa: E402
    _cuda_timer,
    _forward,
    _model_act,
    _rel,
    build_variants,
    model_config,
    parse_model,
)


def measure(mod, name, batch, seq, layers, rounds):
    config = model_config(name, layers, _model_act(mod, name), False)
    models = build_variants(mod, config, "cuda")
    gen = torch.Generator(device="cpu").manual_seed(1)
    static_ids = torch.randint(0, config.vocab_size, (batch, seq), generator=gen).cuda()
    probe = torch.randn(batch, seq, config.hidden_size, generator=gen).cuda()
    new_ids = torch.randint(0, config.vocab_size, (batch, seq), generator=gen).cuda()
    row = {"model": name, "tokens": batch * seq, "layers": layers, "variants": {}}
    steps = {}
    for variant, model in models.items():
        model.train()

        def step(model=model):
            model.zero_grad(set_to_none=True)
            _forward(model, static_ids, probe)[1].backward()

        info = {}
        try:
            graph = cuda_graph(step)
        except Exception as e:  # noqa: BLE001 (a capture failure is a result)
            info["captured"] = False
            info["error"] = traceback.format_exception_only(type(e), e)[-1].strip()[:300]
            torch.cuda.synchronize()
            row["variants"][variant] = info
            steps[f"{variant} eager"] = step
            print(f"{name} {variant}: not captured: {info['error']}", flush=True)
            continue
        info["captured"] = True
        # a replay with new ids against an eager step with them
        static_ids.copy_(new_ids)
        graph.replay()
        torch.cuda.synchronize()
        replayed = [p.grad.clone() for p in model.parameters() if p.grad is not None]
        model.zero_grad(set_to_none=True)
        _forward(model, new_ids, probe)[1].backward()
        eager = [p.grad for p in model.parameters() if p.grad is not None]
        info["replay_grad_rel_err_max"] = max(_rel(a, b) for a, b in zip(replayed, eager))
        model.zero_grad(set_to_none=True)  # the yardstick: an eager step repeated
        _forward(model, new_ids, probe)[1].backward()
        again = [p.grad for p in model.parameters() if p.grad is not None]
        info["eager_repeat_grad_rel_err_max"] = max(_rel(a, b) for a, b in zip(again, eager))
        model.zero_grad(set_to_none=True)
        steps[f"{variant} eager"] = step
        steps[f"{variant} graph"] = graph.replay
        row["variants"][variant] = info
    samples = {k: [] for k in steps}
    for r in range(rounds):
        order = list(steps.items()) if r % 2 == 0 else list(steps.items())[::-1]
        for k, fn in order:
            samples[k].append(_cuda_timer(fn))
    row["ms"] = {k: statistics.median(v) for k, v in samples.items()}
    row["rounds"] = samples
    for variant, info in row["variants"].items():
        ms = row["ms"]
        graph_ms = ms.get(f"{variant} graph")
        print(
            f"{name} {batch * seq} tokens {variant}: eager {ms[f'{variant} eager']:.2f} ms"
            + (
                f", graph {graph_ms:.2f} ms, replay grad err {info['replay_grad_rel_err_max']:.1e}"
                f" (eager repeated: {info['eager_repeat_grad_rel_err_max']:.1e})"
                if graph_ms
                else ""
            ),
            flush=True,
        )
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("module")
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    mod = load_module(args.module)
    rows = []
    for text in args.model:
        name, batch, seq = parse_model(text, args.seq)
        rows.append(measure(mod, name, batch, seq, args.layers, args.rounds))
        torch.cuda.empty_cache()
    print(write_results("model-graphs.json", {"module": args.module, "rows": rows}))


if __name__ == "__main__":
    main()
