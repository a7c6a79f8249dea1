#!/usr/bin/env python3
"""Runs one agent test case: starts the fake OpenAI server (fake_openai.py) with the case's
script, runs `kt refactor` or the stage-2 plan driver against it over real HTTP on loopback,
checks the outcome, and checks that the API key appears in no output and no file.  The record
case and the GPU case go on to stage 2 through `kt generate` (on the fake GPU and the fake
compiler of tests/unit/fake, or on the GPU) and check that the cache record and `kt cache show`
hold both stages.

  run_case.py CASE --kt KT --plan-driver DRIVER --work DIR [--nvcc NVCC] [--doc-dir DIR]

Exit status 0 pass, 1 fail, 77 skipped (with the reason on stdout).
"""
import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SOURCE = os.path.join(ROOT, "examples", "plain_kernels", "rmsnorm.cu")
GOOD = os.path.join(HERE, "replies", "rmsnorm_good.cu.tmpl")
SHAPE = "rows=4096,hidden=4096"
SCALE_SOURCE = os.path.join(HERE, "fake", "scale.cu")
SCALE_REPLY = os.path.join(HERE, "replies", "scale_good.cu.tmpl")
FAKE_NVCC = os.path.join(ROOT, "tests", "unit", "fake", "fake_nvcc.py")
SKIP = 77



class Failed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)


def reply(name):
    return {"content_file": os.path.join(HERE, "replies", name), "fence": "cuda"}


def proposals(*props):
    return {"content": json.dumps({"proposals": list(props)})}


