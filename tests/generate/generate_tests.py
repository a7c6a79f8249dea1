#!/usr/bin/env python3
"""`kt generate` with a GPU present: the fake GPU backend (KT_TEST_GPU_BACKEND=fake) and the fake
compiler (tests/unit/fake/fake_nvcc.py), on tests/unit/fake/scale.cu.tmpl (fastest: BLOCK=256,
UNROLL=4; default BLOCK=128, UNROLL=1).

  gpu_keys   the GPU here gives the keys: tune a miss, then --require-hit and --no-tune hit the
             record; --require-hit on an empty cache names the key; --read-only tunes, stores nothing
  budget     --budget/--seconds/--strategy and KT_TUNE_* bound the tuning of a miss
  robust     the launcher's fallback is the most robust configuration over the tuned shapes, the
             same when the shapes were just tuned and when they come from the records
  rounds     KT_AGENT=builtin/llm: a miss runs bounded tuning rounds, their history is in the record
             (kt cache show); KT_AGENT=off tunes once; a hit never calls the planner
  measure    --l2 and --launch (and the template's @kt l2): how a miss is timed reaches the worker
             (the fake GPU's times), the record and, away from the defaults, the key
  remote_seed  the template edited, nothing local: the choice of its version before, kept by a
             remote (an HTTP server here), seeds the search of the miss

usage: generate_tests.py --kt KT --fake DIR CASE
Python standard library only.
"""
import argparse
import glob
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading



class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


class Env:
    def __init__(self, args):
        self.kt = args.kt
        self.fake = os.path.abspath(args.fake)
        self.template = os.path.join(self.fake, "scale.cu.tmpl")
        self.root = tempfile.mkdtemp(prefix="kt-generate-test-")
        self.cache = os.path.join(self.root, "cache")
        self.nvcc = os.path.join(self.fake, "fake_nvcc.py")  # answers --version like nvcc
        self.runs = 0

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def generate(self, shapes, *extra, rc=0, env=None, template=None):
        """Runs kt generate into a fresh directory; returns (manifest or None, stderr)."""
        self.runs += 1
        out = os.path.join(self.root, "out%d" % self.runs)
        argv = [self.kt, "generate", "--template", template or self.template, "--name", "scale", "--out", out,
                "--nvcc", self.nvcc, "--cache-dir", self.cache]
        for s in shapes:
            argv += ["--shape", s]
        argv += list(extra)
        e = dict(os.environ, KT_TEST_GPU_BACKEND="fake", KT_FAKE_GPUS="1", KT_AGENT="off")
        for k in ("KT_GPU", "KT_REQUIRE_CACHE_HIT", "KT_RETUNE", "KT_REMOTE_CACHE", "KT_CACHE_DIR"):
            e.pop(k, None)
        e.update(env or {})
        p = subprocess.run(argv, env=e, capture_output=True, text=True, timeout=240)
        if p.returncode != rc:
            raise Fail("%s: exit %d, expected %d\n%s" % (" ".join(argv), p.returncode, rc, p.stderr))
        if rc != 0:
            return None, p.stderr
        with open(os.path.join(out, "kt_scale.json")) as f:
            return json.load(f), p.stderr

    def records(self):
        return sorted(glob.glob(os.path.join(self.cache, "v*", "[0-9a-f][0-9a-f]", "*.json")))


def origins(manifest):
    return [s["origin"] for s in manifest["shapes"]]


def case_gpu_keys(env):
    shape = ["n=4096"]
    # --require-hit on an empty cache: the GPU here gives the key, which the error names.
    _, err = env.generate(shape, "--require-hit", rc=1)
    check("cache miss with --require-hit" in err and "key " in err and "no GPU identity" not in err,
          "--require-hit with a GPU names the key: " + err)
    # --no-tune: nothing cached, nothing tuned.
    m, err = env.generate(shape, "--no-tune")
    check(origins(m) == ["default"] and "tuning is off" in err, "--no-tune: %s %s" % (origins(m), err))
    # --read-only: tuned, not stored.
    m, _ = env.generate(shape, "--read-only", "--quiet")
    check(origins(m) == ["tuned"] and not env.records(), "--read-only tunes and stores nothing")
    # A miss is tuned and stored; --trace writes where the tuning's time went.
    trace = os.path.join(env.root, "trace.json")
    m, err = env.generate(shape, "--trace", trace)
    check(origins(m) == ["tuned"] and len(env.records()) == 1, "a miss is tuned and stored: %s %s" % (origins(m), err))
    tuned = m["shapes"][0]["config"]
    check(tuned["BLOCK"] == 256 and tuned["UNROLL"] == 4, "the fastest configuration: %s" % tuned)
    with open(trace) as f:
        names = {e["name"] for e in json.load(f)["traceEvents"] if e["ph"] == "X"}
    check({"setup", "compile batch", "ask"} <= names and any(n.startswith("measure ") for n in names),
          "the trace of a miss: %s" % sorted(names))
    check("where the tuning's time went" in err and trace in err, "the trace is named: " + err)
    os.remove(trace)
    # The GPU's identity is read with --require-hit and --no-tune: both hit the record, and
    # nothing tuned leaves no trace.
    for flag in ("--require-hit", "--no-tune"):
        m, _ = env.generate(shape, flag, "--trace", trace)
        check(origins(m) == ["cache:user"] and m["shapes"][0]["config"] == tuned,
              "%s hits the record: %s" % (flag, origins(m)))
        check(not os.path.exists(trace), "%s: a hit writes no trace" % flag)


