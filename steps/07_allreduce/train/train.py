"""train.py: one small model trained four times under torchrun, same seeds and data: DDP's gradients summed by step 07's ring (our verbs code) or by Gloo, in float and in fixed point.

Run by 'make train' (steps/07_allreduce/train/train.sh), one process per rank:
  torchrun --nproc_per_node 3 ... steps/07_allreduce/train/train.py --ring-port 18600

The runs, in this order, each from the same initial weights:
  ring   DDP with ring_comm.py's hook: each gradient bucket scaled by 1/N, then
         summed by step 07's ring over RDMA
  gloo   DDP as it comes: Gloo's all-reduce over TCP
  ring-fixed, gloo-fixed
         the same two, with every gradient rounded to a whole number of 2^-20
         and summed as int32: integer sums do not depend on their order
Rank 0 prints each step's loss (the mean over all ranks' batches) for every run,
the largest difference between ring and gloo in each pair, each model's accuracy
on held-back data, and the time per step.  Then it checks every bucket of one
step against the bound that float summation order allows (see bucket_bound).
"""
import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ring_comm import RingComm, RingCommError, completed_future, ring_allreduce_hook  # noqa: E402

FEATURES, TEACHER_HIDDEN, HIDDEN, CLASSES = 32, 64, 512, 8
TRAIN, HELD_BACK = 3584, 512
FIXED_SHIFT = 20  # fixed point: a gradient becomes round(g * 2^20) as int32
UNIT_ROUNDOFF = 2.0 ** -24  # float32's u


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=20, help="training steps per run (default 20)")
    p.add_argument("--batch", type=int, default=8, help="samples per rank per step (default 8)")
    p.add_argument("--lr", type=float, default=0.1, help="SGD's learning rate, with momentum 0.9 (default 0.1)")
    p.add_argument("--seed", type=int, default=0, help="the data's and the weights' seed (default 0)")
    p.add_argument("--ring-port", type=int, default=18600,
                   help="TCP port of step 07's rendezvous on rank 0 (default 18600; not MASTER_PORT)")
    p.add_argument("--bucket-kb", type=int, default=8,
                   help="DDP's bucket cap in KiB after its first bucket of 1 MiB (default 8)")
    p.add_argument("--timeout", type=int, default=60, help="ring_comm's bound on every wait, in s (default 60)")
    p.add_argument("--device", default=None,
                   help="the RDMA device the ring opens, as step 07's -d (default: the first one listed)")
    a = p.parse_args()
    if a.steps < 2 or a.batch < 1 or a.bucket_kb < 1 or a.timeout < 1:
        p.error("--steps must be 2 or more; --batch, --bucket-kb and --timeout 1 or more")
    return a


def make_data(seed):
    """Synthetic and the same on every rank: points labelled by a fixed random teacher network.

    No download and no package beyond python3-torch; a teacher makes the labels
    learnable, so that the loss falls and held-back accuracy means something.
    Its logits are centred over the data set before the argmax: uncentred, one
    class took 79% of the points, and a model that always said it scored 79%.
    """
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(TRAIN + HELD_BACK, FEATURES, generator=g)
    w1 = torch.randn(FEATURES, TEACHER_HIDDEN, generator=g)
    w2 = torch.randn(TEACHER_HIDDEN, CLASSES, generator=g)
    logits = torch.relu(x @ w1) @ w2
    y = (logits - logits.mean(dim=0)).argmax(dim=1)
    return x[:TRAIN], y[:TRAIN], x[TRAIN:], y[TRAIN:]


