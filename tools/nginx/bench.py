#!/usr/bin/env python3
"""tools/nginx/bench.py - stock nginx against nginx on ktimer.

    tools/nginx/bench.py STOCK_NGINX KTIMER_NGINX [--only PART,...] [--runs N]
                         [--secs S] [--quick]

Prints Markdown tables (BENCHMARKS.md "nginx 1.22.1 on ktimer" keeps them).
PART is throughput, memory, instructions or storm (default: all four, in
that order); --runs is the rounds of throughput and storm (default 3),
--secs each wrk run's length (default 5); --quick is a one-minute smoke run
of all four, not a measurement.

  throughput   wrk, 2 threads, S s, keep-alive, `return 200` of 6 bytes:
               requests/s at 100, 1,000 and 10,000 connections, 1 and 2
               workers. Each row runs N rounds; a round runs both binaries,
               each a fresh nginx with a 1 s warm-up, and the order
               alternates from round to round (stock first in even rounds,
               ktimer first in odd ones). Per row: each binary's median and
               min-max over the rounds, and the median and min-max of the
               per-round ratios ktimer / stock, with the rounds in which
               ktimer was faster; the 1-minute load average is printed
               before the first row and after the last
  memory       N idle keep-alive connections (one request each): the
               workers' VmRSS before and with them, and the difference per
               connection, at 10,000 and 50,000
  instructions callgrind, master_process off: instructions per request in
               the timer code (the timer module's files, nginx's rbtree for
               stock, ktimer's lib/ and headers), and in all of nginx,
               10,000 requests on 50 keep-alive connections, and on 1,000
  storm        one worker, keepalive_timeout 2s: 10,000 connections opened
               as fast as the client can, one request each, then idle; one
               more client sends a GET every millisecond on its own
               connection; its latency (p50, p99, max) from 1 s before the
               first expiry to 1 s after the last; stock, ktimer with its
               default run limit (128 handlers per pass) and ktimer with no
               limit (KTIMER_RUN_LIMIT=0), interleaved

Connections come from several loopback source addresses (127.0.0.2-9) so
50,000 fit in the ephemeral port range. RLIMIT_NOFILE is raised to its hard
limit; where that is below what one process needs (20,000 on the benchmark
machine, without CAP_SYS_RESOURCE), the 50,000 row uses 4 workers with
`reuseport` (the kernel spreads connections evenly) and 4 client processes,
and sums the workers' VmRSS.
"""
import os
import re
import resource
import signal
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import launch

REQ = b"GET / HTTP/1.1\r\nHost: b\r\n\r\n"


class Nginx:
    def __init__(self, binary, workers=1, ka="75s", master=True, run_limit=None, wrap=None, reuseport=False):
        self.work = tempfile.mkdtemp(prefix="ktimer-nginx-bench-")
        os.chmod(self.work, 0o755)
        env = dict(os.environ)
        if run_limit is not None:
            env["KTIMER_RUN_LIMIT"] = str(run_limit)
        try:
            self.proc, self.port = launch.start_nginx(
                binary, self.work, env=env, wrap=wrap, timeout=30.0 if wrap else 5.0, settle=0.2, workers=workers,
                nofile=resource.getrlimit(resource.RLIMIT_NOFILE)[1], connections=65536, master=master, keepalive=ka,
                http=["keepalive_requests 1000000;"], listen=" backlog=65535" + (" reuseport" if reuseport else ""),
                locations=['location = / { default_type text/plain; return 200 "hello\\n"; }'])
        except RuntimeError:
            shutil.rmtree(self.work, ignore_errors=True)
            raise

    def workers(self):
        try:
            with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def rss_kb(self):
        total = 0
        for pid in self.workers() or [self.proc.pid]:
            with open("/proc/%d/status" % pid) as f:
                total += int(re.search(r"VmRSS:\s*(\d+)", f.read()).group(1))
        return total

    def stop(self, sig=signal.SIGTERM, wait=10):
        launch.stop(self.proc, sig, wait)
        shutil.rmtree(self.work, ignore_errors=True)


def dial(port, i):
    s = socket.socket()
    s.bind(("127.0.0.%d" % (2 + i % 8), 0))
    s.connect(("127.0.0.1", port))
    return s


