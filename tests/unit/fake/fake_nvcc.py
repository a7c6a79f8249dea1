#!/usr/bin/env python3
"""A stand-in for nvcc in the tuning tests: "compiles" a variant .cu into a text "cubin" that
the fake GPU (generator/gpu_fake.c) understands.

It inlines the template the variant includes, applies the variant's identifier macros (the
kernel's rename), and reads these comment lines of the template:
  fake-compile-error: P=V [P=V...]   fail like a compiler when every setting holds
  fake-regs: P=V N                   report N registers when the setting holds (default 32)
  fake-compile-ms: [P=V...] N        take N more milliseconds to compile the variant when every
                                     setting holds (none: every variant), as heavy code does
  fake-compile-wait: [P=V...] GLOB   when every setting holds, end only once a file matching GLOB
                                     is in the work directory (at most 60 s): a compile that lasts
                                     until another one of the tuner's has ended
Output, depfile and ptxas-style report are written like `nvcc -cubin -Xptxas -v -MD -MF`;
`--version` answers like nvcc 13.0, or as the compiler KT_FAKE_NVCC_VERSION_OF names does (records
made with the fake then have that compiler's keys).
"""
import glob
import os
import re
import sys
import time


def compile_part(src, text, included):
    """One variant's text: the template inlined and renamed.  (text, {kernel: regs}), or None
    after a planted compile error."""
    defines = dict(re.findall(r"^#define (\w+) (\S+)$", text, re.M))

    def inline(m):
        path = m.group(1)
        if not os.path.isabs(path):
            path = os.path.join(os.path.dirname(src), path)
        included.append(path)
        body = open(path).read()
        for name, value in defines.items():
            if value.endswith(("_kernel", "_reference")):  # the kernel's rename
                body = re.sub(r"\b%s\b" % re.escape(name), value, body)
        return body

    text = re.sub(r'^#include "([^"]+)"$', inline, text, flags=re.M)

    def holds(settings):
        return all(defines.get(k) == v for k, v in (s.split("=", 1) for s in settings))

    for line in re.findall(r"fake-compile-error: (.*)$", text, re.M):
        if holds(line.split()):
            sys.stderr.write("%s(1): error: planted compile error (%s)\n" % (src, line.strip()))
            return None
    ms = 0
    for line in re.findall(r"fake-compile-ms: (.*)$", text, re.M):
        *settings, n = line.split()
        if holds(settings):
            ms += int(n)
    time.sleep(ms / 1000.0)
    for line in re.findall(r"fake-compile-wait: (.*)$", text, re.M):
        *settings, pattern = line.split()
        deadline = time.monotonic() + 60
        while holds(settings) and not glob.glob(pattern) and time.monotonic() < deadline:
            time.sleep(0.02)
    regs = 32
    for line in re.findall(r"fake-regs: (.*)$", text, re.M):
        *settings, n = line.split()
        if holds(settings):
            regs = int(n)
    return text, {name: regs for name in re.findall(r"__global__ void (\w+)\(", text)}


def main(argv):
    if argv == ["--version"]:  # the compiler's identity is a cache-key field
        real = os.environ.get("KT_FAKE_NVCC_VERSION_OF")  # records for that compiler's keys
        if real:
            os.execv(real, [real, "--version"])
        print("nvcc: NVIDIA (R) Cuda compiler driver")
        print("Cuda compilation tools, release 13.0, V13.0.88")
        return 0
    out = dep = src = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-o":
            out = argv[i + 1]
            i += 2
            continue
        if a == "-MF":
            dep = argv[i + 1]
            i += 2
            continue
        if a.endswith(".cu"):
            src = a
        i += 1
    text = open(src).read()
    # A translation unit shared by several variants (kt_emit_prelude, kt_emit_part): each part
    # is compiled as its own variant, and one failing part fails the whole unit, like nvcc.
    pieces = re.split(r"^(?=// kt part: )", text, flags=re.M)
    parts = pieces[1:] if len(pieces) > 1 else pieces
    included = []
    outputs = []
    regs_of = {}
    for part in parts:
        done = compile_part(src, part, included)
        if done is None:
            return 1
        outputs.append(done[0])
        regs_of.update(done[1])
    text = "".join(outputs)
    with open(out, "w") as f:
        f.write(text)
    if dep:
        with open(dep, "w") as f:
            f.write("%s: %s %s\n" % (out, src, " ".join(included)))
    for name in re.findall(r"__global__ void (\w+)\(", text):
        sys.stderr.write("ptxas info    : Compiling entry function '_Z%d%sPfPKfi' for 'sm_90'\n" % (len(name), name))
        sys.stderr.write("ptxas info    : Function properties for _Z%d%sPfPKfi\n" % (len(name), name))
        sys.stderr.write("    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n")
        sys.stderr.write("ptxas info    : Used %d registers, used 0 barriers, 16 bytes smem\n" % regs_of.get(name, 32))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