def make_model(seed):
    """283,656 weights (1.1 MB of gradients): more than DDP's first bucket of 1 MiB, so more than one bucket."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN), nn.ReLU(),
                         nn.Linear(HIDDEN, CLASSES))


def rank_batch(step, rank, world, batch):
    """This rank's rows of step's global batch: world x batch consecutive rows, wrapping around."""
    first = (step * world * batch + rank * batch) % TRAIN
    return (torch.arange(batch) + first) % TRAIN


def fixed_point_hook(sum_int32):
    """A DDP hook that sums each bucket as int32 fixed point, with SUM_INT32(tensor) doing the sum."""
    def hook(state, bucket):
        grads = bucket.buffer()
        q = torch.round(grads * (2.0 ** FIXED_SHIFT / state)).to(torch.int32)
        sum_int32(q)
        grads.copy_(q.to(torch.float32) / 2.0 ** FIXED_SHIFT)
        return completed_future(grads)
    return hook


def local_hook(state, bucket):
    """A hook that moves nothing: each rank keeps its own gradients (the run that times computing alone)."""
    return completed_future(bucket.buffer())


def attach_hook(model, name, comm, world):
    """Run NAME's way of summing the buckets; "gloo" keeps DDP's own all-reduce, over its Gloo process group."""
    if name == "ring":
        model.register_comm_hook(comm, ring_allreduce_hook)
    elif name == "ring-fixed":
        model.register_comm_hook(world, fixed_point_hook(comm.allreduce_))
    elif name == "gloo-fixed":
        model.register_comm_hook(world, fixed_point_hook(dist.all_reduce))
    elif name == "local":
        model.register_comm_hook(None, local_hook)


def train(name, args, data, comm, world, rank):
    """One run: the loss per step (mean over ranks), the seconds per step, the held-back loss before and after
    with the accuracy after, the model, and the mean time a step spent in the ring's calls (ring runs only)."""
    x, y, x_held, y_held = data
    model = DDP(make_model(args.seed), bucket_cap_mb=args.bucket_kb / 1024)
    attach_hook(model, name, comm, world)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    losses, seconds, in_ring = [], [], []
    held_before = held_back(model.module, loss_fn, x_held, y_held)
    for step in range(args.steps):
        rows = rank_batch(step, rank, world, args.batch)
        start, ring_before = time.perf_counter(), comm.seconds
        opt.zero_grad()
        loss = loss_fn(model(x[rows]), y[rows])
        loss.backward()
        opt.step()
        seconds.append(time.perf_counter() - start)
        in_ring.append(comm.seconds - ring_before)
        # The mean loss over the ranks, for the table: summed by the ring in every run
        # (one order for all), so that a rank that fails is named by every rank.
        mean = loss.detach().reshape(1).clone()
        comm.allreduce_(mean)
        losses.append(mean.item() / world)
        if (step + 1) % 10 == 0:
            print("%-20s: %s: step %d of %d" % ("progress", name, step + 1, args.steps), flush=True)
    held_after, accuracy = held_back(model.module, loss_fn, x_held, y_held)
    # Step 0 builds DDP's buckets: the means are of steps 1 on.
    in_hook = sum(in_ring[1:]) / (args.steps - 1) if name in ("ring", "ring-fixed") else None
    return losses, seconds, (held_before[0], held_after, accuracy), model.module, in_hook


def step_ms_of(seconds):
    """The mean time of a step in ms, step 0 left out: it builds DDP's buckets."""
    return 1e3 * sum(seconds[1:]) / len(seconds[1:])


def held_back(model, loss_fn, x, y):
    """The model's loss and accuracy on the held-back points (every rank computes the same)."""
    with torch.no_grad():
        out = model(x)
        return loss_fn(out, y).item(), (out.argmax(dim=1) == y).float().mean().item()


def bucket_bound(comm, world):
    """A hook that sums each bucket twice, by the ring and by Gloo, and checks how far apart they may be.

    Any order of summing n floats x_i is within gamma_(n-1) * sum|x_i| of the
    exact sum, gamma_k = k u / (1 - k u), u = 2^-24 (Higham, Accuracy and
    Stability of Numerical Algorithms, 2nd ed., section 4.2).  Two orders are
    therefore within twice that of each other, element by element.  It also
    notes each bucket's size, in the order DDP hands them over.
    """
    gamma = (world - 1) * UNIT_ROUNDOFF / (1 - (world - 1) * UNIT_ROUNDOFF)
    seen = {"sizes": [], "largest": 0.0, "worst": 0.0, "outside": 0}

    def hook(state, bucket):
        grads = bucket.buffer()
        grads.mul_(1.0 / world)
        by_gloo, magnitude = grads.clone(), grads.abs()
        dist.all_reduce(by_gloo)
        dist.all_reduce(magnitude)
        comm.allreduce_(grads)
        diff, bound = (grads - by_gloo).abs(), 2 * gamma * magnitude
        seen["sizes"][-1].append(grads.numel())
        seen["largest"] = max(seen["largest"], diff.max().item())
        seen["outside"] += int((diff > bound).sum().item())
        inside = bound > 0
        if inside.any():
            seen["worst"] = max(seen["worst"], (diff[inside] / bound[inside]).max().item())
        return completed_future(grads)
    return hook, seen


def check_buckets(args, data, comm, world, rank):
    """Two steps of the ring run again, every bucket also summed by Gloo: the two within the bound.

    Two steps, because DDP builds its buckets again after the first iteration,
    in the order the gradients became ready.
    """
    x, y = data[0], data[1]
    model = DDP(make_model(args.seed), bucket_cap_mb=args.bucket_kb / 1024)
    hook, seen = bucket_bound(comm, world)
    model.register_comm_hook(None, hook)
    for step in range(2):
        seen["sizes"].append([])
        rows = rank_batch(step, rank, world, args.batch)
        nn.CrossEntropyLoss()(model(x[rows]), y[rows]).backward()
    return seen


def sums_alone(comm, sizes, reps=5):
    """Milliseconds to sum buckets of SIZES once by the ring and once by Gloo, outside backward (mean of REPS)."""
    buckets = [torch.ones(n) for n in sizes]
    times = {}
    for name, sum_in_place in (("ring", comm.allreduce_), ("gloo", dist.all_reduce)):
        for b in buckets:  # a warm-up round
            sum_in_place(b)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(reps):
            for b in buckets:
                sum_in_place(b)
        times[name] = 1e3 * (time.perf_counter() - start) / reps
    return times


