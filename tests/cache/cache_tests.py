#!/usr/bin/env python3
"""End-to-end tests of kt's tuning cache (ctest label `cache`).

Each case runs the real `kt` and `cache_driver` (which stores configurations as the tuner would)
against temporary cache directories and real HTTP servers on 127.0.0.1:

  remote_nginx     nginx with WebDAV: a store PUTs the record, an empty user cache GETs it back
  remote_down      nothing listens: one warning, generation goes on
  remote_hang      the server accepts and never answers: one warning after the timeout
  remote_500       every request answers 500
  remote_garbage   200 with a body that is not a record; and bytes that are not HTTP
  concurrency      many processes storing and reading the same and different keys, then verify
  sigkill          a writer killed between write and rename leaves no visible record
  ci_flow          a committed record for "NVIDIA H200" makes --gpu ... --require-hit succeed
  tools            kt cache stats/ls/show/explain/verify/gc/promote
  promote_replaces a record of the template's new version replaces the old one's in cache/
  other_version    a miss not tuned takes the choice of the template's other version, else the defaults
  remote_other_version  the same from the remote: each store also keeps the record as its problem's latest
  push             kt cache push: cache/ uploaded to the remote, as a store would; a later record kept

usage: cache_tests.py --kt KT --driver DRIVER [--nginx NGINX] CASE
Exit status 77 means the case was skipped (it says why); ctest maps it to "skipped".
Python standard library only.
"""
import argparse
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TEMPLATE = os.path.join(HERE, "scale.cu.tmpl")
SKIP = 77
SHAPES = ["n=4096", "n=8192", "n=65536"]
FAKE_NVCC = """#!/bin/sh
echo 'nvcc: NVIDIA (R) Cuda compiler driver'
echo 'Cuda compilation tools, release 13.0, V13.0.88'
echo 'Build cuda_13.0.r13.0/compiler.36424714_0'
"""


class Skip(Exception):
    pass


class Env:
    """A temporary world: a user cache, a project cache, a fake nvcc, and the tools."""

    def __init__(self, args):
        self.kt = args.kt
        self.driver = args.driver
        self.nginx = args.nginx
        self.root = tempfile.mkdtemp(prefix="kt-cache-test-")
        self.user = os.path.join(self.root, "user")
        self.project = os.path.join(self.root, "project")
        self.nvcc = os.path.join(self.root, "bin", "nvcc")
        os.makedirs(os.path.dirname(self.nvcc))
        with open(self.nvcc, "w") as f:
            f.write(FAKE_NVCC)
        os.chmod(self.nvcc, 0o755)
        self.base_env = dict(os.environ)
        for var in ("KT_CACHE_DIR", "KT_REMOTE_CACHE", "KT_GPU", "KT_RETUNE", "KT_REQUIRE_CACHE_HIT",
                    "KT_PROJECT_CACHE", "KT_TEST_STORE_PAUSE_MS", "XDG_CACHE_HOME"):
            self.base_env.pop(var, None)
        self.base_env.update(KT_CACHE_DIR=self.user, KT_DRIVER_NVCC=self.nvcc, KT_DRIVER_ARCH="90",
                             KT_DRIVER_FLAGS="-O3", HOME=self.root)

    def env(self, **extra):
        e = dict(self.base_env)
        for k, v in extra.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        return e

    def run(self, argv, env=None, timeout=60, check=None):
        p = subprocess.run(argv, env=env or self.env(), capture_output=True, text=True, timeout=timeout)
        if check is not None and p.returncode != check:
            raise AssertionError("%s exited %d, expected %d\nstdout:\n%s\nstderr:\n%s"
                                 % (" ".join(argv), p.returncode, check, p.stdout, p.stderr))
        return p

    def drive(self, verb, shape, config=None, env=None, check=0, template=TEMPLATE):
        argv = [self.driver, verb, template, shape] + ([config] if config else [])
        return self.run(argv, env=env, check=check)

    def generate(self, out, shapes=SHAPES, extra=(), env=None, check=0, timeout=60, template=TEMPLATE):
        argv = [self.kt, "generate", "--template", template, "--name", "scale", "--out", out,
                "--nvcc", self.nvcc, "--arch", "90", "--flags", "-O3"]
        for s in shapes:
            argv += ["--shape", s]
        return self.run(argv + list(extra), env=env, timeout=timeout, check=check)

    def cleanup(self):
        shutil.rmtree(self.root, ignore_errors=True)


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def warnings_in(stderr):
    return [line for line in stderr.splitlines() if "warning:" in line]


def manifest(out_dir):
    """The generated manifest (kt_<name>.json) as {shape text: (config text, origin)}."""
    with open(os.path.join(out_dir, "kt_scale.json")) as f:
        m = json.load(f)
    out = {}
    for s in m["shapes"]:
        shape = ",".join("%s=%s" % kv for kv in s["shape"].items())
        cfg = ",".join("%s=%s" % (k, str(v).lower() if isinstance(v, bool) else v) for k, v in s["config"].items())
        out[shape] = (cfg, s["origin"])
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def record_files(d):
    out = []
    for root, _, files in os.walk(os.path.join(d, "v1")):
        out += [os.path.join(root, f) for f in files if f.endswith(".json") and f != "stats.json"]
    return sorted(out)


# ---- servers ------------------------------------------------------------------------------


