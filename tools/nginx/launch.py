#!/usr/bin/env python3
"""tools/nginx/launch.py - start a server on loopback and wait until it answers.

The one launcher of the tools that start nginx or net/httpd:
tools/nginx/test.py, tools/nginx/bench.py and tools/check/protocol_compare.py
import it; tools/bench/server_compare.sh and tools/bench/storm.sh run it.
It also makes every nginx configuration they use (conf()).

nginx takes its port from its configuration, so a port is picked first
(bound to port 0, read, released) and written into the configuration;
another process can take it in between, in which case nginx cannot listen
and another port is tried, five in all. httpd listens on port 0 and prints
the port the kernel chose. Either is ready when the process it started holds
the socket listening on that port (read from /proc: a port taken by another
process does not count) and a connection to it succeeds; each start is
bounded in time.

From a shell, a start prints "PORT PID" (the server's pid) on one line and
stays the server's parent: signal this process (SIGTERM, SIGINT) to stop
the server, and wait for it.

    tools/nginx/launch.py nginx WORK [--binary NGINX] [--workers N]
        [--nofile N] [--connections N] [--keepalive T] [--error-log LEVEL]
        [--listen OPTIONS] [--http DIRECTIVE]...
    tools/nginx/launch.py httpd WORK HTTPD [ARGS...]

nginx runs with -p WORK and WORK/nginx.conf, its log in WORK/error.log;
httpd gets --port 0 before ARGS, its output in WORK/httpd.out and
WORK/httpd.err. A start that fails prints why on stderr and exits 1.
"""
import argparse
import grp
import os
import pwd
import signal
import socket
import subprocess
import sys
import time

# What a server answers when the caller does not say: the same 18 bytes as
# httpd's "/".
HELLO = 'location / { default_type text/plain; return 200 "Hello from ktimer\\n"; }'

CONF = """%(user)sworker_processes %(workers)d;
%(nofile)smaster_process %(master)s;
daemon off;
pid %(w)s/nginx.pid;
error_log %(w)s/error.log %(error_log)s;
env KTIMER_RUN_LIMIT;
events { worker_connections %(connections)d; }
http {
    %(access_log)s
    keepalive_timeout %(keepalive)s;
%(http)s    server {
        listen 127.0.0.1:%(port)d%(listen)s;
        root %(w)s/html;
%(locations)s
    }
}
"""


