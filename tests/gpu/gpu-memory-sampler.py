#!/usr/bin/env python3
"""Samples GPU memory with nvidia-smi until stopped (SIGTERM or SIGINT), one line a sample:

    <unix seconds> <GPU memory used, MiB> <pid>=<MiB>=<name>,<pid>=<MiB>=<name>,...

the name the process's /proc/PID/comm (python3, autokernel), else nvidia-smi's process name; the
per-process part empty where nvidia-smi shows no process (in a container with its own PID
namespace it may show none). Every sample is flushed at once, so a sampler killed with the
run still leaves every line it took.

usage: tests/gpu/gpu-memory-sampler.py OUT_FILE [--device N] [--interval-s S]   (default 0, 0.5)
"""
import re
import signal
import subprocess
import sys
import time


def query(args):
    """nvidia-smi's CSV rows (no header, no units) for the query, [] when it fails."""
    try:
        text = subprocess.run(["nvidia-smi"] + args + ["--format=csv,noheader,nounits"], capture_output=True,
                              text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [[f.strip() for f in line.split(",")] for line in text.splitlines() if line.strip()]


def process_name(pid, reported):
    """A name without spaces, commas or '=': /proc's comm where the PID is ours to see."""
    try:
        with open("/proc/%s/comm" % pid) as f:
            name = f.read().strip()
    except OSError:
        name = reported.rsplit("/", 1)[-1]
    return re.sub(r"[\s,=]", "_", name) or "?"


def sample(device):
    total = query(["-i", str(device), "--query-gpu=memory.used"])
    apps = query(["-i", str(device), "--query-compute-apps=pid,used_memory,process_name"])
    used = total[0][0] if total and total[0] and total[0][0].isdigit() else "?"
    per_pid = ",".join("%s=%s=%s" % (a[0], a[1], process_name(a[0], a[2])) for a in apps
                       if len(a) >= 3 and a[0].isdigit() and a[1].isdigit())
    return "%.2f %s %s" % (time.time(), used, per_pid)


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        sys.stderr.write(__doc__)
        return 2
    device, interval = 0, 0.5
    rest = argv[2:]
    while rest:
        if rest[0] == "--device" and len(rest) > 1:
            device = int(rest[1])
        elif rest[0] == "--interval-s" and len(rest) > 1:
            interval = float(rest[1])
        else:
            sys.stderr.write("gpu-memory-sampler: unknown argument %r\n%s" % (rest[0], __doc__))
            return 2
        rest = rest[2:]
    running = {"on": True}

    def stop(*_):
        running["on"] = False
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with open(argv[1], "a", buffering=1) as out:
        while running["on"]:
            started = time.time()
            out.write(sample(device) + "\n")
            time.sleep(max(0.0, interval - (time.time() - started)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