class Nginx:
    """nginx with WebDAV PUT on 127.0.0.1, as the current user, with a temporary prefix."""

    def __init__(self, exe, root):
        if not exe or not os.path.exists(exe):
            raise Skip("nginx not found (install nginx-light for the remote-cache tests)")
        self.prefix = os.path.join(root, "nginx")
        self.docs = os.path.join(self.prefix, "root")
        os.makedirs(self.docs)
        for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.makedirs(os.path.join(self.prefix, d))
        last = ""
        for _ in range(5):
            self.port = free_port()
            conf = os.path.join(self.prefix, "nginx.conf")
            with open(conf, "w") as f:
                f.write(self.config())
            self.proc = subprocess.Popen([exe, "-p", self.prefix, "-c", conf, "-e", os.path.join(self.prefix, "error.log")],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if self.wait_ready():
                return
            self.proc.kill()
            last = self.proc.stderr.read().decode(errors="replace")
        raise AssertionError("nginx did not start: " + last)

    def config(self):
        user = "user root;\n" if os.geteuid() == 0 else ""
        p = self.prefix
        return f"""{user}daemon off;
master_process off;
worker_processes 1;
pid {p}/nginx.pid;
events {{ worker_connections 128; }}
http {{
    access_log {p}/access.log;
    client_body_temp_path {p}/body;
    proxy_temp_path {p}/proxy;
    fastcgi_temp_path {p}/fastcgi;
    uwsgi_temp_path {p}/uwsgi;
    scgi_temp_path {p}/scgi;
    server {{
        listen 127.0.0.1:{self.port};
        root {self.docs};
        client_max_body_size 16m;
        location / {{
            dav_methods PUT DELETE;
            create_full_put_path on;
            dav_access user:rw group:r all:r;
        }}
    }}
}}
"""

    def wait_ready(self):
        """True once nginx accepts a connection, False when it exited (its port was taken)."""
        while self.proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", self.port)):
                    return True
            except OSError:
                time.sleep(0.05)
        return False

    def url(self):
        return "http://127.0.0.1:%d/kt" % self.port

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Misbehaving:
    """A server on 127.0.0.1 that misbehaves in one way: 'hang', '500', 'garbage' (200 with a
    body that is not a record) or 'nothttp' (bytes that are not an HTTP response).  count() says
    how many requests it had."""

    def __init__(self, mode):
        self.mode = mode
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.held = []
        self.requests = 0
        self.marker = None
        self.settled = threading.Event()
        self.stopping = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stopping:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            if peer[1] == self.marker:
                conn.close()
                self.settled.set()
                continue
            self.requests += 1
            if self.mode == "hang":
                self.held.append(conn)  # read nothing, answer nothing, keep it open
                continue
            try:
                conn.recv(65536)  # the request (or b"" from a client that gave up)
                if self.mode == "500":
                    body = b"internal error"
                    conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                                 % (len(body), body))
                elif self.mode == "garbage":
                    body = b"<html><body>It works!</body></html>\x00\xff{{{"
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
                else:
                    conn.sendall(b"\x16\x03\x01garbage that is not HTTP at all\r\n\r\n")
            except OSError:
                pass
            finally:
                conn.close()

    def count(self):
        """The requests so far, also those the kernel queued that serve() has not accepted yet (a
        client that timed out may have left before): a marker connection, queued after them, is
        accepted after them."""
        with socket.socket() as m:
            m.bind(("127.0.0.1", 0))
            self.marker = m.getsockname()[1]
            self.settled.clear()
            m.connect(("127.0.0.1", self.port))
            self.settled.wait()
        return self.requests

    def url(self):
        return "http://127.0.0.1:%d/kt" % self.port

    def stop(self):
        self.stopping = True
        self.sock.close()
        for c in self.held:
            c.close()


# ---- cases --------------------------------------------------------------------------------


def case_remote_nginx(w):
    srv = Nginx(w.nginx, w.root)
    try:
        env = w.env(KT_REMOTE_CACHE=srv.url())
        out = w.drive("store", "n=4096", "BLOCK=256,VEC=4,LOOP=strided", env=env).stdout.split()
        key = out[1]
        on_server = os.path.join(srv.docs, "kt", "v1", key + ".json")
        check(os.path.exists(on_server), "the PUT did not reach nginx: " + on_server)
        with open(on_server) as f:
            check(json.load(f)["key"] == key, "the uploaded record is not the record of " + key)
        with open(os.path.join(srv.docs, "kt", "v1", "gpu", "NVIDIA H200.json")) as f:
            check(json.load(f)["gpu"]["sms"] == 132, "the GPU identity was not uploaded")
        # A fresh user cache (another machine) gets it from the remote and copies it up.
        other = os.path.join(w.root, "other-user")
        env2 = w.env(KT_REMOTE_CACHE=srv.url(), KT_CACHE_DIR=other)
        p = w.drive("lookup", "n=4096", env=env2)
        check(p.stdout.strip() == "hit remote BLOCK=256,VEC=4,LOOP=strided", "remote lookup: " + p.stdout + p.stderr)
        check(not warnings_in(p.stderr), "unexpected warnings: " + p.stderr)
        check(len(record_files(other)) == 1, "the remote hit was not copied into the user cache")
        p = w.drive("lookup", "n=4096", env=env2)
        check(p.stdout.strip() == "hit user BLOCK=256,VEC=4,LOOP=strided", "second lookup: " + p.stdout)
        # A key the remote does not have is a quiet miss (404 is an answer, not a failure).
        p = w.drive("lookup", "n=128", env=env2)
        check(p.stdout.strip() == "miss" and not warnings_in(p.stderr), "absent key: " + p.stdout + p.stderr)
        # kt generate through the remote: the configuration is the stored one.
        third = os.path.join(w.root, "third-user")
        out_dir = os.path.join(w.root, "gen-remote")
        p = w.generate(out_dir, shapes=["n=4096"], extra=["--gpu", "NVIDIA H200"],
                       env=w.env(KT_REMOTE_CACHE=srv.url(), KT_CACHE_DIR=third))
        check(not warnings_in(p.stderr), "generate warned: " + p.stderr)
        got = manifest(out_dir)
        check(got == {"n=4096": ("BLOCK=256,VEC=4,LOOP=strided", "cache:remote")}, "manifest: %s" % got)
        # kt cache show finds it on the remote.
        p = w.run([w.kt, "cache", "show", key, "--cache-dir", os.path.join(w.root, "empty"), "--remote", srv.url()], check=0)
        check("remote: " in p.stderr and json.loads(p.stdout)["key"] == key, "show via remote: " + p.stderr)
    finally:
        srv.stop()