def record(path):
    with open(path) as f:
        return json.load(f)


class Store(http.server.ThreadingHTTPServer):
    """A remote cache on 127.0.0.1: PUT keeps a body under its path, GET and HEAD give it back."""

    def __init__(self):
        files = self.files = {}

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_PUT(self):
                files[self.path] = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(201)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self, body=True):
                data = files.get(self.path)
                self.send_response(200 if data is not None else 404)
                self.send_header("Content-Length", str(len(data or b"")))
                self.end_headers()
                if body and data:
                    self.wfile.write(data)

            def do_HEAD(self):
                self.do_GET(body=False)

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def url(self):
        return "http://127.0.0.1:%d/kt" % self.server_address[1]


def case_remote_seed(env):
    srv = Store()
    try:
        remote = {"KT_REMOTE_CACHE": srv.url()}
        m, _ = env.generate(["n=4096"], "--quiet", "--budget", "12", env=remote)
        check(origins(m) == ["tuned"], "v1 tuned: %s" % origins(m))
        problem = [p for p in srv.files if p.startswith("/kt/v1/problem/")]
        check(len(problem) == 1, "the problem's latest on the remote: %s" % sorted(srv.files))
        # The template edited; another machine, nothing local.
        v2 = os.path.join(env.root, "v2.cu.tmpl")
        with open(env.template) as f, open(v2, "w") as g:
            g.write(f.read() + "// edited\n")
        shutil.rmtree(env.cache)
        m, err = env.generate(["n=4096"], "--budget", "12", env=remote, template=v2)
        check(origins(m) == ["tuned"] and "warm start from 1 configuration of" in err and
              "(distance 0.5, another version of the template)" in err and "warning" not in err,
              "v2 seeded from the remote:\n" + err)
        # Without the remote nothing is left to seed it.
        shutil.rmtree(env.cache)
        m, err = env.generate(["n=4096"], "--budget", "12", template=v2)
        check(origins(m) == ["tuned"] and "another version of the template" not in err, "v2 alone:\n" + err)
    finally:
        srv.shutdown()
        srv.server_close()


def case_budget(env):
    # The default budget: 400 evaluations, 90 seconds (this space is smaller: all of it).
    env.generate(["n=4096"], "--quiet")
    (r,) = [record(p) for p in env.records()]
    check(r["search"]["budget"] == 400, "default budget: %s" % r["search"])
    # --budget and --strategy bound the search; the environment stands in when they are not given.
    env.generate(["n=8192"], "--quiet", "--budget", "6", "--strategy", "random")
    env.generate(["n=16384"], "--quiet", env={"KT_TUNE_BUDGET": "9", "KT_TUNE_STRATEGY": "random"})
    env.generate(["n=32768"], "--quiet", "--budget", "5", env={"KT_TUNE_BUDGET": "9"})
    got = {}
    for p in env.records():
        r = record(p)
        got[r["shape"]] = (r["search"]["budget"], r["search"]["strategy"], len(r["evaluated"]))
    for shape, budget in (("n=8192", 6), ("n=16384", 9), ("n=32768", 5)):
        b, strategy, n = got[shape]
        check(b == budget and n <= budget + 1, "%s: budget %s, %d evaluated: %s" % (shape, b, n, got))
    check(got["n=8192"][1] == "random" and got["n=16384"][1] == "random", "the strategy: %s" % got)
    _, err = env.generate(["n=4096"], "--strategy", "frob", rc=1)
    check("--strategy 'frob': not a search strategy" in err, err)
    _, err = env.generate(["n=4096"], rc=1, env={"KT_TUNE_SECONDS": "soon"})
    check("KT_TUNE_SECONDS='soon': expected an integer" in err, err)


