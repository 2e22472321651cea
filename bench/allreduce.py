"""All-reduce bandwidth of megengine.distributed (Gloo, CPU tensors) against torch.distributed
with Gloo, between 2 processes on this machine, for float32 messages from 1 KB to 64 MB.
--op times another collective instead (broadcast, all_gather, gather, scatter, reduce,
all_to_all; rooted ones at rank 0) on the same sizes of each rank's input (scatter: the root's):
NeoMeg's own algorithms on Gloo's transport (src/distributed/collectives.cpp) against
PyTorch's, which are Gloo's (gloo::broadcast, gloo::allgather, ...). The NeoMeg side calls the
group's communicator, not F.distributed (whose broadcast and scatter also send the root's shape
through the store), and the bandwidth column is input bytes / time.

Both sides run the same protocol: WARMUP_S seconds of small all-reduces first (freshly started
ranks on a loaded machine run their first seconds of collectives several times slower, on both
sides), then per message size a warm-up all-reduce and --iters timed ones after a barrier; a sweep's figure per size is the median time per all-reduce over
--repeat runs. The two sides' sweeps alternate --rounds times (NeoMeg, PyTorch, NeoMeg, ...), so
that a change in the machine's load hits both, and the reported figure is the median over the
rounds, as bus bandwidth (2 (n - 1) / n * bytes / time, NCCL's convention, which is the payload
for n = 2); "best" is the ratio of each side's fastest round. The PyTorch side runs in the reference interpreter (--torch-python; skipped when
absent), spawned by this script, so both figures come from the same command. On a 2-core
machine shared with other work the figures are noisy: compare the ratio, not absolutes.

Usage: PYTHONPATH=python python3 bench/allreduce.py [--iters 20] [--repeat 3] [--rounds 3]
       [--max-mb 64] [--op all_reduce]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from machine import describe

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

TORCH_PYTHON = "/root/.cache/neomeg-references/torch-venv/bin/python"
WORLD = 2
WARMUP_S = 2.0
OPS = ["all_reduce", "broadcast", "all_gather", "gather", "scatter", "reduce", "all_to_all"]


def sizes(max_mb):
    n, out = 1024, []
    while n <= max_mb * 1024 * 1024:
        out.append(n)
        n *= 4
    return out


def _iterations(nbytes, iters):
    # Small messages are latency-bound and cheap: more of them steadies the median.
    return max(iters, min(200, (1 << 20) // nbytes * iters // 4))


def megengine_times(byte_sizes, iters, repeat, op="all_reduce"):
    import megengine as mge
    import megengine.distributed as dist
    import megengine.functional as F

    def collective(x):
        comm = dist.group._communicator(dist.WORLD)
        if op == "all_reduce":
            return F.distributed.all_reduce_sum(x)
        if op == "reduce":
            return comm.reduce(x, "sum", 0)
        if op in ("broadcast", "gather", "scatter"):
            return getattr(comm, op)(x, 0)
        return getattr(comm, op)(x)

    def worker():
        out = {}
        small = mge.Tensor(np.ones(256, dtype="float32"))
        dist.group_barrier()
        end = time.perf_counter() + WARMUP_S
        while dist.functional.broadcast(mge.Tensor([time.perf_counter() < end])).numpy()[0]:
            F.distributed.all_reduce_sum(small)
        for nbytes in byte_sizes:
            x = mge.Tensor(np.ones(nbytes // 4, dtype="float32"))
            collective(x)  # warm-up (connects the group on the first size)
            runs = []
            n = _iterations(nbytes, iters)
            for _ in range(repeat):
                dist.group_barrier()
                start = time.perf_counter()
                for _ in range(n):
                    collective(x)
                runs.append((time.perf_counter() - start) / n)
            out[nbytes] = float(np.median(runs))
        return out

    return dist.launcher(n_gpus=WORLD, timeout=600)(worker)()[0]


TORCH_SCRIPT = r"""
import json, os, sys, time
import numpy as np
import torch, torch.distributed as td, torch.multiprocessing as mp

