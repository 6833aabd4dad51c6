#!/usr/bin/env python3
"""A scripted OpenAI-compatible server on 127.0.0.1 for trying autokernel's LLM path without an
LLM: it answers /v1/chat/completions with real variants of the kernel file it was sent, some of
them broken, in a fixed rotation. Nothing leaves the machine.

usage: scripts/scripted-llm-server.py [PORT]     (default 8765)
"""
import json
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROTATION = [
    ("raise the vector width: 16-byte loads", lambda s: knob(s, "AK_VEC", lambda v: min(v * 2, 8))),
    ("does not compile: a typo", lambda s: s.replace("const float inv", "const flaot inv", 1)),
    ("more threads per block", lambda s: knob(s, "AK_THREADS", lambda v: min(v * 2, 1024))),
    ("skip the last element of each row (wrong)", lambda s: s.replace("i < cols; i += kRowThreads) yr[i]", "i < cols - 1; i += kRowThreads) yr[i]", 1)),
    (None, None),  # an answer without a code block
    ("raise the vector width again", lambda s: knob(s, "AK_VEC", lambda v: min(v * 2, 8))),
    ("fewer threads per block", lambda s: knob(s, "AK_THREADS", lambda v: max(v // 2, 64))),
]
calls = {"n": 0}


def knob(src, name, change):
    m = re.search(r"^#define %s (\d+)" % name, src, re.M)
    if not m:
        return src
    return src[: m.start(1)] + str(change(int(m.group(1)))) + src[m.end(1):]


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        user = body["messages"][-1]["content"]
        best = re.findall(r"```cuda\n(.*?)```", user, re.S)
        what, edit = ROTATION[calls["n"] % len(ROTATION)]
        calls["n"] += 1
        if edit is None or not best:
            text = "I would look at the memory access pattern first."
        else:
            text = "%s\n\n```cuda\n%s```\n" % (what, edit(best[-1]))
        reply = {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": len(user) // 4, "completion_tokens": len(text) // 4}}
        out = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, fmt, *args):
        sys.stderr.write("scripted-llm: " + fmt % args + "\n")


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
