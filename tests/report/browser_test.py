#!/usr/bin/env python3
"""kt report in a real browser (ctest label `report`).

Each case writes a page with the real `kt report`, then has headless Chromium load it twice:

  --dump-dom     the exit status is 0; Chromium's log (--enable-logging=stderr) holds no console
                 message: no script error, and nothing blocked by the page's Content-Security-Policy
                 (default-src 'none'), so the page asked for nothing from anywhere; the DOM is
                 complete: the last element of <body> is <footer id="kt-report-end">; every record
                 has its section, whose scatter holds one circle per passing evaluation, whose
                 search plot holds one circle per passing and one mark per failed evaluation
  --screenshot   a PNG of the asked size that is not blank

Chromium runs with a directory of its own: a short path under /tmp (made here, removed after each
run) that holds its profile and is its TMPDIR, where it makes its singleton socket; a Unix socket's
path has room for 107 bytes, which the tests' TMPDIR in a deep build directory does not leave.

  fixture   the records of tests/unit/report_fixture.h (known evaluations, one with a single
            evaluation, one with all failed, one corrupt: skipped with a warning); then
            --keys FILE picks two of them
  cache     the repository's committed cache/ (real records); here the parameter on each scatter's
            x axis is also recomputed from the records (see docs/report.md) and compared

  --deep N  runs the case in a directory whose path is N characters or longer (its TMPDIR and
            working directory), as a build directory deep in a CI workspace gives

usage: browser_test.py --kt KT --fixture FIXTURE --cache DIR [--chromium PATH] [--deep N] CASE
Exit status 77: skipped (no Chromium), with the reason.  Python standard library only.
"""
import argparse
import glob
import html.parser
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

SKIP = 77
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
WINDOW = (1280, 1600)
MIN_PNG_BYTES = 30000  # a blank page of this size is a few kilobytes
CHROMIUM_TIMEOUT_S = 120  # a backstop for a browser that never exits (a load takes seconds; ctest's TIMEOUT is 300)


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


class Dom(html.parser.HTMLParser):
    """What the test needs from the DOM: the last element of <body>, and per record section the
    circles and marks of each plot, and the x parameter of its scatter."""

    def __init__(self):
        super().__init__()
        self.depth = 0
        self.body_depth = None
        self.last_body_child = None
        self.section = None
        self.plot = None
        self.sections = {}

    def element(self, tag, attrs, closes):
        a = dict(attrs)
        if self.body_depth is not None and self.depth == self.body_depth + 1:
            self.last_body_child = (tag, a.get("id"))
        if tag == "body":
            self.body_depth = self.depth
        if tag == "section" and a.get("id", "").startswith("r-"):
            self.section = self.sections.setdefault(a["id"][2:], {"scatter": {}, "progress": {}, "x": None})
        if tag == "figure" and self.section is not None and "data-x" in a:
            self.section["x"] = a["data-x"]
        if tag == "svg" and self.section is not None:
            self.plot = self.section[a.get("data-plot")]
        if self.plot is not None and tag in ("circle", "line"):
            key = tag + "." + (a.get("class") or "").split(" ")[0]
            self.plot[key] = self.plot.get(key, 0) + 1
        if not closes and tag not in VOID:
            self.depth += 1

    def handle_starttag(self, tag, attrs):
        self.element(tag, attrs, False)

    def handle_startendtag(self, tag, attrs):
        self.element(tag, attrs, True)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        self.depth -= 1
        if tag == "svg":
            self.plot = None
        if tag == "section":
            self.section = None