def iterations(nbytes, iters):
    return max(iters, min(200, (1 << 20) // nbytes * iters // 4))

WARMUP_S = %s

def collective(op, x, rank, dst):
    if op == "all_reduce":
        td.all_reduce(x)
    elif op == "broadcast":
        td.broadcast(x, 0)
    elif op == "all_gather":
        td.all_gather(dst, x)
    elif op == "gather":
        td.gather(x, dst if rank == 0 else None, dst=0)
    elif op == "scatter":
        td.scatter(dst[0], list(x.chunk(2)) if rank == 0 else None, src=0)
    elif op == "reduce":
        td.reduce(x, 0)
    else:
        td.all_to_all_single(dst[0], x)

def worker(rank, port, sizes, iters, repeat, op, q):
    td.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    out = {}
    small = torch.ones(256)
    td.barrier()
    end = time.perf_counter() + WARMUP_S
    while True:
        go = torch.tensor([float(time.perf_counter() < end)])
        td.broadcast(go, 0)  # rank 0's clock decides, so both ranks stop together
        if not go[0]:
            break
        td.all_reduce(small)
    for nbytes in sizes:
        x = torch.ones(nbytes // 4, dtype=torch.float32)
        if op == "scatter":
            dst = [torch.empty(nbytes // 8)]
        elif op == "all_to_all":
            dst = [torch.empty_like(x)]
        else:
            dst = [torch.empty_like(x) for _ in range(2)]
        collective(op, x, rank, dst)
        runs = []
        n = iterations(nbytes, iters)
        for _ in range(repeat):
            td.barrier()
            start = time.perf_counter()
            for _ in range(n):
                collective(op, x, rank, dst)
            runs.append((time.perf_counter() - start) / n)
        out[nbytes] = float(np.median(runs))
    if rank == 0:
        q.put(out)
    td.destroy_process_group()

if __name__ == "__main__":
    sizes, iters, repeat, port, op = json.loads(sys.argv[1])
    torch.set_num_threads(1)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [
        ctx.Process(target=worker, args=(r, port, sizes, iters, repeat, op, q)) for r in range(2)
    ]
    for p in procs:
        p.start()
    result = q.get()
    for p in procs:
        p.join()
    print(json.dumps(result))
"""


def torch_times(python, byte_sizes, iters, repeat, op="all_reduce"):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    arg = json.dumps([byte_sizes, iters, repeat, port, op])
    # A file, not -c: torch.multiprocessing's spawn re-imports the main module in each worker.
    with tempfile.NamedTemporaryFile("w", suffix=".py") as script:
        script.write(TORCH_SCRIPT.replace("%s", repr(WARMUP_S)))
        script.flush()
        out = subprocess.run(
            [python, script.name, arg], check=False, capture_output=True, text=True, timeout=1800
        )
    if out.returncode != 0:
        raise RuntimeError(f"the PyTorch side failed:\n{out.stderr}")
    return {int(k): v for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}


def busbw(nbytes, seconds, op="all_reduce"):
    factor = 2 * (WORLD - 1) / WORLD if op == "all_reduce" else 1
    return factor * nbytes / seconds / 1e9


def label(nbytes):
    return f"{nbytes // 1024} KB" if nbytes < 1 << 20 else f"{nbytes >> 20} MB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-mb", type=int, default=64)
    ap.add_argument("--torch-python", default=TORCH_PYTHON)
    ap.add_argument("--op", choices=OPS, default="all_reduce")
    args = ap.parse_args()
    print(describe())
    byte_sizes = sizes(args.max_mb)
    print(f"collective: {args.op}; load average before: {os.getloadavg()[0]:.2f}")
    with_torch = os.path.exists(args.torch_python)
    if not with_torch:
        print(f"PyTorch reference not found at {args.torch_python}: NeoMeg figures only")
    our_rounds, their_rounds = [], []
    for _ in range(args.rounds):
        our_rounds.append(megengine_times(byte_sizes, args.iters, args.repeat, args.op))
        if with_torch:
            their_rounds.append(
                torch_times(args.torch_python, byte_sizes, args.iters, args.repeat, args.op)
            )
    ours = {n: float(np.median([r[n] for r in our_rounds])) for n in byte_sizes}
    theirs = None
    if with_torch:
        theirs = {n: float(np.median([r[n] for r in their_rounds])) for n in byte_sizes}
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    head = f"{'size':>8} {'NeoMeg us':>11} {'GB/s':>7}"
    if theirs:
        head += f" {'torch us':>11} {'GB/s':>7} {'ratio':>6} {'best':>6}"
    print(head)
    for nbytes in byte_sizes:
        ours_bw = busbw(nbytes, ours[nbytes], args.op)
        line = f"{label(nbytes):>8} {ours[nbytes] * 1e6:11.1f} {ours_bw:7.3f}"
        if theirs:
            t = theirs[nbytes]
            best = min(r[nbytes] for r in their_rounds) / min(r[nbytes] for r in our_rounds)
            line += (
                f" {t * 1e6:11.1f} {busbw(nbytes, t, args.op):7.3f} {t / ours[nbytes]:6.2f}"
                f" {best:6.2f}"
            )
        print(line)
    if theirs:
        print(
            "ratio: NeoMeg's bandwidth / PyTorch's (> 1: NeoMeg is faster), of the medians over"
            " the rounds; best: of the fastest rounds"
        )


if __name__ == "__main__":
    main()
