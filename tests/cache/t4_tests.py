#!/usr/bin/env python3
"""End-to-end tests of kt's T4 export and import (ctest labels `cache` and `cli`; no GPU).

  export      kt cache export over the repository's committed records (cache/): every file is T4
              by the schema's required fields and types (t4_schema.py), and says what the record
              says; KEY, --kernel, --gpu, stdout, -o FILE, -o DIR and the errors
  roundtrip   export -> kt cache import of every committed record whose template still declares
              the space it was tuned in: the recording holds the record's configurations,
              statuses and times, and search_curves replays one
  tune        kt tune --record R --t4 F on the fake GPU (every status kt knows): F is T4, and
              importing F gives R again, byte for byte
  peer        a file laid out as Kernel Tuner writes one (its measurement names, units and error
              values) imports with its statuses and times in microseconds
  malformed   bad files: a clear error naming the file and the entry, exit 1, nothing written

usage: t4_tests.py --kt KT --root REPO --fake DIR [--search-curves EXE] CASE
Python standard library only.
"""
import argparse
import copy
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import t4_schema  # noqa: E402

FAKE_NVCC = """#!/bin/sh
echo 'Cuda compilation tools, release 13.0, V13.0.88'
echo 'Build cuda_13.0.r13.0/compiler.36424714_0'
"""
KT_STATUS_INVALIDITY = {"ok": "correct", "compile-failed": "compile", "over-limits": "runtime",
                        "check-failed": "correctness", "faulted": "runtime", "timed-out": "timeout"}


class World:
    def __init__(self, args):
        self.kt, self.root, self.fake, self.search_curves = args.kt, args.root, args.fake, args.search_curves
        self.tmp = tempfile.mkdtemp(prefix="kt-t4-test-")
        self.env = dict(os.environ, KT_CACHE_DIR=os.path.join(self.tmp, "user"), HOME=self.tmp)
        for var in ("KT_REMOTE_CACHE", "XDG_CACHE_HOME", "KT_GPU"):
            self.env.pop(var, None)

    def path(self, *names):
        return os.path.join(self.tmp, *names)

    def run(self, argv, rc=0, timeout=120):
        p = subprocess.run([self.kt] + argv, env=self.env, capture_output=True, text=True, timeout=timeout)
        if rc is not None and p.returncode != rc:
            raise AssertionError("kt %s exited %d, expected %d\nstdout:\n%s\nstderr:\n%s"
                                 % (" ".join(argv), p.returncode, rc, p.stdout[-3000:], p.stderr[-3000:]))
        return p

    def project(self):
        return os.path.join(self.root, "cache")


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def load(path):
    with open(path) as f:
        return json.load(f)


def committed_records(w):
    out = []
    for path in sorted(glob.glob(os.path.join(w.project(), "v1", "*", "*.json"))):
        out.append(load(path))
    check(out, "no committed records in " + w.project())
    return out


def check_schema(doc, what):
    problems = t4_schema.validate(doc)
    check(not problems, "%s is not T4:\n  %s" % (what, "\n  ".join(problems[:20])))
    check(doc.get("schema_version") == "1.0.0" and isinstance(doc.get("results"), list),
          "%s: no schema_version 1.0.0 or no results" % what)


def config_text(conf):
    """A configuration as kt formats one: P=v, true/false for a bool."""
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in conf.items()}