class Chromium:
    """Headless Chromium with a private directory: its profile and its TMPDIR, under /tmp with a
    short name (see the top of this file).  Each run starts a browser on that profile; close()
    removes the directory."""

    def __init__(self, exe):
        self.exe = exe
        self.dir = tempfile.mkdtemp(prefix="kt-chromium-", dir="/tmp")

    def run(self, *args):
        argv = [self.exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
                "--user-data-dir=" + os.path.join(self.dir, "profile")] + list(args)
        return subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ, TMPDIR=self.dir),
                              timeout=CHROMIUM_TIMEOUT_S)

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def load(chromium, page):
    """The page's DOM as Chromium dumps it, checked for a clean load."""
    p = chromium.run("--dump-dom", "file://" + page)
    check(p.returncode == 0, "chromium --dump-dom exited %d:\n%s" % (p.returncode, p.stderr[-3000:]))
    console = [line for line in p.stderr.splitlines() if ":CONSOLE" in line]
    check(not console, "the page wrote to the browser's console:\n" + "\n".join(console))
    dom = Dom()
    dom.feed(p.stdout)
    dom.close()
    check(dom.last_body_child == ("footer", "kt-report-end"),
          "the DOM is incomplete: the body's last element is %s, not footer#kt-report-end" % (dom.last_body_child,))
    return dom


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    check(head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", path + " is not a PNG")
    return struct.unpack(">II", head[16:24])


def screenshot(chromium, tmp, page):
    png = os.path.join(tmp, "report.png")
    p = chromium.run("--screenshot=" + png, "--window-size=%d,%d" % WINDOW, "file://" + page)
    check(p.returncode == 0 and os.path.exists(png), "chromium --screenshot failed:\n" + p.stderr[-3000:])
    check(png_size(png) == WINDOW, "the screenshot is %s, not %s" % (png_size(png), WINDOW))
    size = os.path.getsize(png)
    check(size > MIN_PNG_BYTES, "the screenshot has %d bytes: a blank page?" % size)
    return png


def check_section(dom, key, evals, ok):
    s = dom.sections.get(key)
    check(s is not None, "no section for record %s" % key)
    sc, pr = s["scatter"], s["progress"]
    check(sc.get("circle.pt", 0) == ok, "record %s: %d points on the scatter, %d passing evaluations"
          % (key, sc.get("circle.pt", 0), ok))
    check(pr.get("circle.ev", 0) == ok, "record %s: %d points on the search plot, %d passing evaluations"
          % (key, pr.get("circle.ev", 0), ok))
    check(pr.get("line.fail", 0) == evals - ok, "record %s: %d failure marks, %d failed evaluations"
          % (key, pr.get("line.fail", 0), evals - ok))


def run_kt(kt, args):
    p = subprocess.run([kt, "report"] + args, capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "kt report %s exited %d:\n%s" % (" ".join(args), p.returncode, p.stderr))
    return p


def case_fixture(opts, chromium, tmp):
    cache, page = os.path.join(tmp, "cache"), os.path.join(tmp, "report.html")
    p = subprocess.run([opts.fixture, cache], capture_output=True, text=True, check=True)
    records = {}
    for line in p.stdout.splitlines():
        name, key, *counts = line.split()
        records[name] = (key, [int(c) for c in counts])
    r = run_kt(opts.kt, ["--cache-dir", cache, "-o", page])
    corrupt = records["corrupt"][0]
    check("kt: warning: cache record" in r.stderr and corrupt in r.stderr,
          "no warning about the corrupt record %s:\n%s" % (corrupt, r.stderr))
    dom = load(chromium, page)
    for name in ("main", "single", "allfail"):
        key, (evals, ok) = records[name]
        check_section(dom, key, evals, ok)
    check(corrupt not in dom.sections, "the corrupt record has a section")
    check(dom.sections[records["main"][0]]["x"] == "BLOCK", "the main record's scatter is not by BLOCK")
    screenshot(chromium, tmp, page)
    # --keys FILE: only those records (the page's text is enough here)
    keys, chosen = os.path.join(tmp, "report.keys"), os.path.join(tmp, "chosen.html")
    with open(keys, "w") as f:
        f.write("# two of the fixture's records\n%s\n\n  %s  \n" % (records["main"][0], records["single"][0]))
    run_kt(opts.kt, ["--cache-dir", cache, "--keys", keys, "-o", chosen])
    text = open(chosen).read()
    shown = sorted(name for name, (key, _) in records.items() if 'id="r-%s"' % key in text)
    check(shown == ["main", "single"], "--keys shows %s, not main and single" % shown)


def main_param(rec):
    """The rule of docs/report.md, written again: epsilon squared of log(time) by each parameter's
    values over the passing evaluations; the largest wins, the first on a tie."""
    params = [k[len("param."):] for k in rec["fields"] if k.startswith("param.")]
    rows = [(e["config"], math.log(e["time_us"])) for e in rec["evaluated"]
            if e.get("status") == "ok" and e.get("time_us", 0) > 0]
    n = len(rows)
    mean = sum(t for _, t in rows) / n if n else 0
    sst = sum((t - mean) ** 2 for _, t in rows)
    best, best_share = None, -math.inf
    for p in params:
        groups = {}
        for config, t in rows:
            groups.setdefault(json.dumps(config.get(p)), []).append(t)
        k = len(groups)
        if sst <= 0 or k < 2 or n <= k:
            continue
        ssb = sum(len(g) * (sum(g) / len(g) - mean) ** 2 for g in groups.values())
        share = (ssb - (k - 1) * max(0.0, sst - ssb) / (n - k)) / sst
        if share > best_share + 1e-12:
            best, best_share = p, share
    return best if best is not None else (params[0] if params else "configuration")


def case_cache(opts, chromium, tmp):
    page = os.path.join(tmp, "report.html")
    r = run_kt(opts.kt, ["--project-cache", opts.cache, "-o", page])
    check(r.stderr == "", "warnings on the committed cache:\n" + r.stderr)
    records = [json.load(open(f)) for f in sorted(glob.glob(os.path.join(opts.cache, "v1", "*", "*.json")))]
    check(records, "no records in " + opts.cache)
    dom = load(chromium, page)
    check(len(dom.sections) == len(records), "%d sections for %d records" % (len(dom.sections), len(records)))
    for rec in records:
        ev = rec.get("evaluated", [])
        check_section(dom, rec["key"], len(ev), sum(1 for e in ev if e.get("status") == "ok"))
        want = main_param(rec)
        got = dom.sections[rec["key"]]["x"]
        check(got == want, "record %s (%s %s): the scatter is by %s, the rule gives %s"
              % (rec["key"], rec["kernel"], rec["shape"], got, want))
    screenshot(chromium, tmp, page)


def find_chromium(given):
    for c in ([given] if given else []) + ["chromium", "chromium-browser", "google-chrome"]:
        path = shutil.which(c)
        if path:
            return path
    return None


def deep_dir(length):
    """A new directory in TMPDIR whose path is length characters or longer: (its top, itself)."""
    top = path = tempfile.mkdtemp(prefix="kt-report-deep-")
    while len(path) < length:
        path = os.path.join(path, "d" * max(1, min(64, length - len(path) - 1)))
    os.makedirs(path, exist_ok=True)
    return top, path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kt", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--chromium")
    ap.add_argument("--deep", type=int, default=0)
    ap.add_argument("case", choices=["fixture", "cache"])
    opts = ap.parse_args()
    exe = find_chromium(opts.chromium)
    if not exe:
        print("skipped: no Chromium (install the Debian package chromium) to load the report in")
        return SKIP
    top = None
    if opts.deep:
        top, deep = deep_dir(opts.deep)
        os.environ["TMPDIR"] = tempfile.tempdir = deep
        os.chdir(deep)
        print("in %s (%d characters)" % (deep, len(deep)))
    tmp = tempfile.mkdtemp(prefix="kt-report-test-")
    chromium = Chromium(exe)
    try:
        {"fixture": case_fixture, "cache": case_cache}[opts.case](opts, chromium, tmp)
    except Fail as e:
        print("FAIL: %s (files kept in %s)" % (e, tmp))
        return 1
    finally:
        chromium.close()
    shutil.rmtree(top or tmp, ignore_errors=True)
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