def free_port():
    """A loopback port that was free a moment ago."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def user_directive():
    """nginx's `user` line for a configuration: the current user and group.

    A master started as root switches its workers to `user` (nobody by
    default), and nobody may lack read access to files the caller wrote under
    a restrictive umask or in a private temporary directory; such a worker
    answers 403 or 500 instead of what the caller expects. With the current
    user the workers read what the caller wrote, whatever the environment. A
    master that is not root keeps its own user and ignores the directive
    (with a warning in the error log), so it is written only for root.
    """
    if os.geteuid() != 0:
        return ""
    return "user %s %s;\n" % (pwd.getpwuid(os.geteuid()).pw_name, grp.getgrgid(os.getegid()).gr_name)


def conf(work, port, workers=1, nofile=None, connections=1024, master=True, error_log="crit", keepalive="75s",
         http=(), listen="", locations=(HELLO,), access_log=None):
    """An nginx configuration for @work, listening on 127.0.0.1:@port.

    One master (unless @master is false) and @workers workers of
    @connections connections each (worker_rlimit_nofile @nofile if given),
    in the foreground, the pid file and error log (at @error_log) in @work,
    KTIMER_RUN_LIMIT passed to the workers (nginx on ktimer reads it), html
    served from @work/html. @http: more directives of the http block, each
    with its semicolon; @listen: text after the address (" backlog=4096
    reuseport"); @locations: the server's location blocks. @access_log: a
    log_format for @work/access.log, or None for no access log.
    """
    if access_log is None:
        log = "access_log off;"
    else:
        log = "log_format t '%s';\n    access_log %s/access.log t;" % (access_log, work)
    return CONF % {
        "user": user_directive(), "workers": workers, "master": "on" if master else "off", "w": work,
        "nofile": "worker_rlimit_nofile %d;\n" % nofile if nofile else "", "error_log": error_log,
        "connections": connections, "access_log": log, "keepalive": keepalive, "port": port, "listen": listen,
        "http": "".join("    %s\n" % d for d in http), "locations": "\n".join("        " + l for l in locations),
    }


def stop(proc, sig=signal.SIGTERM, wait=5.0):
    """Signal @proc (SIGTERM by default), wait up to @wait seconds for it to
    end, then kill it."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def listens(pid, port):
    """Whether process @pid holds a TCP socket listening on @port."""
    try:
        inodes = set()
        for fd in os.listdir("/proc/%d/fd" % pid):
            try:
                link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
        for table in ("tcp", "tcp6"):
            with open("/proc/%d/net/%s" % (pid, table)) as f:
                for line in f.read().splitlines()[1:]:
                    fields = line.split()
                    # local address, state (0A: LISTEN), inode
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port and fields[9] in inodes:
                        return True
    except (OSError, IndexError, ValueError):
        pass
    return False


def ready(proc, port, deadline):
    """Wait until @proc listens on @port and a connection to it succeeds.
    False if @proc ended or @deadline (time.monotonic()) passed first."""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if listens(proc.pid, port):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return True
            except OSError:
                pass
        time.sleep(0.05)
    return False


def tail(path, n=5):
    """The last @n lines of a log, on one line."""
    try:
        with open(path, errors="replace") as f:
            return " | ".join(f.read().splitlines()[-n:])
    except OSError:
        return ""


def start_nginx(binary, work, env=None, wrap=None, timeout=5.0, settle=0.0, **conf_args):
    """Start @binary on a free loopback port with conf(@work, port, **conf_args).

    Creates @work/logs (nginx's own default log, before it reads the
    configuration). @wrap is a command prefix (valgrind, say); each port is
    given @timeout seconds; @settle more seconds are waited once it is ready.
    Returns (process, port); raises RuntimeError after five ports.
    """
    os.makedirs(os.path.join(work, "logs"), exist_ok=True)
    path = os.path.join(work, "nginx.conf")
    for _ in range(5):
        port = free_port()
        with open(path, "w") as f:
            f.write(conf(work, port, **conf_args))
        proc = subprocess.Popen((wrap or []) + [binary, "-p", work, "-c", path],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        if ready(proc, port, time.monotonic() + timeout):
            if settle:
                time.sleep(settle)
            return proc, port
        stop(proc)  # lost the port (or slow): another one
    raise RuntimeError("%s did not start on 5 ports (%s/error.log: %s)"
                       % (binary, work, tail(os.path.join(work, "error.log"))))


def start_httpd(binary, args, work, env=None, timeout=5.0):
    """Start net/httpd @binary with --port 0 and @args; its output in
    @work/httpd.out and @work/httpd.err. Returns (process, port); raises
    RuntimeError if it does not print its port and listen on it within
    @timeout seconds."""
    out, err = os.path.join(work, "httpd.out"), os.path.join(work, "httpd.err")
    with open(out, "w") as o, open(err, "w") as e:
        proc = subprocess.Popen([binary, "--port", "0"] + list(args), stdout=o, stderr=e, env=env)
    deadline = time.monotonic() + timeout
    port = None
    while port is None and time.monotonic() < deadline and proc.poll() is None:
        with open(out) as f:
            for line in f:
                # "listening on ADDR:PORT workers=N" (net/main.c)
                if line.startswith("listening on ") and " workers=" in line:
                    port = int(line.split(" workers=")[0].rsplit(":", 1)[1])
        if port is None:
            time.sleep(0.05)
    if port is not None and ready(proc, port, deadline):
        return proc, port
    stop(proc)
    raise RuntimeError("%s did not start (stderr: %s)" % (binary, tail(err)))


class Stop(Exception):
    pass


def supervise(proc, port):
    """The shell's side: print "PORT PID", then stay @proc's parent until it
    ends (its exit status is returned) or this process gets SIGTERM, SIGINT
    or SIGHUP (@proc is stopped, 0 is returned). A parent that waits reaps
    it: a server left to whatever reaps orphans may stay a zombie."""
    def on_signal(sig, frame):
        raise Stop()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, on_signal)
    try:
        print(port, proc.pid, flush=True)
        # Let go of the caller's pipe: a caller that reads the next
        # launcher's line from it must see its end when that one fails.
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        return proc.wait()
    except Stop:
        stop(proc, wait=10.0)
        return 0


def main(argv):
    p = argparse.ArgumentParser(prog="tools/nginx/launch.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    n = sub.add_parser("nginx", help="nginx on a free port")
    n.add_argument("work")
    n.add_argument("--binary", default="nginx")
    n.add_argument("--workers", type=int, default=1)
    n.add_argument("--nofile", type=int)
    n.add_argument("--connections", type=int, default=1024)
    n.add_argument("--keepalive", default="75s")
    n.add_argument("--error-log", default="crit")
    n.add_argument("--listen", default="")
    n.add_argument("--http", action="append", default=[], help="a directive of the http block, with its ';'")
    h = sub.add_parser("httpd", help="net/httpd on port 0")
    h.add_argument("work")
    h.add_argument("binary")
    h.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args(argv)
    try:
        if a.cmd == "nginx":
            proc, port = start_nginx(a.binary, a.work, workers=a.workers, nofile=a.nofile,
                                     connections=a.connections, keepalive=a.keepalive, error_log=a.error_log,
                                     listen=a.listen, http=a.http)
        else:
            proc, port = start_httpd(a.binary, a.args, a.work)
    except RuntimeError as e:
        print("launch.py: %s" % e, file=sys.stderr)
        return 1
    return supervise(proc, port)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