def check_says_record(doc, rec, what):
    """The T4 document of a record holds each evaluation, in order, with its status and time."""
    meta = doc["metadata"]
    check(meta["device"] == rec["fields"]["gpu.name"] and meta["autotuner"] == "kt"
          and meta["timeunit"] == "milliseconds" and meta["compute_api"] == "CUDA", what + ": metadata " + str(meta))
    kt = meta["kt"]
    check(kt["kernel"] == rec["kernel"] and kt["shape"] == rec["shape"] and kt["key"] == rec["key"]
          and kt["config"] == rec["config"], what + ": metadata.kt " + str(kt))
    evals = rec.get("evaluated", [])
    check(len(doc["results"]) == len(evals), "%s: %d results, the record has %d evaluations"
          % (what, len(doc["results"]), len(evals)))
    for i, (res, ev) in enumerate(zip(doc["results"], evals)):
        where = "%s results[%d]" % (what, i)
        check(res["configuration"] == ev["config"], where + ": configuration")
        check(res["invalidity"] == KT_STATUS_INVALIDITY[ev["status"]] and res["kt"]["status"] == ev["status"],
              where + ": status %s -> %s" % (ev["status"], res["invalidity"]))
        check(res["correctness"] == (0 if ev["status"] == "check-failed" else 1), where + ": correctness")
        check(res["objectives"] == ["time"], where + ": objectives")
        time = [m for m in res["measurements"] if m["name"] == "time"]
        check(len(time) == 1 and time[0]["unit"] == "ms", where + ": the time measurement")
        if ev["status"] == "ok":
            check(abs(time[0]["value"] * 1000 - ev["time_us"]) <= 1e-9 * max(1, ev["time_us"]),
                  where + ": %s ms for %s us" % (time[0]["value"], ev["time_us"]))
        else:
            check(isinstance(time[0]["value"], str), where + ": a failure's time is not Kernel Tuner's error value")


def read_recording(path):
    """(header lines, [(config dict, status, median, spread)])."""
    header, rows = [], []
    with open(path) as f:
        for line in f.read().splitlines():
            if line.startswith("#") or line == "config,status,median_us,spread_us":
                header.append(line)
                continue
            m = re.match(r'^"([^"]*)",([a-z-]+),([^,]*),([^,]*)$', line)
            check(m, "%s: a row that is not a recording's: %r" % (path, line))
            conf = dict(kv.split("=", 1) for kv in m.group(1).split(","))
            rows.append((conf, m.group(2), m.group(3), m.group(4)))
    return header, rows


# ---- cases ------------------------------------------------------------------------------------


def case_export(w):
    recs = committed_records(w)
    out = w.path("all")
    p = w.run(["cache", "export", "--project-cache", w.project(), "-o", out])
    files = sorted(glob.glob(os.path.join(out, "*.t4.json")))
    check(len(files) == len(recs) and len(p.stdout.splitlines()) == len(recs),
          "exported %d files for %d records:\n%s" % (len(files), len(recs), p.stdout))
    by_key = {r["key"]: r for r in recs}
    for path in files:
        doc = load(path)
        check_schema(doc, path)
        key = doc["metadata"]["kt"]["key"]
        check(path.endswith("%s-%s.t4.json" % (by_key[key]["kernel"], key)), "file name " + path)
        check_says_record(doc, by_key[key], path)
    # one record: to stdout by KEY, to a file with -o, into a directory that exists
    rec = recs[0]
    p = w.run(["cache", "export", rec["key"], "--project-cache", w.project()])
    check(json.loads(p.stdout)["metadata"]["kt"]["key"] == rec["key"], "export KEY to stdout")
    one = w.path("one.json")
    w.run(["cache", "export", rec["key"], "--project-cache", w.project(), "--format", "t4", "-o", one])
    check(load(one)["metadata"]["kt"]["key"] == rec["key"], "export KEY -o FILE")
    os.makedirs(w.path("dir"))
    w.run(["cache", "export", rec["key"], "--project-cache", w.project(), "--output", w.path("dir")])
    check(os.listdir(w.path("dir")) == ["%s-%s.t4.json" % (rec["kernel"], rec["key"])], "export KEY -o DIR")
    # --kernel and --gpu choose
    n_rms = sum(1 for r in recs if r["kernel"] == "rmsnorm")
    p = w.run(["cache", "export", "--project-cache", w.project(), "--kernel", "rms*", "-o", w.path("rms")])
    check(len(os.listdir(w.path("rms"))) == n_rms, "--kernel rms*: %s" % p.stdout)
    n_h200 = sum(1 for r in recs if r["fields"]["gpu.name"] == "NVIDIA H200")
    check(n_h200 > 0, "no committed record of the H200")
    w.run(["cache", "export", "--project-cache", w.project(), "--gpu", "NVIDIA H200", "-o", w.path("h200")])
    check(len(os.listdir(w.path("h200"))) == n_h200, "--gpu NVIDIA H200")
    # errors
    p = w.run(["cache", "export", "--project-cache", w.project()], rc=1)
    check("%d records match; choose one" % len(recs) in p.stderr, "several to stdout:\n" + p.stderr)
    p = w.run(["cache", "export", "--project-cache", w.project(), "--gpu", "NVIDIA Imaginary"], rc=1)
    check("no record matches and the GPU" in p.stderr, "no match:\n" + p.stderr)
    p = w.run(["cache", "export", "--format", "csv"], rc=1)
    check("--format 'csv': the only format is t4" in p.stderr, "--format csv:\n" + p.stderr)
    p = w.run(["cache", "export", "nonsense"], rc=1)
    check("'nonsense' is not a key" in p.stderr, "bad key:\n" + p.stderr)
    p = w.run(["cache", "import", "--help"])
    check(p.stdout.startswith("usage: kt cache import FILE.json") and "--template FILE" in p.stdout, "--help:\n" + p.stdout)
    p = w.run(["cache", "export", "--help"])
    check(p.stdout.startswith("usage: kt cache export") and "--output PATH" in p.stdout, "--help:\n" + p.stdout)
    p = w.run(["cache", "--help"])
    check(re.search(r"export +write records in Kernel Tuner's T4", p.stdout) and re.search(r"import +read a T4", p.stdout),
          "kt cache --help:\n" + p.stdout)


