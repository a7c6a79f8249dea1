#!/usr/bin/env python3
"""lint.test_env: every test of this build runs as kt_tests_env() (tests/CMakeLists.txt) sets it
up: with TMPDIR and the kt_tmp fixture (but the fixture's own two tests), and with no GPU visible
(CUDA_VISIBLE_DEVICES empty) unless it is labelled gpu.  A directory of tests that forgets to
call kt_tests_env() at its end, or sets a label after it, is named here.

usage: test_env.py CTEST BUILD_DIR
"""
import json
import subprocess
import sys


def main():
    ctest, build = sys.argv[1:3]
    out = subprocess.run([ctest, "--test-dir", build, "--show-only=json-v1"], capture_output=True,
                         text=True, check=True).stdout
    tests = json.loads(out)["tests"]
    bad = []
    for t in tests:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        name, env, labels = t["name"], props.get("ENVIRONMENT", []), props.get("LABELS", [])
        if name not in ("tmp.start", "tmp.left_nothing"):
            if not any(e.startswith("TMPDIR=") for e in env) or "kt_tmp" not in props.get("FIXTURES_REQUIRED", []):
                bad.append("%s: no TMPDIR or kt_tmp fixture" % name)
        hidden = "CUDA_VISIBLE_DEVICES=" in env
        if "gpu" in labels and hidden:
            bad.append("%s: labelled gpu, but the GPU is hidden from it" % name)
        if "gpu" not in labels and not hidden:
            bad.append("%s: not labelled gpu, but a GPU would be visible to it" % name)
    if bad:
        print("tests not set up by kt_tests_env():\n  " + "\n  ".join(bad))
        return 1
    print("%d tests set up by kt_tests_env()" % len(tests))
    return 0


if __name__ == "__main__":
    sys.exit(main())
