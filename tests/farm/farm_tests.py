#!/usr/bin/env python3
"""kt farm against a real single-node Slurm cluster (ctest label `farm`).

The fixture starts munged, slurmctld and slurmd from Debian's packages (slurmctld, slurmd,
slurm-client, munge) with their configuration, state and sockets in a temporary directory, as
root (slurmd runs jobs as their users), and stops them after, killing every process that runs
with its SLURM_CONF.  The node has two fake GPUs (GRES gpu:fake, feature kt_fake); its task
prolog gives each job the fake GPU backend (KT_TEST_GPU_BACKEND=fake) and a node-local TMPDIR,
while the configure side has no GPU and names the GPU model with KT_GPU.  The remote cache is
nginx with WebDAV (tests/cache/cache_tests.py's Nginx).  The kernels are ./scale.cu.tmpl and
./crash.cu.tmpl, compiled by the fake compiler tests/unit/fake/fake_nvcc.py.

  flow     a 3-kernel project (./project) configured with KT_FARM: its 4 misses become one job
           array; a second configure while it runs farms nothing again; the tasks store 4
           records in the remote; a configure with KT_REQUIRE_CACHE_HIT=ON then passes
  dies     a task cancelled while storing (scancel) and a task whose worker crashes (fault mode)
           leave no record and are reported by kt farm status; --only-failed submits them
           again; a task whose record is in the cache skips it
  down     the controller down: the configure says why and goes on, with the configuration
           of another GPU's record where there is one
  absent   no Slurm (no sbatch), no remote cache, a malformed KT_FARM (needs no Slurm)
  task     kt farm run by hand (needs no Slurm): a GPU here farms and tunes nothing; a record
           that does not reach the remote, a key that is not the configure's, another GPU, no GPU

usage: farm_tests.py --kt KT --source DIR [--nginx NGINX] CASE
Exit status 77: skipped (it says why).  Python standard library only.
"""
import argparse
import glob
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cache"))
from cache_tests import Nginx, Skip, free_port  # noqa: E402  (the cache suite's WebDAV server)

SKIP = 77
FAKE_GPU = "kt fake GPU"  # the name the fake backend gives its devices (generator/gpu_fake.c)
SLURM_PACKAGES = "slurmctld slurmd slurm-client munge"


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


# Waits end when what they wait for happens, however long that takes on a loaded machine; this is
# only a backstop, a little under ctest's TIMEOUT (180 s), so that a case stuck on Slurm fails
# with Slurm's logs rather than being killed without them.
BACKSTOP = time.monotonic() + 160


def wait_for(what, probe):
    while time.monotonic() < BACKSTOP:
        got = probe()
        if got:
            return got
        time.sleep(0.3)
    raise Fail("still waiting for %s when the case's backstop came" % what)


# ---- the cluster --------------------------------------------------------------------------