class Run:
    """One case: a work directory, a server, a key."""

    def __init__(self, args, name):
        self.args = args
        self.work = os.path.abspath(args.work)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.key = "sk-kt-test-" + secrets.token_hex(16)
        self.out = os.path.join(self.work, "out", "rmsnorm.cu.tmpl")
        self.cache = os.path.join(self.work, "cache")
        self.generated = 0
        self.server = None
        self.log = os.path.join(self.work, "requests.jsonl")
        self.outputs = []

    def serve(self, replies):
        script = os.path.join(self.work, "script.json")
        with open(script, "w", encoding="utf-8") as f:
            json.dump({"replies": replies}, f)
        port_file = os.path.join(self.work, "port")
        env = dict(os.environ, FAKE_OPENAI_EXPECT_KEY=self.key)
        # --idle-exit ends a stray server; a case ends sooner (ctest's TIMEOUT is 300 s)
        self.server = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "fake_openai.py"), "--script", script, "--log", self.log,
             "--port-file", port_file, "--idle-exit", "600"], env=env)
        while not os.path.exists(port_file):  # written once it listens
            check(self.server.poll() is None, "the fake server exited (%s) before it listened" % self.server.returncode)
            time.sleep(0.05)
        with open(port_file, encoding="utf-8") as f:
            self.port = int(f.read())

    def env(self, **extra):
        env = dict(os.environ)
        for k in ("KT_LLM_BASE_URL", "OPENAI_BASE_URL", "KT_LLM_API_KEY", "OPENAI_API_KEY", "KT_AGENT",
                  "KT_AGENT_ROUNDS", "KT_TUNE_ROUNDS", "KT_AGENT_REPLIES", "KT_AGENT_TOKENS", "KT_LLM_TIMEOUT", "KT_LLM_RETRIES", "KT_GPU",
                  "KT_CACHE_DIR", "KT_REMOTE_CACHE", "KT_RETUNE", "KT_REQUIRE_CACHE_HIT", "KT_TUNE_BUDGET",
                  "KT_TUNE_SECONDS", "KT_TUNE_STRATEGY", "KT_TEST_GPU_BACKEND", "KT_FAKE_GPUS"):
            env.pop(k, None)
        env.update(KT_LLM_BASE_URL="http://127.0.0.1:%d/v1" % self.port, KT_LLM_MODEL="fake-model",
                   KT_LLM_API_KEY=self.key, KT_DOC_DIR=self.args.doc_dir)
        env.update(extra)
        return env

    def run(self, argv, env):
        t0 = time.monotonic()
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        self.elapsed = time.monotonic() - t0
        self.outputs += [p.stdout, p.stderr]
        sys.stdout.write("$ %s\n%s%s(exit %d, %.1f s)\n" % (" ".join(argv), p.stdout, p.stderr, p.returncode,
                                                          self.elapsed))
        return p

    def refactor(self, *extra, env=None, compile=False):
        argv = [self.args.kt, "refactor", SOURCE, "--kernel", "rmsnorm", "--shape", SHAPE, "-o", self.out,
                "--gpu", "NVIDIA H200", "--no-gpu"] + list(extra)
        if compile:
            argv += ["--nvcc", self.args.nvcc, "--samples", "1"]
        else:
            argv += ["--no-compile"]
        return self.run(argv, env or self.env())

    def plan(self, summary="shape rows=4096,hidden=4096: 20 evaluated\nfastest: BLOCK=1024,VEC=8 at 10 us\n"):
        path = os.path.join(self.work, "summary.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write(summary)
        self.plan_transcript = os.path.join(self.work, "plan.transcript.json")
        return self.run([self.args.plan_driver, GOOD, path, self.plan_transcript, "NVIDIA H200", SHAPE], self.env())

    def generate(self, template, name, shape, nvcc, env, *extra):
        """Stage 2: `kt generate` tunes the shape (a miss) into the case's own cache; returns its key."""
        self.generated += 1
        out = os.path.join(self.work, "generated", "%s-%d" % (name, self.generated))
        env = dict(env, KT_CACHE_DIR=self.cache)
        p = self.run([self.args.kt, "generate", "--template", template, "--name", name, "--out", out, "--shape",
                      shape, "--nvcc", nvcc, "--cache-dir", self.cache] + list(extra), env)
        check(p.returncode == 0, "kt generate succeeded")
        with open(os.path.join(out, "kt_%s.json" % name), encoding="utf-8") as f:
            (got,) = json.load(f)["shapes"]
        check(got["origin"] == "tuned", "kt generate tuned the shape (a miss): %s" % got["origin"])
        return got["key"]

    def show(self, key):
        """`kt cache show KEY`: the record (stdout) and the account of its history (stderr)."""
        p = self.run([self.args.kt, "cache", "show", key, "--cache-dir", self.cache], self.env())
        check(p.returncode == 0, "kt cache show found the record")
        return json.loads(p.stdout), p.stderr

    def requests(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log, encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    def transcript(self):
        with open(self.out + ".transcript.json", encoding="utf-8") as f:
            return json.load(f)

    def finish(self):
        if self.server:
            self.server.terminate()
            self.server.wait(timeout=10)
        # The key: sent to the server (so the test means something), and nowhere else.
        reqs = self.requests()
        check(all(r["auth"] == "match" for r in reqs), "every request carried the key as a bearer token")
        for text in self.outputs:
            check(self.key not in text, "the key does not appear in kt's output")
        for dirpath, _, files in os.walk(self.work):
            for name in files:
                with open(os.path.join(dirpath, name), "rb") as f:
                    check(self.key.encode() not in f.read(), "the key does not appear in %s" % name)


def last_user(req):
    return [m for m in req["body"]["messages"] if m["role"] == "user"][-1]["content"]


def rejected_block(stderr, round_no):
    """The problem kt printed for a rejected round (what it sent back to the model)."""
    head = "kt refactor: round %d: rejected:\n" % round_no
    check(head in stderr, "kt reported round %d as rejected" % round_no)
    rest = stderr.split(head, 1)[1]
    return rest.split("\nkt refactor: ", 1)[0].strip("\n")


def expect_accepted(r, p, nreq):
    check(p.returncode == 0, "kt refactor succeeded")
    with open(r.out, encoding="utf-8") as f:
        first = f.readline()
    check(first.startswith("// kt: NOT VERIFIED on a GPU"), "the template's first line marks it not verified")
    check("NOT VERIFIED on a GPU" in p.stderr, "the command says the result is not verified")
    check(len(r.requests()) == nreq, "%d requests were made" % nreq)
    t = r.transcript()
    check(t["result"] == "accepted", "the transcript records the result")
    check(t["usage"]["requests"] == nreq, "the transcript counts the requests")
    check("tokens: " in p.stderr and " in %d request" % nreq in p.stderr, "token usage is reported")
    # The written template is a template kt accepts.
    c = subprocess.run([r.args.kt, "check", r.out, "--shape", SHAPE], capture_output=True, text=True)
    r.outputs += [c.stdout, c.stderr]
    check(c.returncode == 0, "kt check accepts the written template:\n" + c.stdout + c.stderr)


def check_both_stages(r, key, template):
    """The record of key holds stage 1 (the template's first line and its whole transcript) before
    stage 2 (the rounds), and `kt cache show` prints an account of both, in that order: the first
    line, each round of the refactoring with its outcome, the tokens, then each tuning round."""
    rec, err = r.show(key)
    with open(template, encoding="utf-8") as f:
        first = f.readline().rstrip("\n")
    with open(template + ".transcript.json", encoding="utf-8") as f:
        transcript = json.load(f)
    refactor = rec.get("refactor")
    check(isinstance(refactor, dict) and refactor.get("provenance") == first[len("// "):],
          "the record holds the template's first line: %s" % (refactor or {}).get("provenance"))
    check(refactor.get("transcript") == transcript and "note" not in refactor,
          "the record holds the transcript, whole: %s" % refactor.get("note"))
    fields = list(rec)
    check("rounds" in rec and fields.index("refactor") < fields.index("rounds"),
          "stage 1 comes before stage 2 in the record: %s" % fields)
    s1 = err.find("stage 1, kt refactor: %s\n" % first[len("// "):])
    s2 = err.find("stage 2, tuning rounds: best round %d\n" % rec["rounds"]["best_round"])
    check(0 <= s1 < s2, "kt cache show prints stage 1, then stage 2:\n" + err)
    stage1, stage2 = err[s1:s2], err[s2:]
    outcomes = [(int(n), o) for n, o in re.findall(r"^  round (\d+): ([\w-]+)", stage1, re.M)]
    check(outcomes == [(x["round"], x["outcome"]) for x in transcript["rounds"]],
          "kt cache show prints each refactoring round's outcome: %s" % outcomes)
    u = transcript["usage"]
    tokens = "  tokens: %d prompt + %d completion = %d in %d request%s\n" % (
        u["prompt_tokens"], u["completion_tokens"], u["total_tokens"], u["requests"], "" if u["requests"] == 1 else "s")
    check(tokens in stage1, "kt cache show prints the refactoring's tokens: " + tokens)
    tuned = re.findall(r"^  round (\d+): (\d+) evaluated", stage2, re.M)
    check(tuned == [(str(x["round"]), str(x["evaluated"])) for x in rec["rounds"]["rounds"]],
          "kt cache show prints each tuning round: %s" % tuned)
    return rec, err


# ---- the cases ---------------------------------------------------------------------------

def case_good(r):
    r.serve([reply("rmsnorm_good.cu.tmpl")])
    p = r.refactor()
    expect_accepted(r, p, 1)
    first = r.requests()[0]["body"]["messages"]
    check(first[0]["role"] == "system" and "template" in first[0]["content"], "a system prompt comes first")
    with open(SOURCE, encoding="utf-8") as f:
        check(f.read() in first[1]["content"], "the prompt holds the kernel's source")
    check("NVIDIA H200" in first[1]["content"] and "1024" in first[1]["content"], "the prompt holds GPU facts")
    with open(os.path.join(r.args.doc_dir, "template-language.md"), encoding="utf-8") as f:
        check(f.read()[:2000] in first[0]["content"], "the prompt holds the template-language reference")


def case_fix_parse(r):
    r.serve([reply("rmsnorm_parse_error.cu.tmpl"), reply("rmsnorm_good.cu.tmpl")])
    # What the parser says about the broken template at the output's path, via kt check.
    os.makedirs(os.path.dirname(r.out), exist_ok=True)
    shutil.copy(os.path.join(HERE, "replies", "rmsnorm_parse_error.cu.tmpl"), r.out)
    c = subprocess.run([r.args.kt, "check", r.out], capture_output=True, text=True)
    os.unlink(r.out)
    diag = "\n".join(l for l in c.stderr.splitlines() if not l.startswith("kt check:"))
    check("error:" in diag, "kt check reports the broken template")
    p = r.refactor()
    expect_accepted(r, p, 2)
    second = last_user(r.requests()[1])
    check(diag in second, "the second request holds the parser's exact diagnostics:\n" + diag)
    check(rejected_block(p.stderr, 1) in second, "the second request holds what kt reported")
    t = r.transcript()
    check([x["outcome"] for x in t["rounds"]] == ["rejected", "accepted"], "the transcript has both rounds")


def case_fix_compile(r):
    if not r.args.nvcc or not shutil.which(r.args.nvcc):
        print("skipped: no nvcc (configure with CUDA to run the compile-error case)")
        return SKIP
    r.serve([reply("rmsnorm_compile_error.cu.tmpl"), reply("rmsnorm_good.cu.tmpl")])
    p = r.refactor(compile=True)
    expect_accepted(r, p, 2)
    problem = rejected_block(p.stderr, 1)
    second = last_user(r.requests()[1])
    check("does not compile" in problem and "row_scale" in problem, "kt reports nvcc's error")
    check(problem in second, "the second request holds nvcc's exact error")
    check(r.out in problem, "nvcc's messages name the template, not a temporary file")
    with open(r.out, encoding="utf-8") as f:
        check("2 configurations compiled for sm_90" in f.readline(), "the mark says what was compiled")


def case_malformed(r):
    r.serve([{"body": "{\"choices\": [ {\"message\": "}, reply("rmsnorm_good.cu.tmpl")])
    p = r.refactor()
    expect_accepted(r, p, 2)
    t = r.transcript()
    check(t["rounds"][0]["outcome"] == "llm-error" and "not valid JSON" in t["rounds"][0]["detail"],
          "the malformed answer is recorded with its reason")
    check("not valid JSON" in p.stderr, "the malformed answer is reported")


def case_malformed_always(r):
    r.serve([{"body": "not json"}, {"body": "{}"}])
    p = r.refactor("--rounds", "2")
    check(p.returncode == 1, "kt refactor fails cleanly")
    check("no acceptable template after 2 rounds" in p.stderr, "it says why")
    check(not os.path.exists(r.out), "no template is written")
    check(r.transcript()["result"] == "failed", "the transcript records the failure")


def case_rate_limit(r):
    r.serve([{"status": 429, "headers": {"Retry-After": "2"}}, reply("rmsnorm_good.cu.tmpl")])
    p = r.refactor()
    expect_accepted(r, p, 2)
    reqs = r.requests()
    gap = reqs[1]["time"] - reqs[0]["time"]
    check(gap >= 1.9, "the client waited Retry-After (2 s) before retrying (waited %.2f s)" % gap)
    # what it meant to wait, in its own words (the gap has the load of the machine in it as well)
    check("1 retry" in p.stderr and "2.0 s waited" in p.stderr, "the retry and the wait are reported")


def case_server_error(r):
    r.serve([{"status": 500}, reply("rmsnorm_good.cu.tmpl")])
    p = r.refactor()
    expect_accepted(r, p, 2)
    reqs = r.requests()
    check(reqs[1]["time"] - reqs[0]["time"] >= 0.9, "the client backed off before retrying")


def case_refused(r):
    r.serve([{"status": 401}])
    p = r.refactor()
    check(p.returncode == 1 and "HTTP 401" in p.stderr, "a 401 ends the command with the status")
    check(len(r.requests()) == 1, "a 401 is not retried")


def case_timeout(r):
    # The answers come after a minute: a client that waited for one would succeed.
    r.serve([{"delay": 60, **reply("rmsnorm_good.cu.tmpl")}, {"delay": 60, **reply("rmsnorm_good.cu.tmpl")}])
    p = r.refactor(env=r.env(KT_LLM_TIMEOUT="1", KT_LLM_RETRIES="1", KT_LLM_MAX_WAIT="5"))
    check(p.returncode == 1, "kt refactor fails")
    check("no answer within 1.0 s" in p.stderr, "it says the server was too slow")
    reqs = r.requests()
    check(len(reqs) == 2, "it gave up after two attempts (one retry), not %d" % len(reqs))
    check(reqs[1]["time"] - reqs[0]["time"] >= 1.0, "the retry came after the first attempt timed out")
    check(not os.path.exists(r.out), "no template is written")
    check(r.transcript()["rounds"][0]["outcome"] == "llm-error", "the transcript records the failure")


def case_token_budget(r):
    r.serve([{"usage": {"prompt_tokens": 900, "completion_tokens": 200}, **reply("rmsnorm_parse_error.cu.tmpl")}])
    p = r.refactor(env=r.env(KT_AGENT_TOKENS="1000"))
    check(p.returncode == 1 and "token budget of 1000 is spent" in p.stderr, "the token budget ends the loop")
    check(len(r.requests()) == 1, "no request after the budget is spent")


def case_agent_off(r):
    r.serve([])
    p = r.refactor(env=r.env(KT_AGENT="off"))
    check(p.returncode == 1 and "KT_AGENT=off" in p.stderr, "KT_AGENT=off refuses to call the model")
    check(not r.requests(), "no request was made")


def case_plan_outside_space(r):
    r.serve([proposals(
        {"kind": "set_values", "param": "UNROLL", "values": [1, 2, 4], "reason": "unroll more"},
        {"kind": "set_values", "param": "BLOCK", "values": ["big"], "reason": "bigger"},
        {"kind": "set_values", "param": "VEC", "values": [4, 8, 16], "reason": "wider loads"},
        {"kind": "launch_missiles", "reason": "?"},
        {"kind": "add_constraint", "expr": "VEC >= 2\n// @kt param EVIL in 1", "reason": "inject"})])
    p = r.plan()
    check(p.returncode == 0, "the plan came back")
    lines = p.stdout.splitlines()
    check(any(l.startswith("rejected set_values UNROLL") and "outside the declared space" in l for l in lines),
          "an undeclared parameter is rejected as outside the declared space")
    check(any(l.startswith("rejected set_values BLOCK") and "outside the declared space" in l for l in lines),
          "a non-integer value is rejected as outside the declared space")
    check(any(l.startswith("accepted set_values VEC") for l in lines), "a valid proposal is accepted")
    check(any(l.startswith("rejected") and "unknown kind 'launch_missiles'" in l for l in lines),
          "an off-schema proposal is rejected")
    check(any(l.startswith("rejected add_constraint") and "one non-empty line" in l for l in lines),
          "a multi-line constraint (an injection) is rejected")
    check("planner proposals: 3" in p.stdout, "the accepted one becomes planner proposals (extend 16, forbid 1, 2)")
    with open(r.plan_transcript, encoding="utf-8") as f:
        t = json.load(f)
    check([x["outcome"] for x in t["proposals"]] == ["rejected", "rejected", "accepted", "rejected", "rejected"],
          "the transcript keeps every proposal and what came of it")


def case_plan_device_limits(r):
    r.serve([proposals(
        {"kind": "set_values", "param": "BLOCK", "values": [256, 512, 1024, 2048], "reason": "more threads"},
        {"kind": "add_constraint", "expr": "BLOCK >= 4096", "reason": "huge blocks"},
        {"kind": "add_constraint", "expr": "VEC >= 2", "reason": "vector loads win"})])
    p = r.plan()
    check(p.returncode == 0, "the plan came back")
    lines = p.stdout.splitlines()
    check(any(l.startswith("rejected set_values BLOCK") and "2048 threads per block; the device allows 1024" in l
              for l in lines), "BLOCK=2048 is rejected with the device's limit")
    check(any(l.startswith("rejected add_constraint BLOCK >= 4096") and "leaves no configuration" in l
              for l in lines), "a constraint that empties the space is rejected")
    check(any(l.startswith("accepted add_constraint VEC >= 2") for l in lines), "a valid constraint is accepted")


def case_plan_malformed(r):
    r.serve([{"content": "I think BLOCK should be bigger!"}, proposals()])
    p = r.plan()
    check(p.returncode == 0, "the second answer is used")
    reqs = r.requests()
    check(len(reqs) == 2 and "not valid JSON" in last_user(reqs[1]), "the parse error went back to the model")
    check("planner proposals: 0" in p.stdout, "an empty plan changes nothing")


def case_record(r):
    """Both stages in one record, without a GPU: kt refactor (a reply without a template, then a
    good one) writes a template marked NOT VERIFIED and its transcript; kt generate tunes it on the
    fake GPU in two rounds of the built-in planner; the record and kt cache show hold both stages.
    The same template without its first line (a transcript beside it or not) has no stage 1."""
    usage = {"usage": {"prompt_tokens": 900, "completion_tokens": 200}}
    r.serve([{"content": "I would rather explain it in words.", **usage},
             {"content_file": SCALE_REPLY, "fence": "cuda", **usage}])
    r.out = os.path.join(r.work, "out", "scale.cu.tmpl")
    p = r.run([r.args.kt, "refactor", SCALE_SOURCE, "--kernel", "scale", "--shape", "n=4096", "-o", r.out,
               "--gpu", "NVIDIA H200", "--no-gpu", "--no-compile"], r.env())
    check(p.returncode == 0, "kt refactor succeeded")
    check([x["outcome"] for x in r.transcript()["rounds"]] == ["rejected", "accepted"],
          "the transcript has a rejected round and an accepted one")
    nvcc = FAKE_NVCC  # answers --version like nvcc (the compiler is a key field)
    # The API key stays in the environment of kt generate: it must not reach the record.
    env = r.env(KT_TEST_GPU_BACKEND="fake", KT_FAKE_GPUS="1", KT_AGENT="builtin", KT_TUNE_ROUNDS="2")
    key = r.generate(r.out, "scale", "n=4096", nvcc, env, "--budget", "12", "--seconds", "60", "--quiet")
    rec, err = check_both_stages(r, key, r.out)
    check(rec["refactor"]["verified"] is False and rec["refactor"]["provenance"].startswith("kt: NOT VERIFIED"),
          "the record says the template was not verified")
    check("  tokens: 1800 prompt + 400 completion = 2200 in 2 requests\n" in err,
          "kt cache show prints the tokens of both requests")
    check(len(rec["rounds"]["rounds"]) == 2, "two tuning rounds: %s" % rec["rounds"])
    # A plain template: the same text without the first line, with a transcript beside it.
    plain = os.path.join(r.work, "plain", "scale.cu.tmpl")
    os.makedirs(os.path.dirname(plain))
    shutil.copy(SCALE_REPLY, plain)
    shutil.copy(r.out + ".transcript.json", plain + ".transcript.json")
    key = r.generate(plain, "scale", "n=4096", nvcc, env, "--budget", "12", "--seconds", "60", "--quiet")
    rec, err = r.show(key)
    check("refactor" not in rec and "rounds" in rec, "a plain template's record has no stage 1: %s" % list(rec))
    check("stage 1" not in err and "stage 2, tuning rounds: " in err, "kt cache show prints stage 2 alone:\n" + err)


def case_gpu_verify(r):
    """Label gpu: a template with a wrong result is caught against the original kernel on the GPU
    and sent back; the fixed one is verified and its first line says so; kt generate tunes it in
    rounds, and its record and kt cache show hold both stages."""
    smi = shutil.which("nvidia-smi")
    gpus = subprocess.run([smi, "-L"], capture_output=True, text=True).stdout if smi else ""
    if "GPU 0" not in gpus:
        print("skipped: no GPU here (nvidia-smi -L lists none)")
        return SKIP
    if not r.args.nvcc or not shutil.which(r.args.nvcc):
        print("skipped: no nvcc")
        return SKIP
    r.serve([reply("rmsnorm_wrong_result.cu.tmpl"), reply("rmsnorm_good.cu.tmpl")])
    p = r.run([r.args.kt, "refactor", SOURCE, "--kernel", "rmsnorm", "--shape", SHAPE, "--shape",
               "rows=7,hidden=1024", "-o", r.out, "--nvcc", r.args.nvcc, "--samples", "2"], r.env())
    check(p.returncode == 0, "kt refactor succeeded")
    problem = rejected_block(p.stderr, 1)
    check("check-failed" in problem, "the wrong template failed its check against the original kernel")
    check(problem in last_user(r.requests()[1]), "the failure went back to the model")
    with open(r.out, encoding="utf-8") as f:
        first = f.readline()
    check(first.startswith("// kt: verified on ") and "against the original kernel rmsnorm" in first,
          "the template's first line says it was verified")
    t = r.transcript()
    check(t["verified"] > 0 and [x["outcome"] for x in t["rounds"]] == ["rejected", "accepted"],
          "the transcript records the verification")
    # Stage 2 through kt generate, as a build runs it: the refactored template tunes on a miss like
    # any template, against its reference, in two rounds of the built-in planner (a small budget).
    env = r.env(KT_AGENT="builtin", KT_TUNE_ROUNDS="2")
    key = r.generate(r.out, "rmsnorm", SHAPE, r.args.nvcc, env, "--budget", "8", "--seconds", "15", "--quiet")
    rec, _ = check_both_stages(r, key, r.out)
    check(rec["refactor"]["verified"] is True and rec["refactor"]["provenance"].startswith("kt: verified on "),
          "the record says the template was verified")
    check(1 <= len(rec["rounds"]["rounds"]) <= 2 and rec["rounds"]["rounds"][0]["ok"] > 0,
          "the rounds tuned the template: %s" % rec["rounds"]["rounds"][0])


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--kt", required=True)
    ap.add_argument("--plan-driver", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--nvcc", default="")
    ap.add_argument("--doc-dir", default=os.path.join(ROOT, "docs"), help="where template-language.md is")
    args = ap.parse_args()
    r = Run(args, args.case)
    try:
        rc = CASES[args.case](r)
        r.finish()
    except Failed as e:
        print("FAIL: %s" % e)
        return 1
    finally:
        if r.server and r.server.poll() is None:
            r.server.terminate()
            r.server.wait(timeout=10)
    if rc == SKIP:
        return SKIP
    print("PASS: %s" % args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
