"""Two-rank checks of a generated module on torch.distributed (run by torchrun).

    torchrun --standalone --nproc-per-node 2 tests/distributed/worker.py generated/<module>.py OUT.json

CUDA + NCCL when GPUs are present (one per rank), else CPU + gloo with TRITON_INTERPRET=1.
1. Tensor parallel: the packed weight split by shard_packed_weight (column-parallel) and a
   row-parallel down projection; output and every gradient vs the unsharded computation.
2. FSDP2 (fully_shard) over an MLP with FusedGLU: loss and gradients vs one process.
3. The whole MLP (mlp / FusedMLP): tensor parallel with shard_packed_weight + shard_down_weight
   (each rank's mlp gives a partial output, summed), and FSDP2 over FusedMLP, its packed weight
   one Parameter or two parts.
A grouped module (mixture of experts) runs its own two instead:
4. Tensor parallel inside the experts: shard_grouped_weight (weights and biases, column-parallel)
   and shard_grouped_down_weight (row-parallel) with grouped_glu + grouped_linear.
5. FSDP2 over FusedExperts (with biases; the experts' dim sharded), router outputs per rank.
6. Expert parallel: each rank holds E / ep experts; its tokens go to their experts' ranks by
   all-to-all, grouped_glu + grouped_linear run on the local experts with local offsets, the
   outputs come back by all-to-all (gradients through both).
"""

import importlib.util
import json
import os
import sys

import torch

CUDA = torch.cuda.is_available()
if not CUDA:
    os.environ["TRITON_INTERPRET"] = "1"  # before the module's kernels are decorated

import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def load(path):
    spec = importlib.util.spec_from_file_location("glu_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def rel_err(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm()).item()


class _CopyToTP(torch.autograd.Function):
    """Identity forward; the input's gradient is summed over the TP ranks (Megatron's f)."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        dist.all_reduce(grad)
        return grad


class _ReduceFromTP(torch.autograd.Function):
    """The row-parallel projection's partial outputs summed over ranks (Megatron's g)."""

    @staticmethod
    def forward(ctx, y):
        y = y.contiguous()
        dist.all_reduce(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        return grad


def _tp_problem(mod, device, ws, seed):
    """The same MLP weights and data on every rank: x, packed gate/up, down weight, dy."""
    torch.manual_seed(seed)
    K, N, M = 64, ws * 2 * mod.CHUNK, 24
    dt = mod.DTYPE
    gate_w = (torch.randn(N, K) / K**0.5).to(device, dt)
    up_w = (torch.randn(N, K) / K**0.5).to(device, dt)
    down_w = (torch.randn(K, N) / N**0.5).to(device, dt)
    x = torch.randn(M, K).to(device, dt)
    dy = torch.randn(M, K).to(device, dt)
    return x, mod.pack_weight(gate_w, up_w), down_w, dy


def tensor_parallel(mod, device, rank, ws):
    x, packed, down_w, dy = _tp_problem(mod, device, ws, seed=0)
    N = down_w.shape[1]

    # the unsharded computation (every rank does it: same seed, same data)
    xf, wf, df = (t.clone().requires_grad_() for t in (x, packed, down_w))
    yf = F.linear(mod.glu(xf, wf), df)
    yf.backward(dy)

    # column-parallel glu + row-parallel down projection
    cols = slice(rank * N // ws, (rank + 1) * N // ws)
    shard = mod.shard_packed_weight(packed, rank, ws).clone().requires_grad_()
    down_shard = down_w[:, cols].clone().requires_grad_()
    xt = x.clone().requires_grad_()
    hidden = mod.glu(_CopyToTP.apply(xt), shard)  # [M, N / tp]: sharded on the hidden dim
    y = _ReduceFromTP.apply(F.linear(hidden, down_shard))
    y.backward(dy)
    full_shard_grad = mod.shard_packed_weight(wf.grad, rank, ws)
    return {
        "out": rel_err(y, yf),
        "grad_x": rel_err(xt.grad, xf.grad),
        "grad_packed_shard": rel_err(shard.grad, full_shard_grad),
        "grad_down_shard": rel_err(down_shard.grad, df.grad[:, cols]),
    }


def mlp_tensor_parallel(mod, device, rank, ws):
    """mlp on each rank's shards (column-parallel gate/up, row-parallel down) == mlp unsharded."""
    x, packed, down_w, dy = _tp_problem(mod, device, ws, seed=2)
    xf, wf, df = (t.clone().requires_grad_() for t in (x, packed, down_w))
    mod.mlp(xf, wf, df).backward(dy)
    yf = mod.mlp(x, packed, down_w)

    shard = mod.shard_packed_weight(packed, rank, ws).clone().requires_grad_()
    down_shard = mod.shard_down_weight(down_w, rank, ws).clone().requires_grad_()
    xt = x.clone().requires_grad_()
    y = _ReduceFromTP.apply(mod.mlp(_CopyToTP.apply(xt), shard, down_shard))
    y.backward(dy)
    return {
        "out": rel_err(y, yf),
        "grad_x": rel_err(xt.grad, xf.grad),
        "grad_packed_shard": rel_err(shard.grad, mod.shard_packed_weight(wf.grad, rank, ws)),
        "grad_down_shard": rel_err(down_shard.grad, mod.shard_down_weight(df.grad, rank, ws)),
    }