def fallback(env, manifest):
    """The fallback of the GPU's table (of the generic table when there is none), and the
    dispatcher's line for it."""
    out = os.path.join(env.root, "out%d" % env.runs)
    with open(os.path.join(out, "kt_scale.cu")) as f:
        text = f.read().splitlines()
    if manifest["tables"]:
        return manifest["tables"][0]["fallback"], [l for l in text if "kt_entries_0, " in l]
    return manifest["fallback"], [l for l in text if "kt_generic = " in l]


def case_robust(env):
    shapes = ["n=4096", "n=8192"]
    # No evaluations anywhere: the template default.
    m, _ = env.generate(shapes, "--no-tune")
    fb, _ = fallback(env, m)
    check(fb["origin"] == "default" and fb["config"] == {"BLOCK": 128, "UNROLL": 1, "MODE": "good"},
          "no evaluations: the default fallback: %s" % fb)
    # Both shapes tuned: the most robust configuration across them.
    m, _ = env.generate(shapes, "--quiet")
    check(origins(m) == ["tuned", "tuned"], "tuned: %s" % origins(m))
    tuned_fb, tuned_line = fallback(env, m)
    check(tuned_fb["origin"] == "robust" and tuned_fb["config"] != {"BLOCK": 128, "UNROLL": 1, "MODE": "good"},
          "the robust fallback differs from the default: %s" % tuned_fb)
    check(tuned_fb["config"]["MODE"] == "good", "a failing configuration is never robust: %s" % tuned_fb)
    # Rebuilt from the records (as CI does): the same fallback, the same dispatcher line.
    m, _ = env.generate(shapes, "--require-hit")
    check(origins(m) == ["cache:user", "cache:user"], "hits: %s" % origins(m))
    hit_fb, hit_line = fallback(env, m)
    check(hit_fb == tuned_fb and hit_line == tuned_line and hit_line,
          "the same fallback from hits: %s %s vs %s %s" % (hit_fb, hit_line, tuned_fb, tuned_line))
    # A forced shape has no evaluations; the other shape's record still gives the fallback.
    m, _ = env.generate(shapes, "--require-hit", "--config", "0:BLOCK=64,UNROLL=1,MODE=good")
    fb, _ = fallback(env, m)
    check(fb["origin"] == "robust", "a forced shape and a hit: %s" % fb)


def show(env, key):
    p = subprocess.run([env.kt, "cache", "show", key, "--cache-dir", env.cache], capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 0, "kt cache show %s: %s" % (key, p.stderr))
    return p.stdout


def case_rounds(env):
    agent = {"KT_AGENT": "builtin"}
    # KT_AGENT=builtin (the default): a miss runs bounded rounds; their history is in the record.
    m, err = env.generate(["n=4096"], "--quiet", env={"KT_AGENT": ""})
    check(origins(m) == ["tuned"], "rounds: %s %s" % (origins(m), err))
    (r,) = [record(p) for p in env.records()]
    rounds = r.get("rounds")
    check(isinstance(rounds, dict) and 1 <= len(rounds["rounds"]) <= 2, "the history: %s" % rounds)
    check(rounds["rounds"][0]["evaluated"] > 0 and rounds["rounds"][0].get("plan"), "round 0: %s" % rounds)
    check(r["config"] == m["shapes"][0]["config"], "the record holds the choice")
    cfgs = [json.dumps(e["config"], sort_keys=True) for e in r["evaluated"]]
    check(len(cfgs) == len(set(cfgs)), "one evaluation per configuration")
    out = show(env, m["shapes"][0]["key"])
    check('"rounds"' in out and '"best_round"' in out, "kt cache show prints the rounds: " + out[:400])
    # KT_TUNE_ROUNDS bounds the rounds; the retired KT_AGENT_ROUNDS is named in a warning.
    _, err = env.generate(["n=8192"], "--quiet", env=dict(agent, KT_TUNE_ROUNDS="1", KT_AGENT_ROUNDS="3"))
    (r8,) = [record(p) for p in env.records() if record(p)["shape"] == "n=8192"]
    check(len(r8["rounds"]["rounds"]) == 1, "KT_TUNE_ROUNDS=1: %s" % r8["rounds"])
    check("KT_AGENT_ROUNDS is no longer read" in err and "KT_TUNE_ROUNDS" in err, "the retired name: " + err)
    # KT_AGENT=off: a single tuning, no history.
    env.generate(["n=16384"], "--quiet", env={"KT_AGENT": "off"})
    (r16,) = [record(p) for p in env.records() if record(p)["shape"] == "n=16384"]
    check("rounds" not in r16, "KT_AGENT=off stores no rounds")
    # KT_AGENT=llm without a model: the built-in planner plans, with a warning.
    llm = {"KT_AGENT": "llm", "KT_LLM_BASE_URL": "", "OPENAI_BASE_URL": "", "KT_LLM_MODEL": ""}
    m, err = env.generate(["n=32768"], env=llm)
    check(origins(m) == ["tuned"] and "KT_AGENT=llm, but no model" in err, "llm without a model: " + err)
    # A hit never calls the planner (no model is even looked for).
    m, err = env.generate(["n=4096", "n=32768"], env=llm)
    check(origins(m) == ["cache:user", "cache:user"] and "no model" not in err, "hits: %s %s" % (origins(m), err))
    # A bad KT_AGENT is an error before anything runs.
    _, err = env.generate(["n=4096"], rc=1, env={"KT_AGENT": "maybe"})
    check("KT_AGENT='maybe'" in err, err)