def print_pair(a, b, runs):
    la, lb = runs[a][0], runs[b][0]
    print("#\n# %s against %s\n#" % (a, b))
    print("# %4s  %14s  %14s  %10s" % ("step", "loss (" + a + ")", "loss (" + b + ")", "|diff|"))
    for i, (p, q) in enumerate(zip(la, lb)):
        print("  %4d  %14.9f  %14.9f  %10.3g" % (i, p, q, abs(p - q)))
    largest = max(abs(p - q) for p, q in zip(la, lb))
    params = max((pa - pb).abs().max().item()
                 for pa, pb in zip(runs[a][3].parameters(), runs[b][3].parameters()))
    print("%-20s: %s and %s: largest loss difference %.3g over %d steps; largest weight difference %.3g%s"
          % ("agreement", a, b, largest, len(la), params, " (the same to the bit)" if largest == 0 and params == 0 else ""))


def report(runs, seen, world, data, alone):
    """Rank 0's report: both pairs' tables, each run's line, the buckets and their bound."""
    for a, b in (("ring", "gloo"), ("ring-fixed", "gloo-fixed")):
        print_pair(a, b, runs)
    print("#")
    common = torch.bincount(data[3]).max().item() / len(data[3])
    for name, (losses, seconds, (before, after, accuracy), _, in_hook) in runs.items():
        step_ms = step_ms_of(seconds)
        if name == "local":
            print("%-20s: local: no gradient moves, each rank keeps its own: %.2f ms a step (mean of steps 1 to %d)"
                  % ("run", step_ms, len(seconds) - 1))
            continue
        print("%-20s: %s: held-back loss %.4f before, %.4f after %d steps; held-back accuracy %.1f%% (the most "
              "common class: %.1f%%); %.2f ms a step (mean of steps 1 to %d)%s"
              % ("run", name, before, after, len(losses), 100 * accuracy, 100 * common, step_ms, len(seconds) - 1,
                 "" if in_hook is None else ", %.2f ms of it inside the ring's calls" % (1e3 * in_hook)))
    local = step_ms_of(runs["local"][1])
    for name in ("ring", "gloo"):
        step = step_ms_of(runs[name][1])
        print("%-20s: %s: %.2f ms a step, %.2f ms more than local's %.2f; the same buckets summed alone, "
              "outside backward: %.2f ms" % ("overlap", name, step, step - local, local, alone[name]))
    for step, sizes in enumerate(seen["sizes"]):
        print("%-20s: step %d: %s, in the order the hook got them" % (
            "buckets", step, "1 bucket of %d elements" % sizes[0] if len(sizes) == 1 else
            "%d buckets, of %s elements" % (len(sizes), " and ".join(map(str, sizes)))))
    print("%-20s: every bucket of 2 steps, %d elements: ring and Gloo sums differ by at most %.3g, "
          "%.2f of the bound 2 gamma_%d sum|g|; %d elements outside it"
          % ("bucket sums", sum(map(sum, seen["sizes"])), seen["largest"], seen["worst"], world - 1,
             seen["outside"]))


def main():
    args = parse()
    missing = [v for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if v not in os.environ]
    if missing:
        print("error: %s not set: run train.py under torchrun, one process per rank ('make train' does)"
              % ", ".join(missing), file=sys.stderr)
        return 2
    dist.init_process_group("gloo")  # DDP's constructor broadcasts the weights over it
    rank, world = dist.get_rank(), dist.get_world_size()
    try:
        comm = RingComm(args.ring_port, timeout_s=args.timeout, device=args.device)
    except RingCommError as e:
        print("error: rank %d: ring_comm_join: %s" % (rank, e), file=sys.stderr)
        return 1
    print("%-20s: rank %d of %d (pid %d) joined step 07's ring (rendezvous on TCP port %d); Gloo serves DDP's start%s"
          % ("ring_comm", rank, world, os.getpid(), args.ring_port,
             "; device " + args.device if args.device else ""), flush=True)
    data = make_data(args.seed)
    runs = {}
    try:
        for name in ("ring", "gloo", "ring-fixed", "gloo-fixed", "local"):
            runs[name] = train(name, args, data, comm, world, rank)
        seen = check_buckets(args, data, comm, world, rank)
        alone = sums_alone(comm, seen["sizes"][-1])
    except (RingCommError, RuntimeError) as e:
        # A hook's error reaches us through DDP's backward as a RuntimeError: the
        # ring's own first error line, which names the rank that failed, says more.
        print("error: rank %d stopped training: %s" % (rank, comm.error() or e), file=sys.stderr, flush=True)
        failures = comm.leave()
        print("%-20s: rank %d released its verbs objects%s" % (
            "teardown", rank, "" if failures == 0 else " but %d releases failed" % failures), file=sys.stderr)
        return 1
    if rank == 0:
        report(runs, seen, world, data, alone)
    failures = comm.leave()
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
