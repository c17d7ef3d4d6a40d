"""serve.py: 'make serve': a small Llama-shaped model trained on the trainer ranks, its new weights moved to a tensor-parallel replica by step 10 after every round, and the replica's forward pass checked against the trainer's.

Run under torchrun (serve.sh): ranks 0 to T - 1 train, the others serve in replicas of
--tp ranks.  The trainers train with DDP over Gloo (each holds the whole model, as
make train's ranks do) and each copies only its FSDP shard (every tensor flattened
and split evenly over the T trainers) into step 10's registered buffer; step 10's
library WRITEs the shards' runs straight into each serving rank's spare version
buffer and flips it whole.  After every round each replica
  - gathers its ranks' slices into whole tensors (Gloo, within the replica) and
    compares each tensor's BF16 bytes with trainer rank 0's, by SHA-256: equal to the bit;
  - runs its tensor-parallel forward on a held-back batch and compares its logits
    with trainer rank 0's forward of the same BF16 weights, whole: within TOLERANCE.
No conversion on the way: the trainers' weights are float32, rounded to BF16 once, and
both forwards compute in float32 from those BF16 values.
"""
import argparse
import datetime
import hashlib
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_tp  # noqa: E402
from weight_comm import NONE, WeightComm, WeightCommError  # noqa: E402

# The same BF16 weights, two summation orders: a replica's all-reduce adds its ranks'
# partial sums where the whole model's matmul adds every product in one.  float32
# keeps 24 bits (2^-24 = 6e-8 relative); a sum of n products is off by at most about
# n x 6e-8 of the sum of their sizes, n <= 3.5 D (224 at D 64), through two layers.
# Measured on the host with torch 1.13: 3e-7 of the largest logit.  A wrong slice
# moves the logits by their own size; 1e-4 of the largest logit separates the two.
TOLERANCE = 1e-4
# The task: sequences over an alphabet of 32 tokens where each next token is 5t + 3 mod 32.
ALPHABET, SEQ = 32, 16


def say(key, text):
    print(f"{key:<20}: {text}", flush=True)


def options():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--trainers", type=int, default=2)
    p.add_argument("--tp", type=int, default=2)
    p.add_argument("--model-dim", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3, help="versions: train, then sync, each round")
    p.add_argument("--steps", type=int, default=10, help="training steps a round")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--sync-port", type=int, default=18700, help="step 10's rendezvous (torchrun holds MASTER_PORT)")
    p.add_argument("--timeout", type=int, default=60, help="step 10's waits, in s: the rendezvous, each update")
    p.add_argument("--round-timeout", type=int, default=600,
                   help="Gloo's collectives, in s: the barrier where the serving ranks wait out a round's training")
    p.add_argument("--flip-bit", type=int, default=-1, metavar="RANK",
                   help="test aid: in the last round that serving rank flips one bit of its slice before checking")
    return p.parse_args()


def batch(gen, n):
    """N sequences of the task, each from a random start: tokens [N, SEQ] and next tokens."""
    start = torch.randint(0, ALPHABET, (n, 1), generator=gen)
    seq = [start]
    for _ in range(SEQ):
        seq.append((5 * seq[-1] + 3) % ALPHABET)
    seq = torch.cat(seq, dim=1)
    return seq[:, :-1], seq[:, 1:]


class Model(torch.nn.Module):
    """The trainers' whole model: step 10's tensors as parameters, its forward llama_tp's."""

    def __init__(self, dim, layers, seed):
        super().__init__()
        self.dim, self.layers = dim, layers
        self.names = [n for n, _, _ in llama_tp.shapes(dim, layers)]
        weights = llama_tp.init_weights(dim, layers, seed)
        self.params = torch.nn.ParameterList(torch.nn.Parameter(weights[n]) for n in self.names)

    def weights(self):
        return dict(zip(self.names, self.params))

    def forward(self, tokens):
        return llama_tp.forward(self.weights(), tokens, self.dim, self.layers)


def bf16_bits(t):
    """A float tensor rounded to BF16, as int16 bit patterns (numpy has no BF16)."""
    return t.detach().to(torch.bfloat16).contiguous().view(torch.int16)