def case_measure(env):
    shape = ["n=4096"]
    # The whole space is tuned, the stalling configuration left out (its watchdog takes 10 s).
    with open(env.template) as f:
        text = f.read().replace("// fake-rule: MODE=stall hang\n", "")
    env.template = os.path.join(env.root, "scale.cu.tmpl")
    with open(env.template, "w") as f:
        f.write(text)
    # The defaults: a cold L2 and stream launches; the record says so, the key has no such field.
    env.generate(shape, "--quiet", "--strategy", "exhaustive")
    (cold,) = [record(p) for p in env.records()]
    check(cold["measure"] == {"l2": "cold", "launch": "stream"}, "the defaults: %s" % cold.get("measure"))
    check(not [f for f in cold["fields"] if f.startswith("measure.")], "no measure field: %s" % cold["fields"])
    # The fake GPU: the fastest configuration takes 100 us cold, 80% warm, 90% as a graph's node.
    check(cold["time_us"] == 100, "cold, stream: %s us" % cold["time_us"])
    m, _ = env.generate(shape, "--quiet", "--strategy", "exhaustive", "--l2", "warm", "--launch", "graph")
    check(origins(m) == ["tuned"], "warm and graph are a miss of their own: %s" % origins(m))
    (warm,) = [r for r in (record(p) for p in env.records()) if r["key"] != cold["key"]]
    check(warm["measure"] == {"l2": "warm", "launch": "graph"}, "warm, graph: %s" % warm.get("measure"))
    check(warm["fields"].get("measure.l2") == "warm" and warm["fields"].get("measure.launch") == "graph",
          "the key's fields: %s" % warm["fields"])
    check(abs(warm["time_us"] - 72) < 1e-6, "warm, graph: %s us" % warm["time_us"])
    # Each setting finds its own record; --l2 cold is the default, so it hits the cold record.
    m, _ = env.generate(shape, "--require-hit", "--l2", "warm", "--launch", "graph")
    check(origins(m) == ["cache:user"] and m["shapes"][0]["key"] == warm["key"], "warm hits: %s" % m["shapes"])
    m, _ = env.generate(shape, "--require-hit", "--l2", "cold")
    check(origins(m) == ["cache:user"] and m["shapes"][0]["key"] == cold["key"], "cold hits: %s" % m["shapes"])
    # The template's @kt l2 warm: warm unless the command says otherwise.
    tmpl = os.path.join(env.root, "warm.cu.tmpl")
    with open(env.template) as f, open(tmpl, "w") as g:
        g.write(f.read().replace("// @kt tolerance", "// @kt l2        warm\n// @kt tolerance"))
    m, _ = env.generate(shape, "--quiet", "--strategy", "exhaustive", template=tmpl)
    (r,) = [r for r in (record(p) for p in env.records()) if r["key"] == m["shapes"][0]["key"]]
    check(r["measure"]["l2"] == "warm" and r["fields"].get("measure.l2") == "warm" and r["time_us"] == 80,
          "the template's warm: %s %s" % (r["measure"], r["time_us"]))
    m, _ = env.generate(shape, "--quiet", "--strategy", "exhaustive", "--l2", "cold", template=tmpl)
    (r,) = [r for r in (record(p) for p in env.records()) if r["key"] == m["shapes"][0]["key"]]
    check(r["measure"]["l2"] == "cold" and "measure.l2" not in r["fields"] and r["time_us"] == 100,
          "--l2 cold over the template's warm: %s %s" % (r["measure"], r["time_us"]))


CASES = {"gpu_keys": case_gpu_keys, "budget": case_budget, "robust": case_robust, "rounds": case_rounds,
         "measure": case_measure,
         "remote_seed": case_remote_seed}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kt", required=True)
    ap.add_argument("--fake", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    env = Env(args)
    try:
        CASES[args.case](env)
    except Fail as e:
        print("FAIL %s: %s" % (args.case, e), file=sys.stderr)
        return 1
    finally:
        env.close()
    print("ok %s" % args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