def _fsdp2_step(model, reference, shard, shape, device, dt, rank, ws):
    """One training step of ``model`` under FSDP2 (``shard``'s modules fully_shard-ed, inner
    first) on this rank's batch, against ``reference`` (same parameters, unsharded) stepped in
    this one process on all ranks' batches (FSDP averages gradients over ranks): the relative
    errors of the loss and of every parameter's gradient."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh(device.type, (ws,))

    xs = [torch.randn(shape).to(device, dt) for _ in range(ws)]
    dys = [torch.randn(shape).to(device, dt) for _ in range(ws)]
    ref_loss = sum((reference(x).float() * dy.float()).sum() for x, dy in zip(xs, dys)) / ws
    ref_loss.backward()
    for module in shard:
        fully_shard(module, mesh=mesh)
    loss = (model(xs[rank]).float() * dys[rank].float()).sum()
    loss.backward()
    loss = loss.detach().clone()
    dist.all_reduce(loss)
    loss /= ws
    errs = {"loss": abs(loss.item() - ref_loss.item()) / abs(ref_loss.item())}
    for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
        errs[f"grad {name}"] = rel_err(p.grad.full_tensor(), q.grad)
    return errs


def mlp_fsdp2(mod, device, rank, ws, weight_parts=False):
    """FSDP2 over FusedMLP, its packed weight one Parameter or (``weight_parts``) two, as a
    big layer holds it (v0.49; the all-gathered parts are two tensors, apart); with the parts,
    also the sharded module's state_dict: the packed weight, equal to the unsharded one's."""
    K, N, M = 64, 2 * mod.CHUNK, 16
    dt = mod.DTYPE
    torch.manual_seed(3)
    kwargs = {"weight_parts": True} if weight_parts else {}
    reference = mod.FusedMLP(K, N, device=device, **kwargs)
    model = mod.FusedMLP(K, N, device=device, **kwargs)
    model.load_state_dict(reference.state_dict())
    names = [name for name, _ in model.named_parameters()]
    assert not weight_parts or names == ["weight_a", "weight_b", "down_weight"], names
    errs = _fsdp2_step(model, reference, [model], (M, K), device, dt, rank, ws)
    if weight_parts:
        state = model.state_dict()
        packed = state["weight"].full_tensor()
        errs["state_dict weight"] = 0.0 if torch.equal(packed, reference.weight.detach()) else 1.0
        model.load_state_dict(state)
    return errs


def mlp_fsdp2_parts(mod, device, rank, ws):
    return mlp_fsdp2(mod, device, rank, ws, weight_parts=True)


def fsdp2(mod, device, rank, ws):
    K, N, M = 64, 2 * mod.CHUNK, 16
    dt = mod.DTYPE

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            # two weight parts (DTensors each) although the layer is small (PARTS_MIN_WEIGHT)
            self.glu = mod.FusedGLU(K, N, device=device, weight_parts=True)
            self.down_proj = torch.nn.Linear(N, K, bias=False, device=device, dtype=dt)

        def forward(self, x):
            return self.down_proj(self.glu(x))

    torch.manual_seed(1)
    reference = MLP()
    model = MLP()
    model.load_state_dict(reference.state_dict())
    errs = _fsdp2_step(model, reference, [model.glu, model], (M, K), device, dt, rank, ws)
    # the sharded FusedGLU's state_dict: the packed weight (FusedGLU's two Parameters joined,
    # as DTensors), equal to the unsharded module's, and it loads back
    state = model.glu.state_dict()
    packed = state["weight"].full_tensor()
    errs["state_dict weight"] = 0.0 if torch.equal(packed, reference.glu.weight.detach()) else 1.0
    model.glu.load_state_dict(state)
    return errs


def grouped_tensor_parallel(mod, device, rank, ws):
    """grouped_glu + grouped_linear on each rank's shards inside every expert (an expert
    without rows among them) == the unsharded layer; the gradients are the shards' of it."""
    torch.manual_seed(4)
    sizes = [9, 0, 15]
    E, T, K, N = len(sizes), sum(sizes), 64, ws * mod.CHUNK
    dt = mod.DTYPE
    gate, up = ((torch.randn(E, N, K) / K**0.5).to(device, dt) for _ in range(2))
    packed = mod.pack_grouped_weight(gate, up)
    bias = (torch.randn(E, 2 * N) * 0.2).to(device, dt)
    down = (torch.randn(E, K, N) / N**0.5).to(device, dt)
    x, dy = (torch.randn(T, K).to(device, dt) for _ in range(2))
    offsets = torch.tensor(sizes).cumsum(0).to(device, torch.int32)

    def layer(x, w, b, d):
        return mod.grouped_linear(mod.grouped_glu(x, w, offsets, b), d, offsets)

    full = [t.clone().requires_grad_() for t in (x, packed, bias, down)]
    yf = layer(*full)
    yf.backward(dy)

    shards = [
        mod.shard_grouped_weight(packed, rank, ws).requires_grad_(),
        mod.shard_grouped_weight(bias, rank, ws).requires_grad_(),
        mod.shard_grouped_down_weight(down, rank, ws).requires_grad_(),
    ]
    xt = x.clone().requires_grad_()
    y = _ReduceFromTP.apply(layer(_CopyToTP.apply(xt), *shards))
    y.backward(dy)
    return {
        "out": rel_err(y, yf),
        "grad_x": rel_err(xt.grad, full[0].grad),
        "grad_packed_shard": rel_err(
            shards[0].grad, mod.shard_grouped_weight(full[1].grad, rank, ws)
        ),
        "grad_bias_shard": rel_err(
            shards[1].grad, mod.shard_grouped_weight(full[2].grad, rank, ws)
        ),
        "grad_down_shard": rel_err(
            shards[2].grad, mod.shard_grouped_down_weight(full[3].grad, rank, ws)
        ),
    }