class Slurm:
    """A single-node Slurm cluster in root/slurm: munged, slurmctld, slurmd."""

    NODE = "kttest"

    def __init__(self, root):
        if os.geteuid() != 0:
            raise Skip("Slurm's daemons must run as root here (slurmd starts jobs as their users); CI runs as root")
        self.exe = {}
        for name in ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo"):
            path = shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin")
            if not path:
                raise Skip("%s not found: install Debian's %s (scripts/deps.sh test)" % (name, SLURM_PACKAGES))
            self.exe[name] = path
        # Sockets live in these directories: a path too long for a socket gets a short one in /tmp.
        self.dir = os.path.join(root, "slurm") if len(root) < 60 else tempfile.mkdtemp(prefix="kt-slurm-", dir="/tmp")
        self.own_dir = not self.dir.startswith(root)
        self.procs = []
        for d in ("state", "spool", "log", "node-tmp"):
            os.makedirs(os.path.join(self.dir, d))
        os.makedirs(os.path.join(self.dir, "run"), mode=0o755)  # munged wants its socket's directory open to all
        os.makedirs(os.path.join(self.dir, "key"), mode=0o700)
        for d in (root, self.dir):  # munged wants every directory above its socket open to all
            os.chmod(d, 0o755)
        self.socket = os.path.join(self.dir, "run", "munge.socket")
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.node_tmp = os.path.join(self.dir, "node-tmp")
        try:
            self.start()
        except BaseException:
            self.stop()
            raise

    def env(self, base):
        return dict(base, SLURM_CONF=self.conf)

    def write_config(self):
        d = self.dir
        key = os.path.join(d, "key", "munge.key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
            f.write(os.urandom(1024))
        prolog = os.path.join(d, "task_prolog.sh")
        with open(prolog, "w") as f:  # the node's GPU is the fake one; its TMPDIR is its own
            f.write("#!/bin/sh\necho export KT_TEST_GPU_BACKEND=fake\necho export TMPDIR=%s\n" % self.node_tmp)
        os.chmod(prolog, 0o755)
        with open(os.path.join(d, "gres.conf"), "w") as f:
            f.write("NodeName=%s Name=gpu Type=fake File=/dev/null\n" % self.NODE)
            f.write("NodeName=%s Name=gpu Type=fake File=/dev/zero\n" % self.NODE)
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=kttest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
AuthType=auth/munge
AuthInfo=socket={self.socket}
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
TaskProlog={prolog}
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
ReturnToService=2
MinJobAge=3600
MessageTimeout=5
KillWait=2
SlurmdParameters=config_overrides
GresTypes=gpu
NodeName={self.NODE} NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 Gres=gpu:fake:2 Features=kt_fake State=UNKNOWN
PartitionName=ktgpu Nodes={self.NODE} Default=YES MaxTime=INFINITE State=UP
""")

    def spawn(self, name, argv):
        log = open(os.path.join(self.dir, "log", name + ".out"), "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env(os.environ))
        log.close()
        self.procs.append((name, p))
        return p

    def start(self):
        self.write_config()
        key = os.path.join(self.dir, "key")
        self.spawn("munged", [self.exe["munged"], "--foreground", "--socket=" + self.socket,
                              "--key-file=" + os.path.join(key, "munge.key"), "--log-file=" + os.path.join(key, "log"),
                              "--pid-file=" + os.path.join(key, "pid"), "--seed-file=" + os.path.join(key, "seed")])
        wait_for("munged's socket", lambda: os.path.exists(self.socket) or self.died())
        self.ctld = self.spawn("slurmctld", [self.exe["slurmctld"], "-D", "-f", self.conf])
        self.spawn("slurmd", [self.exe["slurmd"], "-D", "-N", self.NODE, "-f", self.conf])
        wait_for("the node to be idle", lambda: self.died() or self.node_state() == "idle")

    def died(self):
        for name, p in self.procs:
            if p.poll() is not None:
                raise Fail("%s exited (%s): %s" % (name, p.returncode, self.logs()))
        return False

    def logs(self):
        out = []
        for f in sorted(glob.glob(os.path.join(self.dir, "log", "*"))):
            with open(f, errors="replace") as h:
                out.append("--- %s\n%s" % (os.path.basename(f), h.read()[-3000:]))
        return "\n".join(out)

    def node_state(self):
        p = subprocess.run([self.exe["sinfo"], "-h", "-n", self.NODE, "-o", "%t"], env=self.env(os.environ),
                           capture_output=True, text=True, timeout=30)
        return p.stdout.strip()

    def run(self, *argv):
        return subprocess.run([self.exe[argv[0]]] + list(argv[1:]), env=self.env(os.environ), capture_output=True,
                              text=True, timeout=60)

    def stop_controller(self):
        self.ctld.terminate()
        self.ctld.wait(timeout=30)

    def ours(self):
        """The processes that run with this cluster's SLURM_CONF: its daemons' children and jobs."""
        mark = ("SLURM_CONF=%s" % self.conf).encode()
        pids = []
        for env in glob.glob("/proc/[0-9]*/environ"):
            try:
                with open(env, "rb") as f:
                    if mark in f.read().split(b"\0"):
                        pids.append(int(env.split("/")[2]))
            except OSError:
                pass
        return [p for p in pids if p != os.getpid()]

    def stop(self):
        if self.ctld_alive():
            self.run("scancel", "--full", "--partition=ktgpu")
            wait_for_quiet = time.time() + 15
            while time.time() < wait_for_quiet and self.run("squeue", "-h", "-t", "running,completing").stdout.strip():
                time.sleep(0.3)
        for _, p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for pid in self.ours():  # a job step or a job the daemons left behind
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if self.own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def ctld_alive(self):
        return getattr(self, "ctld", None) is not None and self.ctld.poll() is None


# ---- the world of one case -----------------------------------------------------------------


class World:
    def __init__(self, args):
        self.kt = args.kt
        self.source = os.path.abspath(args.source)
        self.nginx_exe = args.nginx
        self.fake_nvcc = os.path.join(self.source, "tests", "unit", "fake", "fake_nvcc.py")
        self.root = tempfile.mkdtemp(prefix="kt-farm-test-")
        self.user = os.path.join(self.root, "user")
        self.slurm = self.nginx = None
        self.base = dict(os.environ)
        for var in ("KT_CACHE_DIR", "KT_REMOTE_CACHE", "KT_GPU", "KT_RETUNE", "KT_REQUIRE_CACHE_HIT", "KT_FARM",
                    "KT_TEST_GPU_BACKEND", "KT_TEST_STORE_PAUSE_MS", "KT_TUNE_BUDGET", "SLURM_CONF", "CI"):
            self.base.pop(var, None)
        self.base.update(KT_AGENT="off", KT_TUNE_BUDGET="6", HOME=self.root)

    def start(self, slurm=True, nginx=True):
        if nginx:
            self.nginx = Nginx(self.nginx_exe, self.root)
        if slurm:
            self.slurm = Slurm(self.root)

    def env(self, **extra):
        e = self.slurm.env(self.base) if self.slurm else dict(self.base)
        for k, v in extra.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        return e

    def run(self, argv, env=None, rc=0, timeout=120):
        p = subprocess.run(argv, env=env or self.env(), capture_output=True, text=True, timeout=timeout)
        if rc is not None and p.returncode != rc:
            raise Fail("%s: exit %d, expected %d\nstdout:\n%s\nstderr:\n%s"
                       % (" ".join(argv), p.returncode, rc, p.stdout, p.stderr))
        return p

    def configure(self, build, rc=0, **env):
        """Configures ./project into build; returns cmake's output."""
        argv = ["cmake", "-S", os.path.join(HERE, "project"), "-B", build, "-DKT_SOURCE_DIR=" + self.source,
                "-DKT_EXECUTABLE=" + self.kt, "-DKT_FAKE_NVCC=" + self.fake_nvcc]
        p = self.run(argv, env=self.env(**env), rc=rc)
        return p.stdout + p.stderr

    def records(self):
        """The records in the remote cache (nginx's document root)."""
        return sorted(glob.glob(os.path.join(self.nginx.docs, "kt", "v1", "*.json")))

    def status(self, jobid):
        return self.run([self.kt, "farm", "status", jobid]).stdout

    def wait_job(self, jobid):
        """Waits until no task of the job is pending or running; returns kt farm status's output."""
        def ended():
            out = self.status(jobid)
            return out if not re.search(r"\d+ (pending|running)", out.splitlines()[0]) else None
        try:
            return wait_for("job %s" % jobid, ended)
        except Fail as e:
            raise Fail("%s\n%s\n%s" % (e, self.status(jobid), self.slurm.logs()))

    def close(self):
        if self.slurm:
            self.slurm.stop()
        if self.nginx:
            self.nginx.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def manifest(build, name):
    with open(os.path.join(build, "kt", name, "kt_%s.json" % name)) as f:
        return json.load(f)


def origins(build, names=("scale_a", "scale_b", "scale_c")):
    return [s["origin"] for n in names for s in manifest(build, n)["shapes"]]


def job_of(text, what):
    m = re.search(r"farmed (\d+) miss(?:es)? out to Slurm as job (\d+)", text)
    check(m, "%s: no job was submitted:\n%s" % (what, text))
    return int(m.group(1)), m.group(2)


# ---- the cases ---------------------------------------------------------------------------------


def case_flow(w):
    w.start()
    farm = dict(KT_FARM="constraint=kt_fake gpu=fake parallel=1", KT_REMOTE_CACHE=w.nginx.url(), KT_GPU=FAKE_GPU,
                KT_CACHE_DIR=w.user)
    build = os.path.join(w.root, "build")
    out = w.configure(build, **farm)
    n, job = job_of(out, "the first configure")
    check(n == 4, "4 misses (3 kernels, 4 shapes) are farmed:\n" + out)
    check(origins(build) == ["default"] * 4, "meanwhile the defaults: %s" % origins(build))
    lists = glob.glob(os.path.join(build, "kt", "farm", "misses-*.json"))
    check(len(lists) == 1 and os.path.exists(lists[0][:-5] + ".sh"), "the list and its job script: %s" % lists)
    # A configure while the job runs (one task at a time: parallel=1) farms nothing again.
    again = w.configure(build, **farm)
    check("being farmed already, by job %s" % job in again and "out to Slurm as job" not in again,
          "the second configure leaves the misses to job %s:\n%s" % (job, again))
    status = w.wait_job(job)
    check("4 tasks: 4 done" in status, "every task is done:\n" + status)
    recs = w.records()
    check(len(recs) == 4, "4 records in the remote: %s" % recs)
    check(os.path.exists(os.path.join(w.nginx.docs, "kt", "v1", "gpu", FAKE_GPU + ".json")),
          "the GPU's identity is in the remote")
    # Anywhere else, a configure that must hit does: every record comes from the remote.
    build2 = os.path.join(w.root, "build2")
    out = w.configure(build2, KT_REQUIRE_CACHE_HIT="ON", KT_GPU=FAKE_GPU, KT_REMOTE_CACHE=w.nginx.url(),
                      KT_CACHE_DIR=os.path.join(w.root, "user2"))
    check(origins(build2) == ["cache:remote"] * 4, "hits from the remote: %s\n%s" % (origins(build2), out))


def batch_file(w, kernels):
    """A kt generate --batch file of (name, template, shape) kernels."""
    path = os.path.join(w.root, "batch.txt")
    blocks = []
    for name, tmpl, shape in kernels:
        blocks.append("\n".join(["--template", os.path.join(HERE, tmpl), "--name", name, "--out",
                                 os.path.join(w.root, "out", name), "--nvcc", w.fake_nvcc, "--shape", shape,
                                 "--cache-dir", w.user]))
    with open(path, "w") as f:
        f.write("\n--\n".join(blocks) + "\n")
    return path


def task_log(listpath, job, task):
    return "%s-%s_%d.log" % (listpath[:-5], job, task)


def case_dies(w):
    w.start()
    farm_dir = os.path.join(w.root, "farm")
    batch = batch_file(w, [("good", "scale.cu.tmpl", "n=4096"), ("crash", "crash.cu.tmpl", "n=4096")])
    argv = [w.kt, "generate", "--batch", batch, "--farm", "gpu=fake", "--farm-dir", farm_dir, "--gpu", FAKE_GPU,
            "--remote", w.nginx.url()]
    # Every store of this job waits an hour before its rename: the window to cancel it in.
    p = w.run(argv, env=w.env(KT_TEST_STORE_PAUSE_MS="3600000"))
    _, job = job_of(p.stderr, "kt generate --batch --farm")
    (listpath,) = glob.glob(os.path.join(farm_dir, "misses-*.json"))
    log0 = task_log(listpath, job, 0)
    wait_for("task 0 to store its record", lambda: os.path.exists(log0) and "kt: tuned" in open(log0).read())
    w.slurm.run("scancel", "%s_0" % job)
    status = w.wait_job(job)
    check(re.search(r"task 0 +failed +CANCELLED", status), "the cancelled task is reported:\n" + status)
    check(re.search(r"task 1 +failed +FAILED", status), "the crashed task is reported:\n" + status)
    check("kt farm submit %s --only-failed %s" % (listpath, job) in status, "how to submit again:\n" + status)
    check(not w.records(), "no record from a task that died: %s" % w.records())
    with open(task_log(listpath, job, 1)) as f:
        log1 = f.read()
    check("task 1: crash n=4096: failed" in log1 and "faulted" in log1, "the crash is in task 1's log:\n" + log1)
    # Submitted again (without the pause): the good one stores its record, the crash fails again.
    p = w.run([w.kt, "farm", "submit", listpath, "--only-failed", job])
    m = re.search(r"as job (\d+) \(2 tasks\)", p.stdout)
    check(m, "resubmitted the 2 failed tasks:\n" + p.stdout)
    status = w.wait_job(m.group(1))
    check(re.search(r"task 0 +done", status) and re.search(r"task 1 +failed", status), "again:\n" + status)
    check(len(w.records()) == 1, "the good task's record: %s" % w.records())
    # Idempotent: a task whose record is in the cache skips it.
    p = w.run([w.kt, "farm", "run", listpath, "--task", "0"], env=w.env(KT_TEST_GPU_BACKEND="fake"))
    check("already in the cache (remote)" in p.stdout, "a task of a miss in the cache skips it:\n" + p.stdout)
    p = w.run([w.kt, "farm", "submit", listpath, "--only-failed", m.group(1)], rc=0)
    check("(1 task)" in p.stdout, "only the crash is failed now:\n" + p.stdout)


def counted(w, name):
    """A directory whose `name` runs Slurm's, first writing its arguments as a line to a log: the
    directory (to put first on PATH) and the log."""
    d = os.path.join(w.root, "counted")
    os.makedirs(d, exist_ok=True)
    log, path = os.path.join(d, name + ".calls"), os.path.join(d, name)
    with open(path, "w") as f:
        f.write('#!/bin/sh\necho "$*" >> %s\nexec %s "$@"\n' % (shlex.quote(log), shlex.quote(w.slurm.exe[name])))
    os.chmod(path, 0o755)
    open(log, "w").close()
    return d, log


def case_down(w):
    w.start()
    # A record of the template for the fake GPU at the same shape, tuned here.
    tmpl = os.path.join(HERE, "scale.cu.tmpl")
    w.run([w.kt, "generate", "--template", tmpl, "--name", "scale", "--out", os.path.join(w.root, "tuned"), "--nvcc",
           w.fake_nvcc, "--cache-dir", w.user, "--shape", "n=4096", "--quiet"], env=w.env(KT_TEST_GPU_BACKEND="fake"))
    with open(os.path.join(w.root, "tuned", "kt_scale.json")) as f:
        tuned = json.load(f)["shapes"][0]["config"]
    w.slurm.stop_controller()
    build = os.path.join(w.root, "build")
    bindir, calls = counted(w, "sbatch")
    out = w.configure(build, KT_FARM="gpu=fake", KT_REMOTE_CACHE=w.nginx.url(), KT_GPU="kt other GPU",
                      KT_CACHE_DIR=w.user, PATH=bindir + os.pathsep + w.base.get("PATH", ""))
    check("could not be farmed out" in out and "Unable to contact slurm controller" in out,
          "the configure says that Slurm is down:\n" + out)
    # What the controller being down costs: one submission (Slurm's own timeouts), then kt goes on.
    with open(calls) as f:
        submitted = f.read().splitlines()
    check(len(submitted) == 1, "kt submitted %d times to a controller that is down, not once" % len(submitted))
    a = manifest(build, "scale_a")["shapes"]
    check(a[0]["origin"] == "transfer" and a[0]["config"] == tuned, "another GPU's record: %s vs %s" % (a[0], tuned))
    check("closest record: kt fake GPU n=4096" in out, "the configure says whose configuration:\n" + out)
    check(origins(build)[1:] == ["transfer"] * 3, "the closest record for the other shapes: %s" % origins(build))


def case_absent(w):
    w.start(slurm=False, nginx=False)
    batch = batch_file(w, [("good", "scale.cu.tmpl", "n=4096")])
    nobin = os.path.join(w.root, "nobin")  # a PATH without Slurm's commands
    os.makedirs(nobin)
    argv = [w.kt, "generate", "--batch", batch, "--farm-dir", os.path.join(w.root, "farm"), "--gpu", FAKE_GPU]
    env = dict(KT_FARM="ON", KT_REMOTE_CACHE="http://127.0.0.1:9/kt", PATH=nobin)
    p = w.run(argv, env=w.env(**env))
    check("1 miss could not be farmed out: cannot run sbatch" in p.stderr and "Slurm's client installed" in p.stderr,
          "no Slurm: a clear warning, and kt generate goes on:\n" + p.stderr)
    with open(os.path.join(w.root, "out", "good", "kt_good.json")) as f:
        check(json.load(f)["shapes"][0]["origin"] == "default", "the default configuration")
    p = w.run(argv, env=w.env(**dict(env, KT_REMOTE_CACHE=None)))
    check("KT_FARM needs a remote cache" in p.stderr, "no remote cache:\n" + p.stderr)
    p = w.run(argv + ["--farm", "constraint=h100 colour=blue"], env=w.env(**env), rc=1)
    check("KT_FARM 'constraint=h100 colour=blue': unknown setting 'colour' (known: account," in p.stderr,
          "a malformed KT_FARM is an error:\n" + p.stderr)
    p = w.run([w.kt, "farm", "status", "123"], env=w.env(PATH=nobin), rc=1)
    check("cannot run squeue" in p.stderr, "kt farm status without Slurm:\n" + p.stderr)


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


def case_task(w):
    """kt farm run on lists by hand (no Slurm): the checks a task makes before and after tuning."""
    w.start(slurm=False, nginx=False)
    batch = batch_file(w, [("good", "scale.cu.tmpl", "n=4096")])
    nobin = os.path.join(w.root, "nobin")  # Python for the fake compiler, no Slurm
    os.makedirs(nobin)
    os.symlink(sys.executable, os.path.join(nobin, "python3"))
    farm_dir = os.path.join(w.root, "farm")
    fake = dict(KT_TEST_GPU_BACKEND="fake", KT_FARM="ON", KT_REMOTE_CACHE="http://127.0.0.1:9/kt", PATH=nobin)
    # A GPU here and KT_FARM: nothing is tuned here; the list has the key the GPU here gives.
    w.run([w.kt, "generate", "--batch", batch, "--farm-dir", farm_dir], env=w.env(**fake))
    with open(os.path.join(w.root, "out", "good", "kt_good.json")) as f:
        key = json.load(f)["shapes"][0]["key"]
    check(not glob.glob(os.path.join(w.user, "v1", "??", "*.json")), "nothing is tuned here")
    (listpath,) = glob.glob(os.path.join(farm_dir, "misses-*.json"))
    with open(listpath) as f:
        doc = json.load(f)
    check(doc["gpu"] == FAKE_GPU and doc["misses"][0]["key"] == key, "the list holds the key: %s" % doc)
    run = [w.kt, "farm", "run", "--task", "0"]
    node = w.env(KT_TEST_GPU_BACKEND="fake")
    # Tuned, but the remote cache does not answer: the task fails (its record is not in the cache).
    p = w.run(run + [listpath], env=node, rc=1)
    check("task 0: good n=4096: failed: tuned, but the record is not in the remote cache" in p.stdout,
          "a record that did not reach the remote:\n" + p.stdout + p.stderr)
    # A key that is not the configure's: not tuned.
    other = os.path.join(w.root, "other-key.json")
    doc["misses"][0]["key"] = "0" * 32
    write_json(other, doc)
    p = w.run(run + [other], env=node, rc=1)
    check("its key here is %s, the configure's %s" % (key, "0" * 32) in p.stdout and "not tuned" in p.stdout,
          "another key:\n" + p.stdout)
    check("kt: tuned" not in p.stderr, "nothing was tuned:\n" + p.stderr)
    # Another GPU than the list's, no GPU at all, a task out of range: the task does not run.
    doc["gpu"] = "NVIDIA H100 80GB HBM3"
    write_json(other, doc)
    p = w.run(run + [other], env=node, rc=1)
    check("the GPU here is '%s', but the misses are for 'NVIDIA H100 80GB HBM3'" % FAKE_GPU in p.stderr, p.stderr)
    p = w.run(run + [listpath], env=w.env(KT_TEST_GPU_BACKEND="fake", KT_FAKE_GPUS="0"), rc=1)
    check("no GPU here" in p.stderr, "no GPU:\n" + p.stderr)
    p = w.run([w.kt, "farm", "run", listpath, "--task", "1"], env=node, rc=1)
    check("--task 1: the list has tasks 0 to 0" in p.stderr, p.stderr)
    check(not glob.glob(os.path.join(os.environ.get("TMPDIR", "/tmp"), "kt-farm-[0-9]*")), "the tasks' work is removed")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kt", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--nginx", default=shutil.which("nginx", path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/local/sbin"))
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    w = World(args)
    try:
        CASES[args.case](w)
    except Skip as s:
        print("skipped: %s" % s)
        return SKIP
    except Fail as e:
        print("FAIL %s: %s" % (args.case, e))
        return 1
    finally:
        w.close()
    print("ok %s" % args.case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