def misbehaving_case(w, url, label, srv=None, put_fails=True):
    """The common shape of the failing-remote cases: lookups and generation go on, one warning.
    With the server srv, each request it had is counted: a request to a failing remote is one wait
    (up to the remote's timeout), so the count, not the time taken, says that kt stopped asking."""
    # One lookup: a miss with one warning.
    env = w.env(KT_REMOTE_CACHE=url)
    p = w.drive("lookup", "n=4096", env=env)
    check(p.stdout.strip() == "miss", label + ": lookup: " + p.stdout + p.stderr)
    check(len(warnings_in(p.stderr)) == 1, label + ": expected one warning, got: " + p.stderr)
    check(srv is None or srv.count() == 1, "%s: the lookup asked %s times" % (label, srv and srv.requests))
    # Generation with three shapes: success, one warning (the remote is switched off after it).
    out_dir = os.path.join(w.root, "gen-" + label)
    p = w.generate(out_dir, extra=["--gpu", "NVIDIA H200"], env=env)
    warns = [x for x in warnings_in(p.stderr) if "remote cache" in x]
    check(len(warns) == 1, label + ": generate should warn once about the remote, got: " + p.stderr)
    check(all(origin == "default" for _, origin in manifest(out_dir).values()), label + ": not the defaults")
    check(srv is None or srv.count() == 2, "%s: generate asked %s times, not once for its three shapes"
          % (label, srv and srv.requests - 1))
    # A local hit does not touch the remote at all.
    w.drive("store", "n=4096", "BLOCK=64,VEC=1,LOOP=flat", env=w.env())
    p = w.drive("lookup", "n=4096", env=env)
    check(p.stdout.strip() == "hit user BLOCK=64,VEC=1,LOOP=flat" and not warnings_in(p.stderr),
          label + ": local hit: " + p.stdout + p.stderr)
    # A store to a failing remote still stores locally, with one warning.  (A server that
    # answers 200 to anything takes the PUT: that is no failure kt can see.)
    p = w.drive("store", "n=8192", "BLOCK=64,VEC=2,LOOP=flat", env=env)
    check(len(warnings_in(p.stderr)) == int(put_fails), label + ": store: " + p.stderr)
    p = w.drive("lookup", "n=8192", env=w.env())
    check(p.stdout.startswith("hit user"), label + ": the local store was lost")


def case_remote_down(w):
    misbehaving_case(w, "http://127.0.0.1:%d/kt" % free_port(), "down")


def case_remote_hang(w):
    srv = Misbehaving("hang")
    try:
        # the 3 s total timeout, once for the lookup, once for generate, once for the store
        misbehaving_case(w, srv.url(), "hang", srv)
        check(srv.count() == 3, "hang: %d requests, not 3" % srv.requests)
    finally:
        srv.stop()


def case_remote_500(w):
    srv = Misbehaving("500")
    try:
        misbehaving_case(w, srv.url(), "500", srv)
        check(srv.count() == 3, "500: %d requests, not 3" % srv.requests)
    finally:
        srv.stop()


def case_remote_garbage(w):
    for mode in ("garbage", "nothttp"):
        srv = Misbehaving(mode)
        try:
            misbehaving_case(w, srv.url(), mode, srv, put_fails=mode != "garbage")
            # a PUT that succeeds is followed by the problem's latest and the GPU's identity
            want = 3 if mode != "garbage" else 5
            check(srv.count() == want, "%s: %d requests, not %d" % (mode, srv.requests, want))
        finally:
            srv.stop()
        shutil.rmtree(w.user, ignore_errors=True)


WORKER = r"""
import os, subprocess, sys
driver, template, i, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
configs = ["BLOCK=64,VEC=1,LOOP=flat", "BLOCK=128,VEC=2,LOOP=strided", "BLOCK=256,VEC=4,LOOP=flat", "BLOCK=512,VEC=1,LOOP=strided"]
bad = 0
for r in range(rounds):
    for shape, cfg in (("n=4096", configs[(i + r) % 4]), ("n=%d" % (4 * (1000 + i)), configs[i % 4])):
        p = subprocess.run([driver, "store", template, shape, cfg], capture_output=True, text=True)
        q = subprocess.run([driver, "lookup", template, shape], capture_output=True, text=True)
        if p.returncode or q.returncode or "warning" in p.stderr + q.stderr or not q.stdout.startswith("hit user"):
            bad += 1
            sys.stderr.write("worker %d: %s %s %s %s\n" % (i, p.stdout, p.stderr, q.stdout, q.stderr))
sys.exit(1 if bad else 0)
"""


def case_concurrency(w):
    procs, rounds = 12, 6
    worker = os.path.join(w.root, "worker.py")
    with open(worker, "w") as f:
        f.write(WORKER)
    ps = [subprocess.Popen([sys.executable, worker, w.driver, TEMPLATE, str(i), str(rounds)], env=w.env(),
                           stderr=subprocess.PIPE, text=True) for i in range(procs)]
    errs = [(p.wait(timeout=300), p.stderr.read()) for p in ps]
    for rc, err in errs:
        check(rc == 0, "a worker saw a failed store or lookup:\n" + err)
    p = w.run([w.kt, "cache", "verify"], check=0)
    check(p.stdout.strip().endswith("%d records, 0 bad" % (procs + 1)), "verify: " + p.stdout)
    leftovers = [f for r, _, fs in os.walk(w.user) for f in fs if ".tmp." in f]
    check(not leftovers, "temporary files left behind: %s" % leftovers)
    with open(os.path.join(w.user, "v1", "stats.json")) as f:
        stats = json.load(f)
    # every driver process adds its counters under a lock: none may be lost
    check(stats["stores"] == 2 * procs * rounds, "stores counted %s of %d" % (stats["stores"], 2 * procs * rounds))
    check(stats["user.hits"] == 2 * procs * rounds, "hits counted %s" % stats["user.hits"])


