#!/usr/bin/env python3
"""A scripted fake of an OpenAI-compatible chat-completions server, for kt's agent tests.

It listens on 127.0.0.1 (a free port, written to --port-file), answers each
POST .../chat/completions with the next step of the script, and appends one JSON line per
request to --log: its number, arrival time (monotonic seconds), path, whether the bearer key
matched the one in $FAKE_OPENAI_EXPECT_KEY ("match", "mismatch" or "missing"; the key itself is
never written) and the request's JSON body.

Script (JSON): {"replies": [STEP, ...]}.  A STEP may have:
  status         HTTP status (default 200)
  content        the assistant message (a chat.completion body is built around it)
  content_file   the same, read from a file (relative to the script); "fence": "cuda" wraps it
                 in a ```cuda block after a line of prose
  body           the raw response body instead (e.g. malformed JSON)
  headers        extra response headers, e.g. {"Retry-After": "2"}
  delay          seconds to wait before answering
  finish_reason  default "stop"
  usage          default: prompt_tokens = request bytes / 4, completion_tokens = content bytes / 4
A request beyond the script gets a 500 that says so.  The server exits on SIGTERM or after
--idle-exit seconds without a request.
"""
import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def load_script(path):
    with open(path, encoding="utf-8") as f:
        script = json.load(f)
    base = os.path.dirname(os.path.abspath(path))
    for step in script["replies"]:
        if "content_file" in step:
            with open(os.path.join(base, step["content_file"]), encoding="utf-8") as f:
                text = f.read()
            if step.get("fence"):
                text = "Here is the template.\n\n```%s\n%s```\n" % (step["fence"], text)
            step["content"] = text
    return script["replies"]


class State:
    def __init__(self, replies, log_path, expect_key):
        self.replies = replies
        self.log_path = log_path
        self.expect_key = expect_key
        self.count = 0
        self.lock = threading.Lock()
        self.last = time.monotonic()

    def next(self, record):
        with self.lock:
            n = self.count
            self.count += 1
            self.last = time.monotonic()
            record["n"] = n
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
            return self.replies[n] if n < len(self.replies) else None


def completion_body(step, request_len):
    content = step.get("content", "")
    usage = step.get("usage") or {
        "prompt_tokens": request_len // 4,
        "completion_tokens": len(content) // 4,
    }
    usage.setdefault("total_tokens", usage["prompt_tokens"] + usage["completion_tokens"])
    return json.dumps({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fake-model",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": step.get("finish_reason", "stop"),
        }],
        "usage": usage,
    })


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):  # quiet: the test reads the JSON log
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            auth = self.headers.get("Authorization")
            if auth is None:
                auth_state = "missing"
            elif state.expect_key and auth == "Bearer " + state.expect_key:
                auth_state = "match"
            else:
                auth_state = "mismatch"
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            record = {"time": time.monotonic(), "path": self.path, "auth": auth_state, "body": body}
            step = state.next(record)
            if step is None:
                step = {"status": 500, "body": json.dumps({"error": {"message": "fake server: script exhausted"}})}
            if not self.path.endswith("/chat/completions"):
                step = {"status": 404, "body": json.dumps({"error": {"message": "no such path"}})}
            if step.get("delay"):
                time.sleep(step["delay"])
            status = step.get("status", 200)
            if "body" in step:
                out = step["body"]
            elif status == 200:
                out = completion_body(step, len(raw))
            else:
                out = json.dumps({"error": {"message": "fake server status %d" % status}})
            data = out.encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in step.get("headers", {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test)

    return Handler


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--idle-exit", type=float, default=120.0)
    args = ap.parse_args()
    state = State(load_script(args.script), args.log, os.environ.get("FAKE_OPENAI_EXPECT_KEY", ""))
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())

    def watchdog():
        while True:
            time.sleep(0.5)
            if time.monotonic() - state.last > args.idle_exit:
                server.shutdown()
                return

    threading.Thread(target=watchdog, daemon=True).start()
    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
