#!/usr/bin/env python3
"""Checks the installed kt_ops (the torch build) on a CUDA GPU:

- each op against a PyTorch reference computed in float32, on fresh random bfloat16 inputs, at
  every shape its manifest lists and at shapes it does not (the launcher runs the configuration of
  the nearest tuned shape), within bfloat16's tolerance; also on a side stream, on an empty input,
  and on the last GPU when there are several;
- bad inputs (dtype, device, layout, shape) rejected with an error that says what is wrong;
- the manifests: every shape's configuration tuned at build time or taken from a cache, none the
  template's defaults.

    python3 tests/test_ops.py         (KT_OPS_SEED=<n> repeats a run's inputs)

Prints one line per check and "N passed, N failed"; exit status 0 when all passed, 1 when one
failed, 77 when there is nothing to check here (no torch build of kt_ops, or no CUDA GPU).
"""
import os
import random
import sys

SKIP = 77
RTOL, ATOL = 1.6e-2, 1e-2  # bfloat16 outputs (8 bits of mantissa) of a float32 computation
EPS = 1e-6


def skip(why):
    print(f"test_ops: skipped: {why}")
    sys.exit(SKIP)


try:
    import torch
except ImportError as e:
    skip(f"no torch ({e})")
import kt_ops  # noqa: E402  (after torch: the torch build loads its ops through it)

if kt_ops.BACKEND != "torch":
    skip(f"kt_ops at {os.path.dirname(kt_ops.__file__)} is the build without torch (the C API)")
if not torch.cuda.is_available():
    skip("no CUDA GPU (torch.cuda.is_available() is False)")

BF16 = torch.bfloat16


def rmsnorm_ref(x, w, eps=EPS):
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()


def silu_and_mul_ref(x):
    xf = x.float()
    d = xf.shape[-1] // 2
    return torch.nn.functional.silu(xf[..., :d]) * xf[..., d:]


class Results:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what, detail=""):
        print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}", flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def compare(results, what, out, ref):
    """out (bfloat16, from kt_ops) against ref (float32)."""
    if out.shape != ref.shape or out.dtype != BF16:
        results.check(False, what, f"got {out.dtype} {tuple(out.shape)}, expected bfloat16 {tuple(ref.shape)}")
        return
    outf = out.float()
    err = (outf - ref).abs()
    bad = ~(err <= ATOL + RTOL * ref.abs())  # NaN is bad too
    detail = f"max abs error {err.max().item() if err.numel() else 0.0:.3g}"
    if bad.any():
        i = bad.nonzero()[0].tolist()
        detail += f"; {int(bad.sum())} of {out.numel()} outside tolerance, first at {i}: {outf[tuple(i)].item()} vs {ref[tuple(i)].item()}"
    results.check(not bad.any().item(), what, detail)


def rmsnorm_inputs(lead, hidden, device="cuda"):
    x = torch.randn(*lead, hidden, device=device).to(BF16)
    w = torch.empty(hidden, device=device).uniform_(0.5, 1.5).to(BF16)
    return x, w


def silu_inputs(lead, d, device="cuda"):
    return (2 * torch.randn(*lead, 2 * d, device=device)).to(BF16)


def check_rmsnorm(results, lead, hidden, note=""):
    x, w = rmsnorm_inputs(lead, hidden)
    what = f"rmsnorm {'x'.join(map(str, lead))} x {hidden}{note}"
    compare(results, what, kt_ops.rmsnorm(x, w, EPS), rmsnorm_ref(x, w))


def check_silu(results, lead, d, note=""):
    x = silu_inputs(lead, d)
    what = f"silu_and_mul {'x'.join(map(str, lead))} x {d}{note}"
    compare(results, what, kt_ops.silu_and_mul(x), silu_and_mul_ref(x))


def check_shapes(results):
    for s in kt_ops.shapes("rmsnorm"):
        check_rmsnorm(results, (s["rows"],), s["hidden"])
    for s in kt_ops.shapes("silu_and_mul"):
        check_silu(results, (s["tokens"],), s["d"])
    # Shapes the build did not list: the nearest tuned shape's configuration; more dimensions.
    check_rmsnorm(results, (7,), 4096, " (not a listed shape)")
    check_rmsnorm(results, (3, 5), 8192, " (3-D, not a listed shape)")
    check_silu(results, (3,), 11008, " (not a listed shape)")
    check_silu(results, (2, 40), 14336, " (3-D, not a listed shape)")