def check_layout(parts, dim, layers):
    """Step 10's plan (model.c) and this model must name the same tensors, in the same shapes."""
    ours = llama_tp.shapes(dim, layers)
    theirs = [(p.name, p.rows, p.cols) for p in parts]
    if ours != theirs:
        raise SystemExit(f"error: serve.py's tensors differ from step 10's plan: {ours[:3]}... against {theirs[:3]}...")


def fill_shard(wc, parts, model):
    """A trainer's shard into step 10's buffer: each tensor in BF16, its flat elements [first, first + count)."""
    buf = np.ctypeslib.as_array(wc.buffer()).view(np.int16)
    weights = model.weights()
    for p in parts:
        flat = bf16_bits(weights[p.name]).reshape(-1)[p.first:p.first + p.count]
        buf[p.offset // 2:p.offset // 2 + p.count] = flat.numpy()


def read_slices(wc, parts, tp):
    """A serving rank's slices of the version it now serves, as BF16 tensors in their TP shapes."""
    buf = np.ctypeslib.as_array(wc.buffer()).view(np.int16)
    out = {}
    for p in parts:
        rows, cols = p.rows, p.cols
        if p.split == 0:
            rows //= tp
        elif p.split == 1:
            cols //= tp
        bits = torch.from_numpy(buf[p.offset // 2:p.offset // 2 + p.count].copy())
        out[p.name] = bits.view(torch.bfloat16).view(rows, cols)
    return out


def digest(bits):
    return hashlib.sha256(bits.numpy().tobytes()).digest()


def main():
    args = options()
    llama_tp.check_tp(args.tp)
    # Every Gloo collective bounded (PyTorch's default is 30 minutes), by a round's length: the
    # serving ranks wait at a barrier while the trainers train, minutes under emulation.
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.round_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    t, tp = args.trainers, args.tp
    replicas = (world - t) // tp
    if t < 1 or replicas < 1 or t + replicas * tp != world:
        raise SystemExit(f"error: {world} ranks are not --trainers {t} and whole replicas of --tp {tp}")
    trainers = dist.new_group(list(range(t)))
    groups = [dist.new_group(list(range(t + i * tp, t + (i + 1) * tp))) for i in range(replicas)]
    dim, layers = args.model_dim, args.layers

    try:
        wc = WeightComm(args.sync_port, t, tp, dim, layers, timeout_s=args.timeout,
                        device=os.environ.get("RDMA_DEV"), verbose=rank == 0)
    except WeightCommError as e:
        raise SystemExit(f"error: rank {rank}: {e}")
    parts = wc.parts()
    check_layout(parts, dim, layers)
    if wc.trains:
        say("role", f"rank {rank} trains (DDP over Gloo, the whole model); its FSDP shard is "
            f"{sum(p.count for p in parts) * 2} B of the model's {sum(p.rows * p.cols for p in parts) * 2} B")
        torch.manual_seed(args.seed)
        model = Model(dim, layers, args.seed)
        ddp = DDP(model, process_group=trainers)
        opt = torch.optim.Adam(ddp.parameters(), lr=3e-3)
        data = torch.Generator().manual_seed(args.seed * 1000 + rank)
    else:
        say("role", f"rank {rank} serves: replica {wc.replica}, TP rank {wc.tp_rank} of {tp}")
    held_in, held_out = batch(torch.Generator().manual_seed(args.seed + 7), 4)
    group = None if wc.trains else groups[wc.replica]
    failed = 0

    for v in range(1, args.rounds + 1):
        if wc.trains:
            start = time.perf_counter()
            for _ in range(args.steps):
                x, y = batch(data, args.batch)
                loss = torch.nn.functional.cross_entropy(ddp(x).flatten(0, 1), y.flatten())
                opt.zero_grad()
                loss.backward()
                opt.step()
            with torch.no_grad():
                held = torch.nn.functional.cross_entropy(model(held_in).flatten(0, 1), held_out.flatten())
            say("train", f"round {v}: {args.steps} steps in {1000 * (time.perf_counter() - start):.0f} ms, "
                f"loss {loss.item():.3f}, held-back loss {held.item():.3f}")
            fill_shard(wc, parts, model)
        # Every rank here once the trainers' shards are filled: step 10's wait (--timeout) then
        # bounds the sync alone, not the training before it.
        dist.barrier()
        start = time.perf_counter()
        try:
            wc.update()
        except WeightCommError as e:
            raise SystemExit(f"error: rank {rank}: {e}")
        if wc.trains:
            say("sync", f"round {v}: version {wc.version}: our shard's runs WRITEn into the replica, "
                f"a FETCH_ADD on each serving rank's word, the two barriers of the flip: "
                f"{1000 * (time.perf_counter() - start):.0f} ms")

        # Trainer rank 0, the reference: each tensor's BF16 bytes by digest, and its forward.
        ref_digests = torch.zeros(len(parts), 32, dtype=torch.uint8)
        ref_logits = torch.zeros(held_in.shape[0], held_in.shape[1], parts[-1].rows)
        if rank == 0:
            whole = {n: bf16_bits(w) for n, w in model.weights().items()}
            for i, p in enumerate(parts):
                ref_digests[i] = torch.frombuffer(bytearray(digest(whole[p.name])), dtype=torch.uint8)
            with torch.no_grad():
                ref_logits = llama_tp.forward({n: b.view(torch.bfloat16).float() for n, b in whole.items()},
                                              held_in, dim, layers)
        dist.broadcast(ref_digests, src=0)
        dist.broadcast(ref_logits, src=0)

        result = torch.zeros(4, dtype=torch.float64)  # tensors equal, tensors, max |diff|, max |logit|
        if not wc.trains:
            mine = read_slices(wc, parts, tp)
            if wc.rank == args.flip_bit and v == args.rounds:
                first = parts[0].name
                mine[first].view(torch.int16).view(-1)[0] ^= 1
                say("flip-bit", f"round {v}: one bit of our slice of {first} flipped after it landed (the test aid)")
            equal, wrong = 0, []
            for i, p in enumerate(parts):
                # The BF16 bits travel as float16 (Gloo moves it; same 2 bytes), not as numbers.
                got = [torch.empty_like(mine[p.name]).view(torch.float16) for _ in range(tp)]
                dist.all_gather(got, mine[p.name].contiguous().view(torch.float16), group=group)
                bits = llama_tp.join_slices([g.view(torch.int16) for g in got], p.split)
                if p.split == NONE and any(not torch.equal(g.view(torch.int16), bits) for g in got):
                    wrong.append(p.name + " (replicas of it differ)")
                elif digest(bits) == bytes(ref_digests[i].tolist()):
                    equal += 1
                else:
                    wrong.append(p.name)
            with torch.no_grad():
                logits = llama_tp.forward({n: b.float() for n, b in mine.items()}, held_in, dim, layers, tp, group)
            diff = (logits - ref_logits).abs().max().item()
            top = ref_logits.abs().max().item()
            result = torch.tensor([equal, len(parts), diff, top], dtype=torch.float64)
            say("check", f"round {v}: version {wc.version}: {equal} of {len(parts)} tensors, "
                f"gathered from the replica's {tp} ranks, equal to trainer rank 0's to the bit"
                + (f"; differing: {', '.join(wrong)}" if wrong else ""))
            say("forward", f"round {v}: tensor-parallel logits against rank 0's whole model: largest "
                f"difference {diff:.3g}, {diff / top:.3g} of the largest logit {top:.3g} (tolerance {TOLERANCE:g})")
        results = [torch.zeros(4, dtype=torch.float64) for _ in range(world)]
        dist.all_gather(results, result)
        if rank == 0:
            for k in range(t, world):
                eq, n, diff, top = results[k].tolist()
                ok = eq == n and diff <= TOLERANCE * top
                failed += not ok
                say("round", f"{v}: rank {k} (replica {(k - t) // tp}, TP rank {(k - t) % tp}): "
                    f"{int(eq)} of {int(n)} tensors, gathered, equal to the bit, logits within {diff / top:.3g} "
                    f"of the largest: {'ok' if ok else 'FAILED'}")
        flag = torch.tensor([failed])
        dist.broadcast(flag, src=0)
        if flag.item():
            break
    released = wc.leave()
    say("teardown", "every object released" if not released else f"{released} releases failed (see above)")
    dist.destroy_process_group()
    if rank == 0:
        say("serve", "every round's replica equal to the trainer's weights to the bit, its forward within "
            "tolerance" if not failed else f"{failed} check(s) failed (see above)")
    sys.exit(1 if flag.item() or released else 0)


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        # A Gloo collective whose peer is gone: one line naming this rank, as step 10's errors do.
        raise SystemExit(f"error: rank {os.environ.get('RANK', '?')}: {str(e).splitlines()[0]}")
