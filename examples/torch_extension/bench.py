#!/usr/bin/env python3
"""Times the installed kt_ops (the torch build) against PyTorch at every shape of its manifests:
kt's kernel, the same computation in torch eager, and that computation through torch.compile.

    python3 bench.py [--reps N] [--warmup N] [--compile-mode MODE] [--no-compile]

The computation is the ops' own: float32 arithmetic on bfloat16 inputs, one rounding of the
output to bfloat16 (rmsnorm: x * rsqrt(mean(x^2) + eps) * w; silu_and_mul: silu(a) * b).  Times
are GPU times: one call per copy of the inputs (copies spanning 2.5 times the L2 cache, so that a
large shape is read from memory, not from the L2; at most 512 calls) captured in a CUDA graph, as
a serving loop runs its decode steps, so that the host's launch costs are not counted; each
figure is the median over --reps replays of the graph of its time per call, after --warmup
calls (the first of which, for torch.compile, compiles).  Prints a Markdown table: the
microseconds of each, and how many times faster kt is (eager / kt and compile / kt).
"""
import argparse
import datetime
import math
import os
import statistics
import sys
import time

import torch

# The installed kt_ops, not its sources beside this script (a script's directory comes first).
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.dirname(os.path.abspath(__file__))]
import kt_ops  # noqa: E402

BF16 = torch.bfloat16
EPS = 1e-6
L2_FACTOR = 2.5  # input copies span this many L2 sizes, as in kt's worker
MAX_COPIES = 16384
MAX_GRAPH_CALLS = 512  # calls in one timed graph (small inputs then stay in the L2, as in a serving loop)


def rmsnorm_ref(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).to(BF16)


def silu_and_mul_ref(x):
    xf = x.float()
    d = xf.shape[-1] // 2
    return (torch.nn.functional.silu(xf[..., :d]) * xf[..., d:]).to(BF16)


def rmsnorm_kt(x, w):
    return kt_ops.rmsnorm(x, w, EPS)


def inputs(op, shape):
    """One set of the op's inputs at a manifest's shape, as a tuple of arguments."""
    if op == "rmsnorm":
        x = torch.randn(shape["rows"], shape["hidden"], device="cuda").to(BF16)
        return x, torch.empty(shape["hidden"], device="cuda").uniform_(0.5, 1.5).to(BF16)
    return ((2 * torch.randn(shape["tokens"], 2 * shape["d"], device="cuda")).to(BF16),)


def input_copies(op, shape):
    """Enough copies of the inputs that rotating through them leaves the L2 behind."""
    first = inputs(op, shape)
    nbytes = sum(t.numel() * t.element_size() for t in first)
    l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0) or 128 << 20
    n = max(1, min(MAX_COPIES, math.ceil(L2_FACTOR * l2 / max(nbytes, 1))))
    return [first] + [tuple(t.clone() for t in first) for _ in range(n - 1)]


def time_us(fn, sets, reps, warmup):
    """GPU microseconds of one call of fn: one call per input set (up to MAX_GRAPH_CALLS of them)
    captured in a CUDA graph, as a serving loop runs its decode steps, and the graph replayed
    reps times; the median over the replays of their time over their calls.  The graph holds no
    host work, so what is timed is the GPU's alone."""
    for i in range(warmup):
        fn(*sets[i % len(sets)])
    torch.cuda.synchronize()
    calls = sets[:MAX_GRAPH_CALLS]
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for args in calls:
            fn(*args)
    graph.replay()  # the first replay uploads the graph
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / len(calls))
    del graph
    return statistics.median(times)


def raise_recompile_limit():
    """One compiled function serves every shape of an op (dynamic=False: one graph per shape)."""
    import torch._dynamo

    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 64)


def shape_text(shape):
    return ",".join(f"{k}={v}" for k, v in shape.items())


def main():
    ap = argparse.ArgumentParser(description="Times kt_ops against torch eager and torch.compile at every shape of its manifests.")
    ap.add_argument("--reps", type=int, default=20, help="timed replays per figure (default 20)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed calls before them (default 10)")
    ap.add_argument("--compile-mode", default="default", help="torch.compile's mode (default: default)")
    ap.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    args = ap.parse_args()
    if kt_ops.BACKEND != "torch" or not torch.cuda.is_available():
        print("bench: needs the torch build of kt_ops and a CUDA GPU", file=sys.stderr)
        return 1
    raise_recompile_limit()
    ops = {
        "rmsnorm": (rmsnorm_kt, rmsnorm_ref),
        "silu_and_mul": (kt_ops.silu_and_mul, silu_and_mul_ref),
    }
    origin = {(op, shape_text(s)): o for op, s, o in kt_ops.origins()}
    print(f"kt_ops bench: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"{datetime.date.today().isoformat()}; median of {args.reps} replays (after {args.warmup} calls), "
          f"GPU time per call in CUDA-graph replays, inputs rotated past {L2_FACTOR}x the L2 (at most {MAX_GRAPH_CALLS} calls)\n")
    head = "| op | shape | kt config | kt us | eager us | compile us | eager / kt | compile / kt |"
    print(head)
    print("|" + "---|" * 2 + "---|" + "---:|" * 5)
    for op, (kt_fn, ref_fn) in ops.items():
        compiled = None if args.no_compile else torch.compile(ref_fn, dynamic=False, mode=args.compile_mode)
        for shape in kt_ops.shapes(op):
            sets = input_copies(op, shape)
            t_kt = time_us(kt_fn, sets, args.reps, args.warmup)
            t_eager = time_us(ref_fn, sets, args.reps, args.warmup)
            comp, comp_x = "-", "-"
            if compiled:
                t_comp = time_us(compiled, sets, args.reps, args.warmup)
                comp, comp_x = f"{t_comp:.2f}", f"{t_comp / t_kt:.2f}x"
            where = origin.get((op, shape_text(shape)), "?")
            print(f"| {op} | {shape_text(shape)} | {where} | {t_kt:.2f} | {t_eager:.2f} | {comp} | "
                  f"{t_eager / t_kt:.2f}x | {comp_x} |", flush=True)
            del sets
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
