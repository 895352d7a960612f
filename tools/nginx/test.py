#!/usr/bin/env python3
"""tools/nginx/test.py - nginx on ktimer beside stock nginx, with real sockets.

    tools/nginx/test.py STOCK_NGINX KTIMER_NGINX

For each binary, on loopback (a free port picked at runtime, retried if
lost), one worker:

  serves            GET answers 200 with the configured body
  keepalive         an idle keep-alive connection is closed keepalive_timeout
                    after its response
  keepalive burst   300 idle keep-alive connections expire together (the
                    ktimer binary with a run limit of 8 handlers per pass):
                    all close, none early, the last within the bound
  header            a request head left unfinished is dropped
                    client_header_timeout after its first bytes
  body              a request body left unfinished is dropped (408 in the
                    access log) client_body_timeout after its last bytes
  send              a client that stops reading is dropped send_timeout after
                    the response stalled ($request_time in the access log)
  proxy_read        an upstream that accepts and never answers: 504 after
                    proxy_read_timeout
  proxy_connect     an upstream whose accept queue is full: 504 after
                    proxy_connect_timeout
  lingering         a lingering close ends lingering_timeout after the
                    response: a byte sent just before is read, one sent after
                    is answered with a reset
  quit idle         SIGQUIT closes idle keep-alive connections at once
  quit in flight    SIGQUIT waits for a response in flight to be sent whole,
                    then the server exits

Every timeout here is T = 1 s. "Within nginx's bounds": not before T (less
50 ms, the gap between nginx's cached clock and the client's stopwatch), and
not after T + T/8 + 400 ms: the timer wheel rounds a 1 s timer up by at most
64 ms (one bucket of its level at 1 ms resolution; under 1/8 of any delay
of a second or more),
and the rest is scheduling on a shared machine. Both binaries must meet it;
the measured times are printed side by side. Every loop is bounded in count
and time. Exit status 0 if every check passed for both binaries.

The test does not depend on the environment it inherits: the files nginx
serves are written with explicit modes (not the umask's), and a master
started as root runs its worker as the current user rather than nobody (who
may be unable to read them). A failed check prints, after the table, the
status line nginx answered and the end of each nginx's error log.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import launch

T = 1.0
EARLY = 0.05
LATE = T / 8 + 0.4

# The server's locations; dead and up are the ports of the body check's
# upstream (nothing listens there) and of the proxy checks' upstream.
LOCATIONS = [
    'location = / { default_type text/plain; return 200 "served\\n"; }',
    'location = /big { default_type application/octet-stream; }',
    'location = /upload { client_max_body_size 10m; proxy_pass http://127.0.0.1:%(dead)d; }',
    'location = /upstream { proxy_pass http://127.0.0.1:%(up)d; proxy_connect_timeout 1s; proxy_read_timeout 1s; }',
]

BIG = 16 * 1024 * 1024

# The nginx instances the running check started (main() prints their error
# logs when it fails).
STARTED = []


class Nginx:
    def __init__(self, binary, ka="1s", send="1s", linger="on", run_limit=None, upstream=None):
        self.binary = binary
        self.errlog = ""
        self.proc = None
        STARTED.append(self)
        # Explicit modes, whatever the umask: the worker reads html/ (and
        # is another user if `user` is ignored or changed).
        self.work = tempfile.mkdtemp(prefix="ktimer-nginx-")
        os.chmod(self.work, 0o755)
        for d in ("logs", "html"):
            os.mkdir(os.path.join(self.work, d))
            os.chmod(os.path.join(self.work, d), 0o755)
        big = os.path.join(self.work, "html", "big")
        with open(os.open(big, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), "wb") as f:
            f.write(b"x" * BIG)
        os.chmod(big, 0o644)
        env = dict(os.environ)
        if run_limit is not None:
            env["KTIMER_RUN_LIMIT"] = str(run_limit)
        ports = {"dead": launch.free_port(), "up": upstream or launch.free_port()}
        self.proc, self.port = launch.start_nginx(
            binary, self.work, env=env, error_log="notice", keepalive=ka,
            access_log="$msec $request_time $status $bytes_sent $request_uri",
            http=["sendfile off;", "client_header_timeout 1s;", "client_body_timeout 1s;", "send_timeout %s;" % send,
                  "lingering_close %s;" % linger, "lingering_timeout 1s;"],
            locations=[l % ports for l in LOCATIONS])

    def connect(self, rcvbuf=None):
        s = socket.socket()
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.connect(("127.0.0.1", self.port))
        return s

    def access_log(self):
        try:
            with open(os.path.join(self.work, "access.log")) as f:
                return f.read().splitlines()
        except OSError:
            return []

    def error_log(self):
        try:
            with open(os.path.join(self.work, "error.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        launch.stop(self.proc)

    def cleanup(self):
        self.stop()
        self.errlog = self.error_log()  # kept for main()'s failure report
        shutil.rmtree(self.work, ignore_errors=True)


def status_line(s, timeout=1.0):
    """The first line of what nginx sent on @s (already buffered), for a
    failure's message."""
    s.settimeout(timeout)
    try:
        head = s.recv(512)
    except OSError as e:
        return "(nothing read: %s)" % e
    if not head:
        return "(connection closed, nothing sent)"
    return repr(head.split(b"\r\n", 1)[0].decode("latin-1"))