def check_streams_and_devices(results):
    side = torch.cuda.Stream()
    x, w = rmsnorm_inputs((16,), 4096)
    g = silu_inputs((64,), 11008)
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        out, h = kt_ops.rmsnorm(x, w, EPS), kt_ops.silu_and_mul(g)
    side.synchronize()
    compare(results, "rmsnorm 16 x 4096 on a side stream", out, rmsnorm_ref(x, w))
    compare(results, "silu_and_mul 64 x 11008 on a side stream", h, silu_and_mul_ref(g))
    empty = kt_ops.rmsnorm(torch.empty(0, 4096, device="cuda", dtype=BF16), w, EPS)
    results.check(tuple(empty.shape) == (0, 4096), "rmsnorm of 0 rows", f"shape {tuple(empty.shape)}")
    n = torch.cuda.device_count()
    if n > 1:
        dev = f"cuda:{n - 1}"  # not the current device: the op's device guard picks it
        x, w = rmsnorm_inputs((128,), 8192, dev)
        compare(results, f"rmsnorm 128 x 8192 on {dev}", kt_ops.rmsnorm(x, w, EPS), rmsnorm_ref(x, w))
        g = silu_inputs((64,), 14336, dev)
        compare(results, f"silu_and_mul 64 x 14336 on {dev}", kt_ops.silu_and_mul(g), silu_and_mul_ref(g))


def expect_error(results, what, needle, call):
    try:
        call()
    except RuntimeError as e:  # TORCH_CHECK's errors, and the dispatcher's (NotImplementedError)
        msg = str(e).splitlines()[0]
        results.check(needle in str(e), f"rejects {what}", f"'{msg}'")
        return
    results.check(False, f"rejects {what}", "no error was raised")


def check_bad_inputs(results):
    x, w = rmsnorm_inputs((4,), 4096)
    g = silu_inputs((4,), 11008)
    expect_error(results, "float32 x", "bfloat16", lambda: kt_ops.rmsnorm(x.float(), w, EPS))
    expect_error(results, "float16 weight", "bfloat16", lambda: kt_ops.rmsnorm(x, w.half(), EPS))
    expect_error(results, "a non-contiguous x", "contiguous", lambda: kt_ops.rmsnorm(x[:, ::2], w[::2], EPS))
    expect_error(results, "a weight of the wrong size", "weight must be", lambda: kt_ops.rmsnorm(x, w[:-8], EPS))
    expect_error(results, "CPU tensors", "CPU", lambda: kt_ops.rmsnorm(x.cpu(), w.cpu(), EPS))
    expect_error(results, "an odd last dimension", "even", lambda: kt_ops.silu_and_mul(g[:, :-1].contiguous()))
    expect_error(results, "a non-contiguous gate_up", "contiguous", lambda: kt_ops.silu_and_mul(g.t()))


def check_manifests(results):
    found = kt_ops.origins()
    counts = {}
    for op, _, origin in found:
        counts.setdefault(op, {}).setdefault(origin, 0)
        counts[op][origin] += 1
    for op in kt_ops.OPS:
        summary = ", ".join(f"{n} {origin}" for origin, n in sorted(counts.get(op, {}).items()))
        print(f"     {op}: {summary or 'no shapes'}")
    bad = kt_ops.untuned()
    detail = "; ".join(f"{op} {shape}: {origin}" for op, shape, origin in bad)
    results.check(bool(found) and not bad, "the manifests: every shape tuned or from a cache",
                  detail or ("" if found else "no shapes in the manifests"))


def main():
    seed = int(os.environ.get("KT_OPS_SEED", random.SystemRandom().randrange(1 << 31)))
    torch.manual_seed(seed)
    name = torch.cuda.get_device_name()
    print(f"test_ops: kt_ops from {os.path.dirname(kt_ops.__file__)}, torch {torch.__version__}, {name}, "
          f"KT_OPS_SEED={seed}", flush=True)
    results = Results()
    check_manifests(results)
    check_shapes(results)
    check_streams_and_devices(results)
    check_bad_inputs(results)
    print(f"{results.passed} passed, {results.failed} failed")
    return 1 if results.failed else 0


if __name__ == "__main__":
    sys.exit(main())
