"""tools/nginx/launch.py - start an nginx on a free loopback port.

Shared by tools/nginx/test.py, tools/nginx/bench.py and
tools/check/protocol_compare.py. nginx takes its port from its configuration, so
the port is picked first (bind to port 0, read it, close) and written into
the configuration; another process can take it in between, in which case
nginx exits at once and another port is tried.
"""
import grp
import os
import pwd
import socket
import subprocess
import time


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
    default), and nobody may lack read access to files the test wrote under
    a restrictive umask or in a private temporary directory; such a worker
    answers 403 or 500 instead of what the test expects. With the current
    user the workers read what the test wrote, whatever the environment. A
    master that is not root keeps its own user and ignores the directive
    (with a warning in the error log), so it is written only for root.
    """
    if os.geteuid() != 0:
        return ""
    return "user %s %s;\n" % (pwd.getpwuid(os.geteuid()).pw_name, grp.getgrgid(os.getegid()).gr_name)


def stop(proc, sig=None, wait=5):
    """Signal @proc (SIGTERM by default), wait up to @wait seconds, then kill it."""
    if proc is None or proc.poll() is not None:
        return
    if sig is None:
        proc.terminate()
    else:
        proc.send_signal(sig)
    try:
        proc.wait(wait)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def start(binary, work, conf_text, env=None, wrap=None, polls=50, settle=0.0):
    """Start @binary with the configuration conf_text(port) in @work.

    Ready means a connection to the port succeeds (polled every 0.1 s,
    @polls times); @settle seconds more are waited after that. @wrap is a
    command prefix (valgrind, say). Returns (process, port); raises
    RuntimeError after five ports.
    """
    conf = os.path.join(work, "nginx.conf")
    for _ in range(5):
        port = free_port()
        with open(conf, "w") as f:
            f.write(conf_text(port))
        proc = subprocess.Popen((wrap or []) + [binary, "-p", work, "-c", conf],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        for _ in range(polls):
            if proc.poll() is not None:
                break  # lost the port: try another
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                if settle:
                    time.sleep(settle)
                return proc, port
            except OSError:
                time.sleep(0.1)
        stop(proc)
    raise RuntimeError("%s did not start" % binary)