def grouped_fsdp2(mod, device, rank, ws):
    """FSDP2 (fully_shard) over FusedExperts with biases: each rank's tokens and router outputs,
    loss and every gradient vs one process that runs all ranks' batches."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    E, D, F, S, k = 4, 64, 2 * mod.CHUNK, 12, 2
    dt = mod.DTYPE
    torch.manual_seed(5)
    reference = mod.FusedExperts(E, D, F, bias=True, device=device)
    with torch.no_grad():  # biases that matter (they start at zero)
        for b in (reference.bias, reference.down_bias):
            b.normal_(0, 0.2)
    model = mod.FusedExperts(E, D, F, bias=True, device=device)
    model.load_state_dict(reference.state_dict())
    batches = []
    for _ in range(ws):
        hidden = torch.randn(S, D).to(device, dt)
        index = torch.randint(0, E - 1, (S, k)).to(device)  # the last expert gets no rows
        weights = torch.softmax(torch.randn(S, k), dim=-1).to(device, dt)
        batches.append((hidden, index, weights, torch.randn(S, D).to(device, dt)))

    def loss_of(module, hidden, index, weights, dy):
        return (module(hidden, index, weights).float() * dy.float()).sum()

    ref_loss = sum(loss_of(reference, *b) for b in batches) / ws
    ref_loss.backward()
    fully_shard(model, mesh=init_device_mesh(device.type, (ws,)))
    loss = loss_of(model, *batches[rank])
    loss.backward()
    loss = loss.detach().clone()
    dist.all_reduce(loss)
    loss /= ws
    errs = {"loss": abs(loss.item() - ref_loss.item()) / abs(ref_loss.item())}
    for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
        errs[f"grad {name}"] = rel_err(p.grad.full_tensor(), q.grad)
    # the expert without rows: an exact zero gradient, sharded as the rest
    errs["zero-row expert grad"] = float(model.weight.grad.full_tensor()[E - 1].abs().max())
    return errs


def _all_to_all(x, out_splits, in_splits):
    """Rows of x sent to each rank (in_splits), rows received (out_splits); differentiable."""
    import warnings

    from torch.distributed.nn.functional import all_to_all_single

    out = x.new_empty((sum(out_splits),) + tuple(x.shape[1:]))
    with warnings.catch_warnings():  # "deprecated" (torch 2.11+); its successor is private
        warnings.simplefilter("ignore", FutureWarning)
        return all_to_all_single(out, x.contiguous(), out_splits, in_splits)


def grouped_expert_parallel(mod, device, rank, ws):
    """Expert parallelism around grouped_glu + grouped_linear (top-1 routing, an expert without
    tokens): out, grad_x and the local experts' gradients vs the whole layer in one process."""
    torch.manual_seed(6)
    E, K, N, S = 2 * ws, 64, mod.CHUNK, 20
    local = E // ws
    dt = mod.DTYPE
    gate, up = ((torch.randn(E, N, K) / K**0.5).to(device, dt) for _ in range(2))
    packed = mod.pack_grouped_weight(gate, up)
    down = (torch.randn(E, K, N) / N**0.5).to(device, dt)
    xs = [torch.randn(S, K).to(device, dt) for _ in range(ws)]
    dys = [torch.randn(S, K).to(device, dt) for _ in range(ws)]
    ids = [torch.randint(0, E - 1, (S,)) for _ in range(ws)]  # expert E - 1 gets no tokens

    # the whole layer, every rank's tokens, in one process
    wf, df = packed.clone().requires_grad_(), down.clone().requires_grad_()
    xf = [x.clone().requires_grad_() for x in xs]
    ref = []
    for x, i in zip(xf, ids):
        order = torch.argsort(i, stable=True)
        offs = torch.bincount(i, minlength=E).cumsum(0).to(device, torch.int32)
        y = mod.grouped_linear(mod.grouped_glu(x[order.to(device)], wf, offs), df, offs)
        ref.append(torch.empty_like(y).index_copy(0, order.to(device), y))
    sum((y.float() * dy.float()).sum() for y, dy in zip(ref, dys)).backward()

    # this rank: its tokens by expert, to the experts' ranks and back
    x = xs[rank].clone().requires_grad_()
    order = torch.argsort(ids[rank], stable=True)
    counts = torch.bincount(ids[rank], minlength=E)  # [E], tokens per expert
    received = torch.empty(E, dtype=counts.dtype, device=device)
    dist.all_to_all_single(received, counts.to(device))  # each rank's counts of my experts
    recv = received.cpu().view(ws, local)  # [source rank, local expert]
    send_splits = counts.view(ws, local).sum(1).tolist()
    recv_splits = recv.sum(1).tolist()
    rows = _all_to_all(x[order.to(device)], recv_splits, send_splits)
    # received: by source rank, then local expert; grouped by local expert for the GEMMs
    starts = torch.tensor([0] + recv.flatten().tolist()).cumsum(0)[:-1].view(ws, local)
    perm = torch.cat(
        [
            torch.arange(starts[r, e], starts[r, e] + recv[r, e])
            for e in range(local)
            for r in range(ws)
        ]
    ).to(device)
    offs = recv.sum(0).cumsum(0).to(device, torch.int32)
    w_local = packed[rank * local : (rank + 1) * local].clone().requires_grad_()
    d_local = down[rank * local : (rank + 1) * local].clone().requires_grad_()
    y_local = mod.grouped_linear(mod.grouped_glu(rows[perm], w_local, offs), d_local, offs)
    y_back = torch.empty_like(y_local).index_copy(0, perm, y_local)
    y_sorted = _all_to_all(y_back, send_splits, recv_splits)
    y = torch.empty_like(y_sorted).index_copy(0, order.to(device), y_sorted)
    (y.float() * dys[rank].float()).sum().backward()
    sl = slice(rank * local, (rank + 1) * local)
    errs = {
        "out": rel_err(y, ref[rank]),
        "grad_x": rel_err(x.grad, xf[rank].grad),
        "grad_local_packed": rel_err(w_local.grad, wf.grad[sl]),
        "grad_local_down": rel_err(d_local.grad, df.grad[sl]),
    }
    if rank == ws - 1:  # holds expert E - 1, which no token chose: an exact zero gradient
        errs["zero-row expert grad"] = float(w_local.grad[-1].abs().max())
    return errs