def read_one(s):
    buf = b""
    while True:
        b = s.recv(4096)
        if not b:
            raise RuntimeError("closed")
        buf += b
        he = buf.find(b"\r\n\r\n")
        if he >= 0:
            m = re.search(rb"(?i)content-length:\s*(\d+)", buf[:he])
            if len(buf) >= he + 4 + int(m.group(1)):
                return


def open_idle(port, n):
    """n connections, one request each, left idle; pipelined in chunks."""
    conns = []
    chunk = 500
    for base in range(0, n, chunk):
        part = [dial(port, base + i) for i in range(min(chunk, n - base))]
        for s in part:
            s.sendall(REQ)
        for s in part:
            read_one(s)
        conns.extend(part)
    return conns


def machine():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    get = lambda k: (re.search(r"(?m)^%s:\s*(.*)$" % re.escape(k), out) or [None, "not reported"])[1].strip()
    return "%s, %d cores, L2 %s, L3 %s, kernel %s" % (get("Model name"), os.cpu_count(), get("L2 cache"),
                                                      get("L3 cache"), os.uname().release)


# ---- throughput ---------------------------------------------------------------


def wrk(port, conns, secs):
    """(requests/s, socket errors) of one wrk run; (None, why) if it served nothing."""
    out = subprocess.run(["wrk", "-t2", "-c%d" % conns, "-d%ds" % secs, "http://127.0.0.1:%d/" % port],
                         capture_output=True, text=True)
    m = re.search(r"Requests/sec:\s*([\d.]+)", out.stdout)
    errs = re.search(r"Socket errors: (.*)", out.stdout)
    if not m or float(m.group(1)) == 0.0:
        return None, "exit %d: %s" % (out.returncode, " ".join((out.stderr + out.stdout).split())[-200:])
    return float(m.group(1)), (errs.group(1) if errs else "")


def spread(xs, fmt):
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(xs), min(xs), max(xs))


def load_average():
    return "%.2f" % os.getloadavg()[0]


def bench_throughput(bins, runs, secs, levels):
    print("### Throughput (wrk -t2 -d%ds, keep-alive; requests/s; %d rounds per row, the order alternating"
          " each round)" % (secs, runs))
    print()
    print("1-minute load average before the first row: %s" % load_average())
    print()
    print("| workers | connections | stock nginx, median (min-max) | nginx on ktimer, median (min-max) |"
          " ktimer / stock, median of per-round ratios (min-max) | rounds ktimer faster |")
    print("|---|---|---|---|---|---|")
    for workers in (1, 2):
        for conns in levels:
            res = {"stock": [None] * runs, "ktimer": [None] * runs}
            notes = set()
            for r in range(runs):
                # Alternating (stock, ktimer), (ktimer, stock), ...: neither
                # binary always runs first or right after the other.
                for kind in (("stock", "ktimer") if r % 2 == 0 else ("ktimer", "stock")):
                    n = Nginx(bins[kind], workers=workers)
                    try:
                        wrk(n.port, min(conns, 100), 1)  # warm-up
                        rps, errs = wrk(n.port, conns, secs)
                        res[kind][r] = rps
                        if rps is None:
                            notes.add("%s round %d served nothing (%s)" % (kind, r + 1, errs))
                        elif errs:
                            notes.add("%s: wrk socket errors: %s" % (kind, errs))
                    finally:
                        n.stop()
            # A run that served nothing is reported, not counted; a ratio
            # needs both runs of its round.
            ok = {kind: [x for x in xs if x is not None] for kind, xs in res.items()}
            ratios = [k / s for s, k in zip(res["stock"], res["ktimer"]) if s is not None and k is not None]
            cell = lambda xs, fmt: spread(xs, fmt) if xs else "n/a"
            print("| %d | %d | %s | %s | %s | %d of %d |%s" % (
                workers, conns, cell(ok["stock"], "%.0f"), cell(ok["ktimer"], "%.0f"), cell(ratios, "%.3f"),
                sum(1 for x in ratios if x > 1.0), len(ratios),
                (" " + "; ".join(sorted(notes))) if notes else ""), flush=True)
    print()
    print("1-minute load average after the last row: %s" % load_average())
    print()


# ---- memory -------------------------------------------------------------------