def read_response(s, timeout=5.0):
    """One response (Content-Length framed); returns (status, body)."""
    s.settimeout(timeout)
    buf = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        he = buf.find(b"\r\n\r\n")
        if he >= 0:
            head = buf[:he].decode("latin-1")
            m = re.search(r"(?im)^content-length:\s*(\d+)", head)
            n = int(m.group(1)) if m else 0
            if len(buf) >= he + 4 + n:
                return int(head.split()[1]), buf[he + 4:he + 4 + n]
        b = s.recv(65536)
        if not b:
            break
        buf += b
    raise RuntimeError("no complete response (got %d bytes)" % len(buf))


def wait_eof(s, limit):
    """Seconds until the peer closes (EOF or reset), read data discarded."""
    t0 = time.monotonic()
    s.settimeout(limit)
    try:
        while time.monotonic() - t0 < limit:
            if not s.recv(65536):
                break
    except ConnectionResetError:
        pass
    except socket.timeout:
        raise RuntimeError("still open after %.1f s" % limit)
    return time.monotonic() - t0


# ---- the checks: each returns (measured seconds or None, detail) -----------


def t_serves(binary):
    n = Nginx(binary)
    try:
        s = n.connect()
        s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        st, body = read_response(s)
        s.close()
        if (st, body) != (200, b"served\n"):
            raise RuntimeError("answer %r %r" % (st, body))
        return None, "200 served"
    finally:
        n.cleanup()


def t_keepalive(binary):
    n = Nginx(binary)
    try:
        s = n.connect()
        s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        read_response(s)
        return wait_eof(s, 5 * T), "idle after the response"
    finally:
        n.cleanup()


def t_keepalive_burst(binary):
    """300 idle connections expiring together, the ktimer binary with a run
    limit of 8 handlers per pass: every one closes, within the bound."""
    n = Nginx(binary, run_limit=8)
    conns = []
    try:
        sent = []
        for _ in range(300):
            s = n.connect()
            sent.append(time.monotonic())
            s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            conns.append(s)
        got = []
        for s in conns:
            read_response(s)
            got.append(time.monotonic())
        # nginx arms each keep-alive timer between the request's arrival and
        # its response: earliness is measured from the request, lateness
        # from the response. Closes are seen in order, each at most a little
        # after it happened, which only errs towards late.
        worst_early, worst_late = 0.0, 0.0
        for s, t_sent, t_got in zip(conns, sent, got):
            s.settimeout(max(0.05, t_got + 5 * T - time.monotonic()))
            try:
                while s.recv(65536):
                    pass
            except ConnectionResetError:
                pass
            except socket.timeout:
                raise RuntimeError("a connection still open 5 s after its response")
            now = time.monotonic()
            worst_early = min(worst_early, now - t_sent - T)
            worst_late = max(worst_late, now - t_got - T)
        if worst_early < -EARLY:
            raise RuntimeError("one closed %.3f s early" % -worst_early)
        return T + worst_late, "300 connections, all closed; the latest"
    finally:
        for s in conns:
            s.close()
        n.cleanup()


def t_header(binary):
    n = Nginx(binary)
    try:
        s = n.connect()
        s.sendall(b"GET / HTTP/1.1\r\nHost:")
        return wait_eof(s, 5 * T), "head unfinished"
    finally:
        n.cleanup()