def main():
    path, out = sys.argv[1], sys.argv[2]
    backend = "nccl" if CUDA else "gloo"
    dist.init_process_group(backend)
    rank, ws = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", rank) if CUDA else torch.device("cpu")
    if CUDA:
        torch.cuda.set_device(device)
    mod = load(path)
    if not CUDA:  # the interpreter's bf16 dot bug (triton-lang/triton#11584)
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from interpreter_patch import widen_bf16_dot

        widen_bf16_dot()
    results = {
        "rank": rank,
        "world_size": ws,
        "backend": backend,
        "module": os.path.basename(path),
        "torch": torch.__version__,
    }
    if hasattr(mod, "grouped_glu"):  # its dense functions are another module's: the MoE parts
        results["grouped_tensor_parallel"] = grouped_tensor_parallel(mod, device, rank, ws)
        results["grouped_expert_parallel"] = grouped_expert_parallel(mod, device, rank, ws)
        fsdp_parts = {"grouped_fsdp2": grouped_fsdp2}
    else:
        results["tensor_parallel"] = tensor_parallel(mod, device, rank, ws)
        results["mlp_tensor_parallel"] = mlp_tensor_parallel(mod, device, rank, ws)
        fsdp_parts = {"fsdp2": fsdp2, "mlp_fsdp2": mlp_fsdp2, "mlp_fsdp2_parts": mlp_fsdp2_parts}
    try:
        for name, part in fsdp_parts.items():
            results[name] = part(mod, device, rank, ws)
    except Exception as e:  # reported, and failed by the test
        results["fsdp2_error"] = f"{type(e).__name__}: {e}"
    with open(f"{out}.rank{rank}.json", "w") as f:
        json.dump(results, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()
    # The results are on disk and the group is down: leave without the interpreter's teardown.
    # gloo's C++ threads can still hold work objects then, and destroying them during finalisation
    # aborts the process at random ("terminate called without an active exception", SIGABRT; seen
    # once in CI, pytorch/pytorch#179291). os._exit skips that teardown, not a check.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