def case_sigkill(w):
    # A good record first; the killed writer tries to replace it and a second key.
    w.drive("store", "n=4096", "BLOCK=128,VEC=1,LOOP=flat")
    # The writer pauses for an hour between its write and its rename: it is killed in that window
    # as soon as its temporary file is there, however long that took.
    for shape in ("n=4096", "n=8192"):
        p = subprocess.Popen([w.driver, "store", TEMPLATE, shape, "BLOCK=512,VEC=4,LOOP=strided"],
                             env=w.env(KT_TEST_STORE_PAUSE_MS="3600000"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        temps = []
        while not temps and p.poll() is None:
            temps = [f for r, _, fs in os.walk(w.user) for f in fs if ".json.tmp." in f]
            time.sleep(0.02)
        if not temps:
            raise AssertionError("the writer exited (%s) without its temporary file: %s" % (p.returncode, p.stderr.read()))
        p.send_signal(signal.SIGKILL)
        p.wait()
    p = w.drive("lookup", "n=4096")
    check(p.stdout.strip() == "hit user BLOCK=128,VEC=1,LOOP=flat", "the old record was damaged: " + p.stdout + p.stderr)
    p = w.drive("lookup", "n=8192")
    check(p.stdout.strip() == "miss" and not warnings_in(p.stderr), "a partial record is visible: " + p.stdout + p.stderr)
    p = w.run([w.kt, "cache", "verify"], check=0)
    check(p.stdout.strip().endswith("1 record, 0 bad"), "verify: " + p.stdout)
    p = w.run([w.kt, "cache", "ls"], check=0)
    check(len(p.stdout.splitlines()) == 1, "ls shows a partial record: " + p.stdout)


def case_ci_flow(w):
    # A GPU machine tuned two shapes and promoted them into the project's cache/.
    tuned = {"n=4096": "BLOCK=256,VEC=4,LOOP=strided", "n=65536": "BLOCK=512,VEC=2,LOOP=flat"}
    for shape, cfg in tuned.items():
        w.drive("store", shape, cfg)
    w.run([w.kt, "cache", "promote", "--to", w.project], check=0)
    check(len(record_files(w.project)) == 2, "promote did not copy the records")
    # CI: no GPU, an empty user cache, read-only, a hit required.
    ci_user = os.path.join(w.root, "ci-user")
    env = w.env(KT_CACHE_DIR=ci_user)
    out_dir = os.path.join(w.root, "gen-ci")
    ci = ["--gpu", "NVIDIA H200", "--require-hit", "--read-only", "--project-cache", w.project]
    w.generate(out_dir, shapes=list(tuned), extra=ci, env=env)
    got = manifest(out_dir)
    check(got == {s: (c, "cache:project") for s, c in tuned.items()}, "the manifest does not use the stored configurations: %s" % got)
    check(not os.path.exists(ci_user) or not record_files(ci_user), "read-only generation wrote the user cache")
    # The same with KT_GPU and KT_REQUIRE_CACHE_HIT from the environment.
    env2 = w.env(KT_CACHE_DIR=ci_user, KT_GPU="NVIDIA H200", KT_REQUIRE_CACHE_HIT="ON")
    w.generate(os.path.join(w.root, "gen-ci-env"), shapes=list(tuned), extra=["--read-only", "--project-cache", w.project], env=env2)
    # --retune / KT_RETUNE: hits of the matching kernels are ignored (no GPU here: the defaults).
    for how, origin in ((["--retune=sc*"], "default"), (["--retune=rms*"], "cache:project"), (["--retune"], "default")):
        d = os.path.join(w.root, "gen-retune")
        w.generate(d, shapes=list(tuned), extra=["--gpu", "NVIDIA H200", "--read-only", "--project-cache", w.project] + how,
                   env=env)
        check({o for _, o in manifest(d).values()} == {origin}, "%s: %s" % (how, manifest(d)))
    d = os.path.join(w.root, "gen-retune-env")
    w.generate(d, shapes=list(tuned), extra=["--gpu", "NVIDIA H200", "--read-only", "--project-cache", w.project],
               env=w.env(KT_CACHE_DIR=ci_user, KT_RETUNE="ON"))
    check({o for _, o in manifest(d).values()} == {"default"}, "KT_RETUNE=ON: %s" % manifest(d))
    # A shape nobody tuned: an error naming every missing kernel, shape and key.
    p = w.generate(os.path.join(w.root, "gen-ci-miss"), shapes=["n=4096", "n=512", "n=1024"], extra=ci, env=env, check=1)
    for shape in ("n=512", "n=1024"):
        key = w.drive("key", shape).stdout.strip()
        check(shape in p.stderr and key in p.stderr, "the error does not name %s and %s:\n%s" % (shape, key, p.stderr))
    check("n=4096" not in p.stderr and "2 of 3 shapes" in p.stderr, "the error lists a shape that hit: " + p.stderr)
    # A GPU that no record names: an error with --require-hit, defaults with a note without it.
    p = w.generate(os.path.join(w.root, "gen-ci-b200"), shapes=["n=4096"],
                   extra=["--gpu", "NVIDIA B200", "--require-hit", "--project-cache", w.project], env=env, check=1)
    check("NVIDIA B200" in p.stderr, "no word on the unknown GPU: " + p.stderr)
    p = w.generate(os.path.join(w.root, "gen-nogpu"), shapes=list(tuned), extra=["--project-cache", w.project],
                   env=w.env(KT_CACHE_DIR=ci_user), check=0)
    check(p.stderr.count("template defaults") == 1, "expected one note about the defaults: " + p.stderr)


def case_tools(w):
    for sub in ("stats", "ls", "show", "explain", "verify", "gc", "promote"):
        p = w.run([w.kt, "cache", sub, "--help"], check=0)
        check(p.stdout.startswith("usage: kt cache " + sub), sub + " --help: " + p.stdout)
    w.run([w.kt, "cache", "--help"], check=0)
    w.run([w.kt, "cache", "nonsense"], check=1)
    key = w.drive("store", "n=4096", "BLOCK=128,VEC=2,LOOP=flat").stdout.split()[1]
    w.drive("store", "n=8192", "BLOCK=64,VEC=1,LOOP=flat")
    w.drive("lookup", "n=4096")
    # explain prints the same key and fields that the record stores.
    p = w.run([w.kt, "cache", "explain", "--template", TEMPLATE, "--shape", "n=4096", "--gpu", "NVIDIA H200",
               "--arch", "90", "--flags", "-O3", "--nvcc", w.nvcc], check=0)
    check("key=" + key in p.stdout, "explain computes another key:\n" + p.stdout)
    check("lookup: hit in the user cache: BLOCK=128,VEC=2,LOOP=flat" in p.stdout, "explain lookup:\n" + p.stdout)
    rec = json.loads(w.run([w.kt, "cache", "show", key], check=0).stdout)
    for line in p.stdout.splitlines():
        if "=" in line and not line.startswith(("key=", "lookup")):
            name, value = line.split("=", 1)
            check(rec["fields"].get(name) == value, "field %s: %r vs %r" % (name, rec["fields"].get(name), value))
    p = w.run([w.kt, "cache", "explain", "--template", TEMPLATE, "--shape", "n=4096", "--gpu", "NVIDIA H200",
               "--arch", "80", "--nvcc", w.nvcc], check=0)
    check("lookup: miss" in p.stdout and "key=" + key not in p.stdout, "explain with other flags hit")
    # ls and stats
    p = w.run([w.kt, "cache", "ls"], check=0)
    check(len(p.stdout.splitlines()) == 2 and key in p.stdout and "NVIDIA H200" in p.stdout, "ls:\n" + p.stdout)
    p = w.run([w.kt, "cache", "stats"], check=0)
    check("2 records" in p.stdout and "user" in p.stdout, "stats:\n" + p.stdout)
    stats = json.load(open(os.path.join(w.user, "v1", "stats.json")))
    check(stats["user.hits"] == 1 and stats["stores"] == 2, "stats.json: %s" % stats)
    # show of an absent key, of a malformed key
    w.run([w.kt, "cache", "show", "0" * 32], check=1)
    w.run([w.kt, "cache", "show", "../../etc/passwd"], check=1)
    # verify finds a damaged record; --remove deletes it
    path = record_files(w.user)[0]
    with open(path, "r+") as f:
        f.truncate(100)
    p = w.run([w.kt, "cache", "verify"], check=1)
    check("bad user" in p.stdout and "2 records, 1 bad" in p.stdout, "verify:\n" + p.stdout)
    w.run([w.kt, "cache", "verify", "--remove"], check=1)
    w.run([w.kt, "cache", "verify"], check=0)
    # a whole record in the wrong fan-out directory is found out too
    good = record_files(w.user)[0]
    name = os.path.basename(good)
    wrong = os.path.join(w.user, "v1", "00" if not name.startswith("00") else "01", name)
    os.makedirs(os.path.dirname(wrong), exist_ok=True)
    shutil.copy(good, wrong)
    p = w.run([w.kt, "cache", "verify"], check=1)
    check("lies outside its directory" in p.stdout, "verify of a misplaced record:\n" + p.stdout)
    os.unlink(wrong)
    # promote, twice (the second copies nothing)
    p = w.run([w.kt, "cache", "promote", "--to", w.project], check=0)
    check("promoted 1 record" in p.stdout, "promote:\n" + p.stdout)
    p = w.run([w.kt, "cache", "promote", "--to", w.project], check=0)
    check("promoted 0 records" in p.stdout and "1 already there" in p.stdout, "promote again:\n" + p.stdout)
    p = w.run([w.kt, "cache", "ls", "--project-cache", w.project], check=0)
    check(any(line.startswith("project") for line in p.stdout.splitlines()), "ls --project-cache:\n" + p.stdout)
    # gc
    w.run([w.kt, "cache", "gc"], check=1)
    w.run([w.kt, "cache", "gc", "--max-size", "lots"], check=1)
    p = w.run([w.kt, "cache", "gc", "--max-size", "1M"], check=0)
    check("removed 0 records" in p.stdout, "gc 1M:\n" + p.stdout)
    p = w.run([w.kt, "cache", "gc", "--max-size", "0"], check=0)
    check("removed 1 record" in p.stdout and not record_files(w.user), "gc 0:\n" + p.stdout)
    check(len(record_files(w.project)) == 1, "gc touched the project cache")


def set_date(path, date):
    """Rewrites a record's date (not a key field: the record stays whole)."""
    with open(path) as f:
        rec = json.load(f)
    rec["date"] = date
    with open(path, "w") as f:
        json.dump(rec, f)


def case_promote_replaces(w):
    # Template v1 tuned at two shapes and promoted.
    old = w.drive("store", "n=4096", "BLOCK=128,VEC=2,LOOP=flat").stdout.split()[1]
    other = w.drive("store", "n=8192", "BLOCK=64,VEC=1,LOOP=flat").stdout.split()[1]
    w.run([w.kt, "cache", "promote", "--to", w.project], check=0)
    # The template is edited (another source hash, the same problem) and n=4096 tuned again.
    v2 = os.path.join(w.root, "v2", "scale.cu.tmpl")
    os.makedirs(os.path.dirname(v2))
    shutil.copy(os.path.join(HERE, "scale_helper.cuh"), os.path.dirname(v2))
    with open(TEMPLATE) as f, open(v2, "w") as g:
        g.write(f.read() + "// edited\n")
    new = w.drive("store", "n=4096", "BLOCK=256,VEC=4,LOOP=flat", template=v2).stdout.split()[1]
    check(new != old, "the edited template has the old key")
    for tier in (w.user, w.project):
        set_date(os.path.join(tier, "v1", old[:2], old + ".json"), "2026-01-01T00:00:00Z")
    p = w.run([w.kt, "cache", "promote", "--to", w.project], check=0)
    keys = {os.path.basename(f)[:-5] for f in record_files(w.project)}
    check(keys == {new, other}, "after promote: %s (new %s, other %s)\n%s" % (keys, new, other, p.stdout))
    check("%s  scale n=4096 NVIDIA H200: replaces %s" % (new, old) in p.stdout, "no word on the replaced record:\n" + p.stdout)
    check("%s  scale n=4096 NVIDIA H200: not promoted: %s is a later record of it" % (old, new) in p.stdout,
          "no word on the user cache's older record:\n" + p.stdout)
    check("1 replaced" in p.stdout, "promote's count:\n" + p.stdout)
    # Only the old version left in the user cache: the project's newer record stays.
    os.unlink(os.path.join(w.user, "v1", new[:2], new + ".json"))
    p = w.run([w.kt, "cache", "promote", "--to", w.project], check=0)
    check({os.path.basename(f)[:-5] for f in record_files(w.project)} == {new, other}, "the newer record went:\n" + p.stdout)
    check("%s  scale n=4096 NVIDIA H200: not promoted: %s holds a newer record of it (%s)" % (old, w.project, new) in p.stdout,
          "no word on the older record left out:\n" + p.stdout)


def edited(w, name, change):
    """A copy of the scale template (and its header) in <root>/<name>/, its text passed through change."""
    d = os.path.join(w.root, name)
    os.makedirs(d)
    shutil.copy(os.path.join(HERE, "scale_helper.cuh"), d)
    path = os.path.join(d, "scale.cu.tmpl")
    with open(TEMPLATE) as f, open(path, "w") as g:
        g.write(change(f.read()))
    return path


def record_path(tier, key):
    return os.path.join(tier, "v1", key[:2], key + ".json")


def case_other_version(w):
    # v1 tuned at two shapes and committed; then the template is edited and nothing tuned again.
    k4096 = w.drive("store", "n=4096", "BLOCK=256,VEC=2,LOOP=flat").stdout.split()[1]
    k8192 = w.drive("store", "n=8192", "BLOCK=64,VEC=4,LOOP=strided").stdout.split()[1]
    w.run([w.kt, "cache", "promote", "--to", w.project], check=0)
    shutil.rmtree(w.user)
    v2 = edited(w, "v2", lambda t: t + "// edited\n")
    shapes = ["n=4096", "n=8192", "n=512"]
    ci = ["--gpu", "NVIDIA H200", "--read-only", "--project-cache", w.project]
    d = os.path.join(w.root, "gen-v2")
    p = w.generate(d, shapes=shapes, extra=ci, template=v2)
    want = {"n=4096": ("BLOCK=256,VEC=2,LOOP=flat", "other-version"),
            "n=8192": ("BLOCK=64,VEC=4,LOOP=strided", "other-version"), "n=512": ("BLOCK=128,VEC=1,LOOP=flat", "default")}
    check(manifest(d) == want, "v2: %s" % manifest(d))
    check("the template has changed since 2 of its 3 shapes were tuned" in p.stderr, "no word on the stand-ins:\n" + p.stderr)
    check("no cached configuration for 1 of 3 shapes: the template defaults there" in p.stderr,
          "no word on the defaults:\n" + p.stderr)
    # kt cache explain says which record would stand in.
    p = w.run([w.kt, "cache", "explain", "--template", v2, "--shape", "n=8192", "--gpu", "NVIDIA H200", "--arch", "90",
               "--flags", "-O3", "--nvcc", w.nvcc, "--project-cache", w.project], check=0)
    check("lookup: miss\n" in p.stdout and "the record %s (" % k8192 in p.stdout and
          "stands in: BLOCK=64,VEC=4,LOOP=strided\n" in p.stdout, "explain:\n" + p.stdout)
    # They are no hits: --require-hit still fails on all three, naming each.
    p = w.generate(os.path.join(w.root, "gen-v2-ci"), shapes=shapes, extra=ci + ["--require-hit"], template=v2, check=1)
    check(all(s in p.stderr for s in shapes) and "other-version" not in p.stderr, "--require-hit:\n" + p.stderr)
    # A build for two GPUs (a wheel's tables): the H200's table holds the stand-ins; the H100, of
    # which no record speaks, gets no table of its own.
    d = os.path.join(w.root, "gen-two")
    p = w.generate(d, shapes=shapes, extra=["--gpus", "NVIDIA H200;NVIDIA H100 80GB HBM3", "--read-only",
                                            "--project-cache", w.project], template=v2, check=0)
    with open(os.path.join(d, "kt_scale.json")) as f:
        m = json.load(f)
    got = sorted((s.get("gpu"), ",".join("%s=%s" % kv for kv in s["shape"].items()), s["origin"]) for s in m["shapes"])
    check(got == [("NVIDIA H200", "n=4096", "other-version"), ("NVIDIA H200", "n=512", "default"),
                  ("NVIDIA H200", "n=8192", "other-version")], "two GPUs: %s\n%s" % (got, p.stderr))
    # v3 drops BLOCK=256 and declares a new parameter: v1's n=4096 cannot stand in any more, n=8192's
    # takes the new parameter's default.
    v3 = edited(w, "v3", lambda t: t.replace("BLOCK in 64, 128, 256, 512", "BLOCK in 64, 128, 512").replace(
        "// @kt require", "// @kt param     UNROLL in 1, 2 default 2\n// @kt require"))
    d = os.path.join(w.root, "gen-v3")
    w.generate(d, shapes=shapes, extra=ci, template=v3)
    want = {"n=4096": ("BLOCK=128,VEC=1,LOOP=flat,UNROLL=2", "default"),
            "n=8192": ("BLOCK=64,VEC=4,LOOP=strided,UNROLL=2", "other-version"),
            "n=512": ("BLOCK=128,VEC=1,LOOP=flat,UNROLL=2", "default")}
    check(manifest(d) == want, "v3: %s" % manifest(d))
    # v2 tuned at both shapes in the user cache: of v1 and v2, the later record stands in.
    k4096_v2 = w.drive("store", "n=4096", "BLOCK=512,VEC=1,LOOP=strided", template=v2).stdout.split()[1]
    k8192_v2 = w.drive("store", "n=8192", "BLOCK=128,VEC=2,LOOP=flat", template=v2).stdout.split()[1]
    set_date(record_path(w.project, k8192), "2026-01-01T00:00:00Z")
    w.generate(d, shapes=shapes, extra=ci, template=v3)
    got = manifest(d)
    check(got["n=4096"] == ("BLOCK=512,VEC=1,LOOP=strided,UNROLL=2", "other-version") and
          got["n=8192"] == ("BLOCK=128,VEC=2,LOOP=flat,UNROLL=2", "other-version"), "v3 after v2: %s" % got)
    set_date(record_path(w.user, k8192_v2), "2025-01-01T00:00:00Z")
    w.generate(d, shapes=shapes, extra=ci, template=v3)
    check(manifest(d)["n=8192"] == ("BLOCK=64,VEC=4,LOOP=strided,UNROLL=2", "other-version"),
          "the earlier record stood in: %s" % manifest(d))
    # Another GPU's record of v1 is not the problem: the defaults, for the H100 table.
    check(k4096 and k4096_v2, "no keys")
    d = os.path.join(w.root, "gen-h100")
    p = w.generate(d, shapes=["n=4096"], extra=["--gpu", "NVIDIA H100 80GB HBM3", "--read-only", "--project-cache",
                                                w.project], template=v2, check=0)
    check(manifest(d)["n=4096"][1] == "default", "another GPU's record stood in: %s\n%s" % (manifest(d), p.stderr))


def case_remote_other_version(w):
    srv = Nginx(w.nginx, w.root)
    try:
        env = w.env(KT_REMOTE_CACHE=srv.url())
        k1 = w.drive("store", "n=4096", "BLOCK=256,VEC=2,LOOP=flat", env=env).stdout.split()[1]
        # The remote keeps the record twice: under its key, and as the latest of its problem.
        problems = os.path.join(srv.docs, "kt", "v1", "problem")
        files = os.listdir(problems) if os.path.isdir(problems) else []
        check(len(files) == 1, "the problem's latest was not uploaded: %s" % files)
        with open(os.path.join(problems, files[0])) as f:
            check(json.load(f)["key"] == k1, "the problem's latest is not the record stored")
        # The template is edited; a machine with no GPU and nothing local builds it: v1's choice
        # stands in from the remote, the shape never tuned takes the defaults.
        v2 = edited(w, "v2", lambda t: t + "// edited\n")
        fresh = w.env(KT_REMOTE_CACHE=srv.url(), KT_CACHE_DIR=os.path.join(w.root, "other-user"))
        shapes = ["n=4096", "n=512"]
        d = os.path.join(w.root, "gen-v2")
        p = w.generate(d, shapes=shapes, extra=["--gpu", "NVIDIA H200", "--read-only"], template=v2, env=fresh)
        want = {"n=4096": ("BLOCK=256,VEC=2,LOOP=flat", "other-version"), "n=512": ("BLOCK=128,VEC=1,LOOP=flat", "default")}
        check(manifest(d) == want, "v2 from the remote: %s\n%s" % (manifest(d), p.stderr))
        check("since 1 of its 2 shapes were tuned (1 of them from the remote cache)" in p.stderr and
              not warnings_in(p.stderr), "the note:\n" + p.stderr)
        p = w.run([w.kt, "cache", "explain", "--template", v2, "--shape", "n=4096", "--gpu", "NVIDIA H200", "--arch",
                   "90", "--flags", "-O3", "--nvcc", w.nvcc], env=fresh, check=0)
        check("lookup: miss\n" in p.stdout and "the record %s (" % k1 in p.stdout and ", from the remote)" in p.stdout and
              "stands in: BLOCK=256,VEC=2,LOOP=flat\n" in p.stdout, "explain:\n" + p.stdout + p.stderr)
        # Still no hit.
        p = w.generate(os.path.join(w.root, "gen-v2-ci"), shapes=shapes, template=v2, env=fresh, check=1,
                       extra=["--gpu", "NVIDIA H200", "--read-only", "--require-hit"])
        check("n=4096" in p.stderr, "--require-hit:\n" + p.stderr)
        # v2 tuned (stored through the remote): a hit for v2, and the problem's latest for v3.
        w.drive("store", "n=4096", "BLOCK=64,VEC=4,LOOP=strided", template=v2, env=env)
        check(len(os.listdir(problems)) == 1, "one problem, one latest: %s" % os.listdir(problems))
        v3 = edited(w, "v3", lambda t: t + "// edited again\n")
        p = w.generate(d, shapes=shapes, extra=["--gpu", "NVIDIA H200", "--read-only"], template=v3, env=fresh)
        check(manifest(d)["n=4096"] == ("BLOCK=64,VEC=4,LOOP=strided", "other-version"), "v3: %s" % manifest(d))
        p = w.generate(d, shapes=shapes, extra=["--gpu", "NVIDIA H200", "--read-only"], template=v2, env=fresh)
        check(manifest(d)["n=4096"] == ("BLOCK=64,VEC=4,LOOP=strided", "cache:remote"), "v2 tuned: %s" % manifest(d))
        # A latest that is not its problem's (a server's mix-up: n=8192's holds n=4096's record) is
        # refused with one warning, and the shape takes the defaults.
        before = set(os.listdir(problems))
        w.drive("store", "n=8192", "BLOCK=64,VEC=2,LOOP=flat", env=env)
        added = set(os.listdir(problems)) - before
        check(len(added) == 1, "n=8192's latest: %s" % added)
        shutil.copy(os.path.join(srv.docs, "kt", "v1", k1 + ".json"), os.path.join(problems, added.pop()))
        p = w.generate(d, shapes=["n=8192"], extra=["--gpu", "NVIDIA H200", "--read-only"], template=v3, env=fresh)
        check(manifest(d)["n=8192"][1] == "default", "a record of n=4096 stood in at n=8192: %s" % manifest(d))
        warns = warnings_in(p.stderr)
        check(len(warns) == 1 and "of another problem" in warns[0], "the mix-up:\n" + p.stderr)
    finally:
        srv.stop()


def case_push(w):
    # v1 tuned at two shapes and committed, before any remote.
    k4096 = w.drive("store", "n=4096", "BLOCK=256,VEC=2,LOOP=flat").stdout.split()[1]
    k8192 = w.drive("store", "n=8192", "BLOCK=64,VEC=4,LOOP=strided").stdout.split()[1]
    w.run([w.kt, "cache", "promote", "--to", w.project], check=0)
    for k in (k4096, k8192):
        set_date(record_path(w.project, k), "2026-01-01T00:00:00Z")
    srv = Nginx(w.nginx, w.root)
    try:
        push = [w.kt, "cache", "push", "--from", w.project, "--remote", srv.url()]
        p = w.run(push, check=0)
        check("pushed 2 records from %s to %s (2 as their problem's latest, 0 unreadable skipped)" % (w.project, srv.url())
              in p.stdout and not warnings_in(p.stderr), "push:\n" + p.stdout + p.stderr)
        base = os.path.join(srv.docs, "kt", "v1")
        on = sorted(os.path.relpath(os.path.join(r, f), base) for r, _, fs in os.walk(base) for f in fs)
        check(len(on) == 5 and k4096 + ".json" in on and k8192 + ".json" in on and "gpu/NVIDIA H200.json" in on and
              sum(x.startswith("problem/") for x in on) == 2, "on the remote: %s" % on)
        # The template edited, a machine with nothing local: both stand in from the remote.
        v2 = edited(w, "v2", lambda t: t + "// edited\n")
        fresh = w.env(KT_REMOTE_CACHE=srv.url(), KT_CACHE_DIR=os.path.join(w.root, "other-user"))
        d = os.path.join(w.root, "gen-v2")
        w.generate(d, shapes=["n=4096", "n=8192"], extra=["--gpu", "NVIDIA H200", "--read-only"], template=v2, env=fresh)
        check(manifest(d) == {"n=4096": ("BLOCK=256,VEC=2,LOOP=flat", "other-version"),
                              "n=8192": ("BLOCK=64,VEC=4,LOOP=strided", "other-version")}, "v2: %s" % manifest(d))
        # v2 tuned at n=4096 through the remote; pushing v1's records again keeps v2's as the latest.
        w.drive("store", "n=4096", "BLOCK=512,VEC=1,LOOP=strided", template=v2, env=w.env(KT_REMOTE_CACHE=srv.url()))
        p = w.run(push, check=0)
        check("pushed 2 records" in p.stdout and "(0 as their problem's latest" in p.stdout, "again:\n" + p.stdout)
        v3 = edited(w, "v3", lambda t: t + "// edited again\n")
        w.generate(d, shapes=["n=4096"], extra=["--gpu", "NVIDIA H200", "--read-only"], template=v3, env=fresh)
        check(manifest(d)["n=4096"] == ("BLOCK=512,VEC=1,LOOP=strided", "other-version"), "v3: %s" % manifest(d))
        # --kernel that matches nothing pushes nothing.
        p = w.run(push + ["--kernel", "nothing*"], check=0)
        check("pushed 0 records" in p.stdout, "--kernel:\n" + p.stdout)
    finally:
        srv.stop()
    # No remote answers: an error that names it, after nothing was pushed.
    url = "http://127.0.0.1:%d/kt" % free_port()
    p = w.run([w.kt, "cache", "push", "--from", w.project, "--remote", url], check=1)
    check(url in p.stderr and "0 records pushed before it failed" in p.stderr, "dead remote:\n" + p.stderr)
    p = w.run([w.kt, "cache", "push", "--from", w.project], env=w.env(), check=1)
    check("--remote URL" in p.stderr, "no remote:\n" + p.stderr)


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kt", required=True)
    ap.add_argument("--driver", required=True)
    ap.add_argument("--nginx", default=shutil.which("nginx", path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/local/sbin"))
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    w = Env(args)
    try:
        CASES[args.case](w)
    except Skip as s:
        w.cleanup()
        print("skipped: %s" % s)
        return SKIP
    except AssertionError as e:
        print("FAILED: %s" % e)
        print("(files kept in %s)" % w.root)
        return 1
    w.cleanup()
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