def t_body(binary):
    n = Nginx(binary)
    try:
        s = n.connect()
        s.sendall(b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n" + b"a" * 100)
        dt = wait_eof(s, 5 * T)  # nginx drops the connection without an answer
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and not n.access_log():
            time.sleep(0.02)
        lines = n.access_log()
        if not lines or lines[-1].split()[2] != "408":
            raise RuntimeError("not logged as 408: %r" % lines)
        return dt, "408 logged, closed"
    finally:
        n.cleanup()


def t_send(binary):
    n = Nginx(binary)
    try:
        s = n.connect(rcvbuf=4096)
        s.sendall(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
        # Read nothing; nginx's writes stall at once. Wait for its log line.
        deadline = time.monotonic() + 5 * T
        while time.monotonic() < deadline:
            lines = [l for l in n.access_log() if l.endswith("/big")]
            if lines:
                f = lines[0].split()
                if f[2] != "200":
                    raise RuntimeError("answered %s (status %s, %s bytes) instead of streaming /big"
                                       % (status_line(s), f[2], f[3]))
                if int(f[3]) >= BIG:
                    raise RuntimeError("the whole response was sent")
                return float(f[1]), "$request_time, %s bytes sent of %d" % (f[3], BIG)
            time.sleep(0.02)
        raise RuntimeError("not logged within %.1f s" % (5 * T))
    finally:
        n.cleanup()


def upstream_timeout(binary, accepting):
    """A local upstream that stalls: it accepts and never answers
    (proxy_read_timeout), or its accept queue is full so the connect hangs
    (proxy_connect_timeout). nginx answers 504 after the timeout."""
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(0 if not accepting else 16)
    held = []
    try:
        if not accepting:
            # Fill the accept queue (never accepted): later SYNs are dropped.
            for _ in range(4):
                c = socket.socket()
                c.setblocking(False)
                try:
                    c.connect(ls.getsockname())
                except BlockingIOError:
                    pass
                held.append(c)
            time.sleep(0.2)
        n = Nginx(binary, upstream=ls.getsockname()[1])
        try:
            s = n.connect()
            t0 = time.monotonic()
            s.sendall(b"GET /upstream HTTP/1.1\r\nHost: t\r\n\r\n")
            st, _ = read_response(s, 5 * T)
            dt = time.monotonic() - t0
            s.close()
            if st != 504:
                raise RuntimeError("answer %d, want 504" % st)
            return dt, "504 from a stalled upstream"
        finally:
            n.cleanup()
    finally:
        for c in held:
            c.close()
        ls.close()


def t_proxy_read(binary):
    return upstream_timeout(binary, True)


def t_proxy_connect(binary):
    return upstream_timeout(binary, False)


def t_lingering(binary):
    """Before: a byte sent at T - 150 ms is read (no reset); after: a byte
    sent at T + T/8 + 400 ms meets a closed socket (reset)."""
    res = []
    for probe in (T - 0.15, T + LATE):
        n = Nginx(binary, ka="0", linger="always")
        try:
            s = n.connect()
            s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            read_response(s)
            t0 = time.monotonic()
            time.sleep(max(0.0, probe - (time.monotonic() - t0)))
            reset = False
            try:
                s.sendall(b"z")
                time.sleep(0.1)
                s.settimeout(1.0)
                while s.recv(65536):
                    pass
                s.sendall(b"z")  # a reset to the first arrives by now
                time.sleep(0.05)
                s.recv(1)
            except (ConnectionResetError, BrokenPipeError):
                reset = True
            except socket.timeout:
                pass
            res.append(reset)
        finally:
            n.cleanup()
    if res[0]:
        raise RuntimeError("closed before lingering_timeout (reset at %.2f s)" % (T - 0.15))
    if not res[1]:
        raise RuntimeError("still lingering at %.2f s" % (T + LATE))
    return None, "open at %.2f s, closed by %.2f s" % (T - 0.15, T + LATE)


def t_quit_idle(binary):
    n = Nginx(binary, ka="60s")
    try:
        conns = []
        for _ in range(5):
            s = n.connect()
            s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            read_response(s)
            conns.append(s)
        t0 = time.monotonic()
        n.proc.send_signal(signal.SIGQUIT)
        for s in conns:
            s.settimeout(max(0.1, 2.0 - (time.monotonic() - t0)))
            try:
                if s.recv(1):
                    raise RuntimeError("data after SIGQUIT")
            except socket.timeout:
                raise RuntimeError("an idle keep-alive connection still open 2 s after SIGQUIT")
            except ConnectionResetError:
                pass
        dt = time.monotonic() - t0
        n.proc.wait(5)
        if dt > 0.5:
            raise RuntimeError("idle connections closed only after %.2f s" % dt)
        return dt, "5 idle connections closed"
    finally:
        n.cleanup()


def t_quit_inflight(binary):
    n = Nginx(binary, ka="60s", send="10s")
    try:
        s = n.connect(rcvbuf=4096)
        s.sendall(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
        time.sleep(0.2)
        n.proc.send_signal(signal.SIGQUIT)
        time.sleep(1.5)
        if n.proc.poll() is not None:
            raise RuntimeError("exited with a response in flight (nginx sent %s)" % status_line(s))
        got = 0
        head = b""
        s.settimeout(5.0)
        deadline = time.monotonic() + 20
        try:
            while time.monotonic() < deadline:
                b = s.recv(1 << 20)
                if not b:
                    break
                if len(head) < 512:
                    head += b[:512]
                got += len(b)
        except (socket.timeout, ConnectionResetError) as e:
            raise RuntimeError("response cut after %d bytes (%s; status line %r)"
                               % (got, e, head.split(b"\r\n", 1)[0].decode("latin-1")))
        status = head.split(b"\r\n", 1)[0].decode("latin-1")
        if not status.startswith("HTTP/1.1 200 "):
            raise RuntimeError("answered %r (%d bytes) instead of the whole of /big" % (status, got))
        if got < BIG:
            raise RuntimeError("response cut after %d bytes (status line %r)" % (got, status))
        t0 = time.monotonic()
        try:
            n.proc.wait(5)
        except subprocess.TimeoutExpired:
            raise RuntimeError("still running 5 s after the response was sent")
        return time.monotonic() - t0, "whole response, then exit"
    finally:
        n.cleanup()


CHECKS = [
    ("serves", t_serves, False),
    ("keepalive_timeout", t_keepalive, True),
    ("keepalive_timeout, 300 at once (run limit 8)", t_keepalive_burst, True),
    ("client_header_timeout", t_header, True),
    ("client_body_timeout", t_body, True),
    ("send_timeout", t_send, True),
    ("proxy_read_timeout", t_proxy_read, True),
    ("proxy_connect_timeout", t_proxy_connect, True),
    ("lingering_timeout", t_lingering, False),
    ("SIGQUIT, idle keep-alive", t_quit_idle, False),
    ("SIGQUIT, response in flight", t_quit_inflight, False),
]


def current_umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    bins = {"stock": sys.argv[1], "ktimer": sys.argv[2]}
    failed = 0
    reports = []
    print("| check | stock nginx | nginx on ktimer |")
    print("|---|---|---|")
    for name, fn, bounded in CHECKS:
        cells = []
        for kind in ("stock", "ktimer"):
            del STARTED[:]
            try:
                dt, detail = fn(bins[kind])
                if bounded and not (T - EARLY <= dt <= T + LATE):
                    raise RuntimeError("%.3f s, outside [%.3f, %.3f]" % (dt, T - EARLY, T + LATE))
                cells.append(("ok %.3f s (%s)" % (dt, detail)) if dt is not None else "ok (%s)" % detail)
            except Exception as e:  # one failed check must not stop the others
                failed += 1
                cells.append("FAILED: %s" % e)
                reports.append((name, kind, e, [(n.binary, n.errlog or n.error_log()) for n in STARTED]))
        print("| %s | %s | %s |" % (name, cells[0], cells[1]), flush=True)
    print()
    for name, kind, e, logs in reports:
        print("%s, %s nginx: FAILED: %s" % (name, kind, e))
        print("  (running as uid %d, umask %03o)" % (os.geteuid(), current_umask()))
        for binary, text in logs:
            # Its complaints (warn and worse), else its last lines.
            lines = text.splitlines()
            bad = [l for l in lines if re.search(r"\[(warn|error|crit|alert|emerg)\]", l)]
            show = bad[-20:] if bad else lines[-10:]
            print("  %s error.log: %d of %d lines (%s):" % (binary, len(show), len(lines),
                                                          "warn and worse" if bad else "the last; no warning"))
            for l in show:
                print("    " + l)
        print()
    print("%d checks failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