def explain_fields(w, rec, nvcc):
    """The key fields the current template gives at the record's shape, types and arch."""
    f = rec["fields"]
    argv = ["cache", "explain", "--template", os.path.join(w.root, "templates", rec["kernel"] + ".cu.tmpl"),
            "--shape", rec["shape"], "--gpu", f["gpu.name"], "--arch", f["arch"], "--flags", f["flags"],
            "--nvcc", nvcc, "--project-cache", w.project()]
    for k, v in f.items():
        if k.startswith("type."):
            argv += ["--type", "%s=%s" % (k[5:], v)]
    p = w.run(argv)
    return dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)


def case_roundtrip(w):
    nvcc = w.path("nvcc")
    with open(nvcc, "w") as f:
        f.write(FAKE_NVCC)
    os.chmod(nvcc, 0o755)
    tried = stale = 0
    for rec in committed_records(w):
        f = rec["fields"]
        now = explain_fields(w, rec, nvcc)
        space = lambda fields: {k: v for k, v in fields.items() if k.startswith(("param.", "require.", "type."))}
        if space(now) != space(f):
            stale += 1  # the template's space changed since this record was tuned
            continue
        tried += 1
        t4 = w.path("rt-%s.json" % rec["key"])
        out = w.path("rt-%s.csv" % rec["key"])
        w.run(["cache", "export", rec["key"], "--project-cache", w.project(), "-o", t4])
        argv = ["cache", "import", t4, "--template", os.path.join(w.root, "templates", rec["kernel"] + ".cu.tmpl"),
                "--shape", rec["shape"], "--arch", f["arch"], "-o", out]
        for k, v in f.items():
            if k.startswith("type."):
                argv += ["--type", "%s=%s" % (k[5:], v)]
        p = w.run(argv)
        evals = rec["evaluated"]
        check("%d configurations recorded in %s" % (len(evals), out) in p.stdout, "import said:\n" + p.stdout)
        header, rows = read_recording(out)
        check("# shape: " + rec["shape"] in header and any(l.startswith('# gpu: name="%s"' % f["gpu.name"]) for l in header),
              "%s: header %s" % (out, header))
        check(len(rows) == len(evals), "%s: %d rows for %d evaluations" % (out, len(rows), len(evals)))
        for i, ((conf, status, median, spread), ev) in enumerate(zip(rows, evals)):
            where = "%s row %d" % (out, i)
            check(conf == config_text(ev["config"]) and status == ev["status"], where + ": %s %s vs %s %s"
                  % (conf, status, ev["config"], ev["status"]))
            if status == "ok":
                check(abs(float(median) - ev["time_us"]) < 1e-4 and abs(float(spread) - ev["spread_us"]) < 1e-4,
                      where + ": %s/%s vs %s/%s" % (median, spread, ev["time_us"], ev["spread_us"]))
        if tried == 1 and w.search_curves:  # the search benchmark replays an imported space
            p = subprocess.run([w.search_curves, "--seeds", "2", out], capture_output=True, text=True, timeout=300)
            check(p.returncode == 0 and "on %s" % f["gpu.name"] in p.stdout and "bestfirst" in p.stdout,
                  "search_curves %s:\n%s%s" % (out, p.stdout, p.stderr))
    print("round trip of %d committed records (%d skipped: their template's space changed since)" % (tried, stale))
    check(tried >= len(committed_records(w)) // 2, "only %d records could be checked" % tried)


def tune_fake(w, name):
    tmpl = os.path.join(w.fake, "scale.cu.tmpl")
    rec, t4 = w.path(name + ".csv"), w.path(name + ".json")
    p = w.run(["tune", tmpl, "--backend", "fake", "--nvcc", os.path.join(w.fake, "fake_nvcc.py"), "--shape", "n=4096",
               "--strategy", "exhaustive", "--timeout", "1", "--quiet", "--cache-dir", w.path("tc"),
               "--workdir", w.path("work-" + name), "--record", rec, "--t4", t4], timeout=300)
    check("wrote 21 results in T4 format to " + t4 in p.stdout, "kt tune --t4 said:\n" + p.stdout)
    return tmpl, rec, t4


def case_tune(w):
    tmpl, rec, t4 = tune_fake(w, "scale")
    doc = load(t4)
    check_schema(doc, t4)
    statuses = {r["kt"]["status"] for r in doc["results"]}
    check(statuses == set(KT_STATUS_INVALIDITY), "the fake run should meet every status, met %s" % sorted(statuses))
    for r in doc["results"]:
        check(r["invalidity"] == KT_STATUS_INVALIDITY[r["kt"]["status"]], "invalidity of " + str(r))
    meta = doc["metadata"]
    check(meta["kt"]["kernel"] == "scale" and meta["kt"]["shape"] == "n=4096" and meta["kt"]["search"]["strategy"]
          == "exhaustive" and re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", meta["timestamp"]), "metadata " + str(meta))
    out = w.path("scale-imported.csv")
    p = w.run(["cache", "import", t4, "--template", tmpl, "--shape", "n=4096", "-o", out])  # arch: the file's
    check("21 configurations recorded in " + out in p.stdout, "import said:\n" + p.stdout)
    with open(rec) as a, open(out) as b:
        want, got = a.read(), b.read()
    check(want == got, "the imported recording differs from kt tune --record's:\n--- record\n%s--- import\n%s" % (want, got))
    p = w.run(["tune", "--help"])
    check(re.search(r"--t4 FILE +save every evaluation in Kernel Tuner's T4", p.stdout), "kt tune --help:\n" + p.stdout)


def case_peer(w):
    """A file as Kernel Tuner's store_output_file lays one out: times in ms, failures as its error
    classes, no kt metadata, extra timing keys; invalid configurations marked constraints."""
    tmpl = os.path.join(w.fake, "scale.cu.tmpl")

    def result(block, unroll, mode, invalidity, time):
        return {"timestamp": "2024-05-01 12:00:00.000000",
                "configuration": {"BLOCK": block, "UNROLL": unroll, "MODE": mode},
                "times": {"compilation": 0.4, "benchmark": 3.0, "framework": 0.1, "search_algorithm": 0.01,
                          "validation": 0.0, "runtimes": [time] * 3 if invalidity == "correct" else []},
                "invalidity": invalidity, "correctness": 1,
                "measurements": [{"name": "time", "value": time, "unit": "ms"},
                                 {"name": "GFLOP/s", "value": 12.5, "unit": ""}],
                "objectives": ["time"]}

    doc = {"schema_version": "1.0.0", "results": [
        result(256, 4, "good", "correct", 0.0125),
        result(128, 1, "good", "correct", 0.031),
        result(32, 4, "good", "compile", "CompilationFailedConfig"),
        result(1024, 2, "good", "runtime", "RuntimeFailedConfig"),
        result(64, 2, "wrong", "constraints", "InvalidConfig"),  # outside the template's constraints: skipped
        result(64, 1, "stall", "timeout", "RuntimeFailedConfig"),
    ]}
    doc["results"][1]["measurements"] = []  # then the runtimes give the time
    doc["results"][1]["times"]["runtimes"] = [0.030, 0.031, 0.035]
    src, out = w.path("peer.json"), w.path("peer.csv")
    with open(src, "w") as f:
        json.dump(doc, f)
    check_schema(doc, src)
    p = w.run(["cache", "import", src, "--template", tmpl, "--shape", "n=4096", "-o", out])
    check("5 configurations recorded" in p.stdout and "1 results skipped" in p.stdout, "import said:\n" + p.stdout)
    _, rows = read_recording(out)
    got = [(c["BLOCK"], c["UNROLL"], c["MODE"], s, m) for c, s, m, _ in rows]
    want = [("256", "4", "good", "ok", "12.5000"), ("128", "1", "good", "ok", "31.0000"),
            ("32", "4", "good", "compile-failed", ""), ("1024", "2", "good", "faulted", ""),
            ("64", "1", "stall", "timed-out", "")]
    check(got == want, "peer rows:\n%s\nwant:\n%s" % (got, want))


MALFORMED = [
    # (name, how to spoil a good export, expected message after "FILE: ")
    ("not_json", lambda d: "{\n  \"results\": [\n    {,\n", r":3:[67]: not JSON \(a T4 file is one JSON object\)"),
    ("array", lambda d: [d], r": not a T4 results document \(expected a JSON object\)"),
    ("no_results", lambda d: {"schema_version": "1.0.0", "metadata": d["metadata"]},
     r": not a T4 results document \(no 'results' array\)"),
    ("empty", lambda d: dict(d, results=[]), r": no result to import \(0 in the file, 0 outside the template's constraints\)"),
    ("version", lambda d: dict(d, schema_version="2.0.0"), r": schema_version 2\.0\.0: this kt reads T4 1\.x"),
    ("bad_version", lambda d: dict(d, schema_version=1), r": schema_version is not a version \(major\.minor\.patch\)"),
    ("no_invalidity", lambda d: drop(d, 3, "invalidity"), r": results\[3\]: no 'invalidity' \(T4 requires it\)"),
    ("no_times", lambda d: drop(d, 0, "times"), r": results\[0\]: no 'times' \(T4 requires it\)"),
    ("no_configuration", lambda d: drop(d, 5, "configuration"), r": results\[5\]: no 'configuration' \(T4 requires it\)"),
    ("correctness_type", lambda d: put(d, 1, "correctness", "yes"), r": results\[1\]: 'correctness' is not a number"),
    ("invalidity_value", lambda d: put(d, 2, "invalidity", "slow"),
     r": results\[2\]: invalidity 'slow' is not one of timeout, compile, runtime, correctness, constraints, correct"),
    ("measurement_type", lambda d: put(d, 0, "measurements", [{"name": "time", "value": True, "unit": "ms"}]),
     r": results\[0\]: 'measurements\[0\]\.value' is not a number, string or array"),
    ("runtimes_type", lambda d: put(d, 0, "times", {"runtimes": ["fast"]}),
     r": results\[0\]: times\.runtimes\[0\] is not a number"),
    ("undeclared_value", lambda d: conf(d, 4, BLOCK=48),
     r": results\[4\]: BLOCK=48 is not a declared value of BLOCK: not in the space of .*scale\.cu\.tmpl"),
    ("unknown_param", lambda d: conf(d, 4, WARP=2),
     r": results\[4\]: the configuration sets WARP, which the template does not declare: not in the space of"),
    ("missing_param", lambda d: conf(d, 4, UNROLL=None),
     r": results\[4\]: the configuration has no value for UNROLL: not in the space of"),
    ("infeasible", lambda d: conf(d, 0, BLOCK=128, UNROLL=1, MODE="wrong"),
     r": results\[0\]: the configuration BLOCK=128,UNROLL=1,MODE=wrong violates 'MODE == \"good\" \|\| \(BLOCK == 64 && UNROLL == 1\)' "
     r"\(.*scale\.cu\.tmpl:10\) at shape n=4096: not in the template's space"),
    ("repeat", lambda d: dict(d, results=d["results"] + [d["results"][2]]),
     r": results\[21\]: the configuration \S+ repeats results\[2\]; a recorded space holds each once"),
    ("no_time", lambda d: put(d, first_ok(d), "measurements", []),
     r": results\[\d+\]: a correct result without a time: no numeric measurement 'time' and no times\.runtimes"),
    ("time_unit", lambda d: unit(d, first_ok(d), "furlongs"),
     r": results\[\d+\]: the measurement 'time' has no unit of time \(expected ns, us, ms, s or their names\)"),
    ("kt_status", lambda d: put(d, first_ok(d), "kt", {"status": "faulted"}),
     r": results\[\d+\]: kt\.status 'faulted' does not agree with invalidity 'correct'"),
    ("kernel", lambda d: meta(d, kernel="softmax"), r": its results are of kernel 'softmax' \(metadata\.kt\.kernel\), .* is 'scale'"),
    ("shape", lambda d: meta(d, shape="n=8192"), r": its results were measured at shape n=8192 \(metadata\.kt\.shape\), not at n=4096"),
    ("timeunit", lambda d: dict(d, metadata=dict(d["metadata"], timeunit="fortnights")),
     r": metadata\.timeunit is not one of nanoseconds, microseconds, milliseconds, seconds"),
]


def drop(d, i, key):
    del d["results"][i][key]
    return d


def put(d, i, key, value):
    d["results"][i][key] = value
    return d


def conf(d, i, **kv):
    c = d["results"][i]["configuration"]
    for k, v in kv.items():
        if v is None:
            del c[k]
        else:
            c[k] = v
    return d


def first_ok(d):
    return next(i for i, r in enumerate(d["results"]) if r["invalidity"] == "correct")


def unit(d, i, u):
    for m in d["results"][i]["measurements"]:
        if m["name"] == "time":
            m["unit"] = u
    return d


def meta(d, **kv):
    d["metadata"]["kt"].update(kv)
    return d


def case_malformed(w):
    tmpl, _, t4 = tune_fake(w, "good")
    good = load(t4)
    out = w.path("out.csv")
    with open(out, "w") as f:
        f.write("what was there before\n")
    for name, spoil, message in MALFORMED:
        bad = spoil(copy.deepcopy(good))
        path = w.path("bad-%s.json" % name)
        with open(path, "w") as f:
            f.write(bad if isinstance(bad, str) else json.dumps(bad, indent=1))
        p = w.run(["cache", "import", path, "--template", tmpl, "--shape", "n=4096", "-o", out], rc=1)
        check(re.search("^kt cache: " + re.escape(path) + message, p.stderr, re.M),
              "%s: stderr does not match %r:\n%s" % (name, message, p.stderr))
        with open(out) as f:
            check(f.read() == "what was there before\n", name + ": the output was written")
    leftovers = [f for f in os.listdir(w.tmp) if ".tmp." in f]
    check(not leftovers, "temporary files left: %s" % leftovers)
    # the command's own errors
    for argv, message in [
        (["cache", "import", t4, "--shape", "n=4096", "-o", out], "--template, --shape and --output are required"),
        (["cache", "import", "--template", tmpl, "--shape", "n=4096", "-o", out], "expected one T4 file to import"),
        (["cache", "import", t4, "--template", tmpl, "--shape", "m=4", "-o", out], "--shape 'm=4': "),
        (["cache", "import", w.path("absent.json"), "--template", tmpl, "--shape", "n=4096", "-o", out], "absent.json"),
        (["cache", "import", t4, "--template", tmpl, "--shape", "n=4096", "--arch", "80", "-o", out],
         ": its results were compiled for 90 (metadata.kt.arch), not for 80"),
        (["cache", "import", t4, "--template", tmpl, "--shape", "n=4096", "--type", "T=half", "-o", out], "T=half"),
    ]:
        p = w.run(argv, rc=1)
        check(message in p.stderr, "%s: %s" % (" ".join(argv), p.stderr))


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kt", required=True)
    ap.add_argument("--root", required=True, help="the repository (its cache/ and templates/)")
    ap.add_argument("--fake", required=True, help="tests/unit/fake (the fake compiler and its template)")
    ap.add_argument("--search-curves", help="bench/search_curves, to replay an imported space (roundtrip)")
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    w = World(args)
    try:
        CASES[args.case](w)
    except AssertionError as e:
        print("FAILED: %s" % e)
        print("(files kept in %s)" % w.tmp)
        return 1
    shutil.rmtree(w.tmp, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