HOLD = r"""
import sys
sys.path.insert(0, sys.argv[3])
from bench import open_idle
conns = open_idle(int(sys.argv[1]), int(sys.argv[2]))
print("ready", flush=True)
sys.stdin.read()
"""


def hold_idle(port, n, procs):
    """n idle connections held by `procs` client processes; returns them."""
    ps = [subprocess.Popen([sys.executable, "-c", HOLD, str(port), str(n // procs), os.path.dirname(__file__)],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(procs)]
    for p in ps:
        if p.stdout.readline().strip() != "ready":
            raise RuntimeError("a client could not open its connections")
    return ps


def bench_memory(bins, levels):
    fd_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    print("### Memory: the workers' VmRSS with N idle keep-alive connections (one request each)")
    print()
    print("| N | workers | stock: before -> with (kB) | per connection | ktimer: before -> with (kB) |"
          " per connection |")
    print("|---|---|---|---|---|---|")
    for n_conns in levels:
        workers = 1
        while n_conns // workers + 100 > fd_limit:
            workers *= 2
        cells = []
        for kind in ("stock", "ktimer"):
            n = Nginx(bins[kind], workers=workers, reuseport=workers > 1)
            try:
                # Every worker started and done initializing (nginx touches
                # its connection and event arrays at start).
                deadline = time.monotonic() + 10
                while len(n.workers()) < workers and time.monotonic() < deadline:
                    time.sleep(0.1)
                time.sleep(1.0)
                before = n.rss_kb()
                holders = hold_idle(n.port, n_conns, workers)
                time.sleep(0.5)
                after = n.rss_kb()
                for p in holders:
                    p.stdin.close()
                    p.wait()
                cells.append("%d -> %d | %.0f B" % (before, after, (after - before) * 1024.0 / n_conns))
            finally:
                n.stop()
        print("| %d | %d | %s | %s |" % (n_conns, workers, cells[0], cells[1]), flush=True)
    print()


# ---- instructions ---------------------------------------------------------------


def timer_file(path, kind):
    if kind == "stock":
        return path.endswith(("ngx_event_timer.c", "ngx_event_timer.h", "ngx_rbtree.c", "ngx_rbtree.h"))
    return path.endswith(("ngx_event_timer.c", "ngx_event_timer.h")) or "/ktimer/" in path or \
        re.search(r"(^|/)lib/[a-z_]+\.c$", path) is not None


def bench_instructions(bins, conns=50, per_conn=200):
    print("### Instructions per request (callgrind; %d requests on %d keep-alive connections,"
          " master_process off)" % (conns * per_conn, conns))
    print()
    print("| | timer code | of which nginx's own timer files | all of nginx |")
    print("|---|---|---|---|")
    for kind in ("stock", "ktimer"):
        out = tempfile.mktemp(prefix="callgrind-nginx-")
        n = Nginx(bins[kind], master=False,
                  wrap=["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out])
        try:
            cs = [dial(n.port, i) for i in range(conns)]
            for _ in range(per_conn):
                for s in cs:
                    s.sendall(REQ)
                for s in cs:
                    read_one(s)
            for s in cs:
                s.close()
            time.sleep(0.5)
        finally:
            n.stop(signal.SIGQUIT, wait=60)
        ann = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", out],
                             capture_output=True, text=True).stdout
        os.unlink(out)
        total = timer = own = 0
        for line in ann.splitlines():
            m = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S+):(\S+)", line)
            if not m:
                continue
            ir = int(m.group(1).replace(",", ""))
            path = m.group(2)
            if "PROGRAM TOTALS" in line:
                continue
            total += ir
            if timer_file(path, kind):
                timer += ir
                if "ngx_event_timer" in path:
                    own += ir
        r = float(conns * per_conn)
        print("| %s | %.0f | %.0f | %.0f |" % ("stock nginx" if kind == "stock" else "nginx on ktimer",
                                               timer / r, own / r, total / r), flush=True)
    print()


# ---- storm ----------------------------------------------------------------------

ACTIVE = r"""
import socket, sys, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
req = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
end = time.monotonic() + secs
nxt = time.monotonic()
out = []
while time.monotonic() < end:
    t0 = time.monotonic()
    s.sendall(req)
    buf = b""
    while not buf.endswith(b"hello\n"):
        b = s.recv(4096)
        if not b:
            raise SystemExit("closed")
        buf += b
    t1 = time.monotonic()
    out.append("%.6f %.6f" % (t0, t1 - t0))
    nxt += 0.001
    d = nxt - time.monotonic()
    if d > 0:
        time.sleep(d)
    else:
        nxt = time.monotonic()
print("\n".join(out))
"""


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def storm_once(binary, run_limit, n_idle, ka=2.0):
    n = Nginx(binary, workers=1, ka="%gs" % ka, run_limit=run_limit)
    try:
        secs = 1.5 + 2.5 + ka
        active = subprocess.Popen([sys.executable, "-c", ACTIVE, str(n.port), str(secs)], stdout=subprocess.PIPE,
                                  text=True)
        time.sleep(1.0)
        t_open = time.monotonic()
        conns = open_idle(n.port, n_idle)
        t_opened = time.monotonic()
        out, _ = active.communicate(timeout=secs + 30)
        closed = 0
        for s in conns:
            s.setblocking(False)
            try:
                if s.recv(1) == b"":
                    closed += 1
            except (BlockingIOError, ConnectionResetError):
                pass
            s.close()
        lat = [float(b) for a, b in (l.split() for l in out.splitlines())
               if t_open + ka - 1.0 <= float(a) <= t_opened + ka + 1.0]
        return lat, t_opened - t_open, closed
    finally:
        n.stop()


def bench_storm(bins, runs, n_idle):
    print("### An active client's latency while %d idle keep-alive connections expire together"
          " (one worker, keepalive_timeout 2s; ms, worst of %d interleaved runs' p50 / p99 / max)" % (n_idle, runs))
    print()
    print("| server | p50 | p99 | max | requests in the window | idle connections closed | opened in |")
    print("|---|---|---|---|---|---|---|")
    cases = [("stock nginx", bins["stock"], None), ("nginx on ktimer, run limit 128", bins["ktimer"], None),
             ("nginx on ktimer, no run limit", bins["ktimer"], 0)]
    res = {c[0]: [] for c in cases}
    for _ in range(runs):
        for name, b, lim in cases:
            res[name].append(storm_once(b, lim, n_idle))
    for name, _, _ in cases:
        rs = res[name]
        print("| %s | %.2f | %.2f | %.2f | %d | %s | %s |" % (
            name, max(pct(r[0], 50) for r in rs) * 1e3, max(pct(r[0], 99) for r in rs) * 1e3,
            max(max(r[0]) for r in rs) * 1e3, min(len(r[0]) for r in rs),
            " / ".join(str(r[2]) for r in rs), " / ".join("%.2f s" % r[1] for r in rs)), flush=True)
    print()


PARTS = ("throughput", "memory", "instructions", "storm")


def main():
    args = sys.argv[1:]
    opts = {"--runs": "3", "--secs": "5", "--only": ",".join(PARTS)}
    pos = []
    i = 0
    while i < len(args):
        if args[i] in opts and i + 1 < len(args):
            opts[args[i]] = args[i + 1]
            i += 2
        elif args[i] == "--quick":
            opts["--quick"] = True
            i += 1
        elif args[i].startswith("--"):
            sys.exit("unknown option %s\n%s" % (args[i], __doc__))
        else:
            pos.append(args[i])
            i += 1
    only = opts["--only"].split(",")
    if len(pos) != 2 or any(p not in PARTS for p in only):
        sys.exit(__doc__)
    runs, secs = int(opts["--runs"]), int(opts["--secs"])
    if runs < 1 or secs < 1:
        sys.exit("--runs and --secs must be at least 1")
    bins = {"stock": pos[0], "ktimer": pos[1]}
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    print("machine: %s; %s" % (machine(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
    print()
    quick = "--quick" in opts
    if "throughput" in only:
        bench_throughput(bins, 1, 1, [100]) if quick else bench_throughput(bins, runs, secs, [100, 1000, 10000])
    if "memory" in only:
        bench_memory(bins, [2000, 30000] if quick else [10000, 50000])
    if "instructions" in only:
        if quick:
            bench_instructions(bins, 10, 20)
        else:
            bench_instructions(bins)
            bench_instructions(bins, 1000, 10)
    if "storm" in only:
        bench_storm(bins, 1, 1000) if quick else bench_storm(bins, runs, 10000)


if __name__ == "__main__":
    main()
