#!/usr/bin/env python3
"""tools/check/protocol_compare.py - httpd's answers beside nginx's, byte for byte.

Starts net/httpd (port 0: it prints its port) and nginx (on a free port
picked at runtime, retried if lost) on loopback, sends each request below on
a fresh connection to both, and compares what matters for the protocol: the
status line of every response (an interim 100 Continue included), the
Connection header of the last, and whether the stream ends with a reset.
Bodies, Server and Content-Type differ by design (nginx sends HTML error
pages) and are not compared; nor are reason phrases where nginx keeps an
older name than RFC 9110's (414 "Request-URI Too Large" for "URI Too
Long"): the table shows both.

Cases marked "differs by design" are where httpd chooses differently; each
is documented in docs/NET.md. With --check, exits 1 if any other case
differs (tools/run test runs it so).

With --nginx-pair A B it compares two nginx binaries instead (stock nginx
and nginx on ktimer, tools/nginx/build.sh): every byte of every answer,
with the Date header's value blanked, and how each stream ends, must be the
same; there is no "differs by design" between them.

    tools/check/protocol_compare.py [--check] [--httpd PATH]
    tools/check/protocol_compare.py [--check] --nginx-pair STOCK KTIMER
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "nginx"))
import launch  # noqa: E402 (tools/nginx/launch.py)

GET = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"
HOST_WHY = ("not a URI authority (RFC 9112 3.2, RFC 3986 3.2.2: reg-name, IPv4 or [IP-literal], then an "
            "optional numeric port): 400; nginx accepts it")
IUS_WHY = ("the page has no modification date, and RFC 9110 13.1.4 says a recipient MUST then ignore "
           "If-Unmodified-Since (and a value that is not an HTTP-date): 200; nginx answers 412 to any value when "
           "it has no Last-Modified")
INM_IMS_WHY = ("RFC 9110 13.1.3: If-Modified-Since MUST be ignored when If-None-Match is present, so `*` decides: "
               "304; nginx looks at If-Modified-Since first and answers 200")
DUP_WHY = ("a list field sent on several lines is one list (RFC 9110 5.3), answered as the same list on one "
           "line (as nginx answers that): `*` is `*` only as the whole value, so If-Match on two lines is false "
           "(412) and If-None-Match true (200); nginx refuses a repeated If-Match or If-None-Match line with 400")
OWS_WHY = ("a field value excludes the whitespace around it, spaces and tabs alike (RFC 9110 5.5, OWS): `*` "
           "between tabs is `*`, 304; nginx trims only spaces and compares the tabs too")
TE = b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"

# (name, request bytes, None or the reason httpd differs by design)
CASES = [
    ("GET /", GET, None),
    ("HEAD /", b"HEAD / HTTP/1.1\r\nHost: t\r\n\r\n", None),
    ("unknown path", b"GET /missing HTTP/1.1\r\nHost: t\r\n\r\n", None),
    ("query string", b"GET /?a=1 HTTP/1.1\r\nHost: t\r\n\r\n", None),
    ("query on a route", b"GET /stats?x HTTP/1.1\r\nHost: t\r\n\r\n", None),
    ("HTTP/1.0", b"GET / HTTP/1.0\r\n\r\n", None),
    ("HTTP/1.0 keep-alive", b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", None),
    ("Connection: close", b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n", None),
    ("HTTP/1.1 without Host", b"GET / HTTP/1.1\r\n\r\n", None),
    ("two equal Content-Length",
     b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", None),
    ("two different Content-Length",
     b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", None),
    ("Content-Length and Transfer-Encoding",
     b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", None),
    ("Transfer-Encoding on HTTP/1.0", b"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", None),
    ("Transfer-Encoding: gzip", b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", None),
    ("Transfer-Encoding: chunked", b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", None),
    ("chunked body, then a pipelined GET", TE + b"5\r\nhello\r\n0\r\n\r\nGET /missing HTTP/1.1\r\nHost: t\r\n\r\n",
     None),
    ("chunked body with extensions and trailers", TE + b"5;a=b;c=\"d e\"\r\nhello\r\nA\r\n0123456789\r\n0\r\n"
     b"X-T: 1\r\nY: 2\r\n\r\nGET /missing HTTP/1.1\r\nHost: t\r\n\r\n", None),
    ("Transfer-Encoding: ChUnKeD", TE.replace(b"chunked", b"ChUnKeD") + b"3\r\nabc\r\n0\r\n\r\n", None),
    ("chunked, Expect: 100-continue", TE.replace(b"\r\n\r\n", b"\r\nExpect: 100-continue\r\n\r\n") +
     b"3\r\nabc\r\n0\r\n\r\n", None),
    ("chunked, HEAD", TE.replace(b"GET", b"HEAD") + b"0\r\n\r\n", None),
    ("chunked, If-None-Match: *", TE.replace(b"\r\n\r\n", b"\r\nIf-None-Match: *\r\n\r\n") + b"3\r\nabc\r\n0\r\n\r\n",
     None),
    ('chunked, If-Match: "zz"', TE.replace(b"\r\n\r\n", b'\r\nIf-Match: "zz"\r\n\r\n') + b"3\r\nabc\r\n0\r\n\r\n",
     None),
    ("chunk size overflows 64 bits", TE + b"10000000000000000\r\n" + b"a" * 16, None),
    ("chunk size not hex", TE + b"zz\r\n\r\n", None),
    ("chunk data longer than its size", TE + b"3\r\nabcdef\r\n0\r\n\r\n", None),
    ("chunked, a body over the 1 MiB limit in one chunk", TE + b"200000\r\n" + b"a" * 1000,
     "a chunked body over --max-body (1 MiB) is 413 as a Content-Length one is; nginx, discarding the body "
     "(`return 200`), checks client_max_body_size only against Content-Length"),
    ("chunked, bare LF after the size", TE + b"3\nabc\r\n0\r\n\r\n",
     "chunk lines end with CRLF only (RFC 9112 7.1), a bare LF is 400: chunked framing is where smuggling lives; "
     "nginx accepts LF"),
    ("Transfer-Encoding: gzip, chunked", TE.replace(b"chunked", b"gzip, chunked") + b"0\r\n\r\n", None),
    ("Transfer-Encoding: chunked, gzip", TE.replace(b"chunked", b"chunked, gzip") + b"0\r\n\r\n",
     "chunked not the final coding: RFC 9112 6.3 says 400; nginx says 501 for any list but \"chunked\""),
    ("Host: a b", b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", None),
    ("Host: a/b", b"GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", None),
    ("Host: a<TAB>b", b"GET / HTTP/1.1\r\nHost: a\tb\r\n\r\n", None),
    ("Host: a:99x", b"GET / HTTP/1.1\r\nHost: a:99x\r\n\r\n", HOST_WHY),
    ("Host: a@b", b"GET / HTTP/1.1\r\nHost: a@b\r\n\r\n", HOST_WHY),
    ("Host: example.com.", b"GET / HTTP/1.1\r\nHost: example.com.\r\n\r\n", None),
    ("Host: EXAMPLE.com:8080", b"GET / HTTP/1.1\r\nHost: EXAMPLE.com:8080\r\n\r\n", None),
    ("Host: 127.0.0.1:80", b"GET / HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n", None),
    ("Host: [::1]:8080", b"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n", None),
    ("Host: [::1", b"GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", HOST_WHY),
    ("Host: a:b:c", b"GET / HTTP/1.1\r\nHost: a:b:c\r\n\r\n", HOST_WHY),
    ("Host: a%20b", b"GET / HTTP/1.1\r\nHost: a%20b\r\n\r\n", None),
    ("Host: a?b", b"GET / HTTP/1.1\r\nHost: a?b\r\n\r\n", HOST_WHY),
    ("empty Host", b"GET / HTTP/1.1\r\nHost:\r\n\r\n", None),
    ("Host: t:", b"GET / HTTP/1.1\r\nHost: t:\r\n\r\n", None),
    ("HTTP/1.0, Host: a b", b"GET / HTTP/1.0\r\nHost: a b\r\n\r\n", None),
    ("Expect: 100-continue", b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", None),
    ("Expect: 100-continue, HTTP/1.0", b"GET / HTTP/1.0\r\nContent-Length: 0\r\nExpect: 100-continue\r\n\r\n", None),
    ("Expect: 100-continue, no body", b"GET / HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n\r\n",
     "100 only when a body will be read; with no body there is nothing to continue with (RFC 9110 10.1.1 "
     "lets a server omit it); nginx sends 100 anyway"),
    ("Expect: 100-continue, body too large",
     b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\nExpect: 100-continue\r\n\r\n", None),
    ("HTTP/1.2", b"GET / HTTP/1.2\r\nHost: t\r\n\r\n", None),
    ("HTTP/1.9", b"GET / HTTP/1.9\r\nHost: t\r\n\r\n", None),
    ("HTTP/2.0", b"GET / HTTP/2.0\r\nHost: t\r\n\r\n", None),
    ("HTTP/3.1", b"GET / HTTP/3.1\r\nHost: t\r\n\r\n", None),
    ("HTTP/0.9 with headers", b"GET / HTTP/0.9\r\nHost: t\r\n\r\n",
     "a major version other than 1 is 505 (RFC 9110 15.6.6); nginx says 400"),
    ("HTTP/1.10", b"GET / HTTP/1.10\r\nHost: t\r\n\r\n",
     "the version is DIGIT.DIGIT (RFC 9112 2.3): 400; nginx reads 1.10"),
    ("an empty line first", b"\r\n" + GET, None),
    ("two empty lines first", b"\r\n\r\n" + GET, None),
    ("a bare LF first", b"\n" + GET, None),
    ("request line of 9,000 bytes", b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: t\r\n\r\n", None),
    ("headers of 9,000 bytes", b"GET / HTTP/1.1\r\nHost: t\r\n" + b"X-Filler: " + b"b" * 9000 + b"\r\n\r\n",
     "the whole head is limited to 8 KiB: 431; nginx allows 8 KiB per header line (then 400)"),
    ("line of 7,000 and headers of 3,000", b"GET /" + b"a" * 7000 + b" HTTP/1.1\r\nHost: t\r\nX: " + b"b" * 3000 +
     b"\r\n\r\n", "the whole head is limited to 8 KiB: 431; nginx limits the line and each header line"),
    ("POST", b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
     "only GET and HEAD are served: 405; nginx's `return 200` answers any method"),
    ("absolute-form target", b"GET http://t/ HTTP/1.1\r\nHost: t\r\n\r\n", None),
    ("absolute-form, no path", b"GET http://t HTTP/1.1\r\nHost: t\r\n\r\n", None),
    ("absolute-form, no host", b"GET http:///x HTTP/1.1\r\nHost: t\r\n\r\n", None),
    ("absolute-form, bad authority", b"GET http://a<b/ HTTP/1.1\r\nHost: t\r\n\r\n", None),
    ("absolute-form, unclosed IPv6 literal", b"GET http://[::1/ HTTP/1.1\r\nHost: t\r\n\r\n", None),
    ("absolute-form, port not numeric", b"GET http://a:x/ HTTP/1.1\r\nHost: t\r\n\r\n", None),
    ("target neither origin- nor absolute-form", b"GET foo HTTP/1.1\r\nHost: t\r\n\r\n", None),
    ("unknown method FOO", b"FOO / HTTP/1.1\r\nHost: t\r\n\r\n",
     "an unrecognized method is 501 (RFC 9110 9.1); nginx's `return 200` answers any method"),
    ("lowercase method get", b"get / HTTP/1.1\r\nHost: t\r\n\r\n",
     "methods are case-sensitive tokens (RFC 9110 9.1): `get` is a valid but unrecognized method, 501; "
     "nginx's parser takes only upper-case methods (400)"),
    ("space before the colon", b"GET / HTTP/1.1\r\nHost : t\r\n\r\n", None),
] + [
    # Preconditions (RFC 9110 13.2.2's order). Neither server sends a
    # validator (no ETag, no Last-Modified) for this page, so only "*" can
    # match, and the date conditions have nothing to compare with.
    (name + (", HEAD" if m == b"HEAD" else ""),
     m + b" / HTTP/1.1\r\nHost: t\r\n" + hdrs + b"\r\n", design)
    for m in (b"GET", b"HEAD")
    for name, hdrs, design in [
        ("If-None-Match: *", b"If-None-Match: *\r\n", None),
        ('If-None-Match: "zz"', b'If-None-Match: "zz"\r\n', None),
        ('If-None-Match: W/"zz", "yy"', b'If-None-Match: W/"zz", "yy"\r\n', None),
        ("If-Match: *", b"If-Match: *\r\n", None),
        ('If-Match: "zz"', b'If-Match: "zz"\r\n', None),
        ('If-Match: W/"zz"', b'If-Match: W/"zz"\r\n', None),
        ('If-Match: "zz", *', b'If-Match: "zz", *\r\n', None),
        ("If-Match: empty", b"If-Match:\r\n", None),
        ("If-Modified-Since: a date", b"If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n", None),
        ("If-Modified-Since: malformed", b"If-Modified-Since: yesterday\r\n", None),
        ("If-Unmodified-Since: a date", b"If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n", IUS_WHY),
        ("If-Unmodified-Since: a future date", b"If-Unmodified-Since: Fri, 01 Jan 2100 00:00:00 GMT\r\n",
         IUS_WHY),
        ("If-Unmodified-Since: malformed", b"If-Unmodified-Since: yesterday\r\n", IUS_WHY),
        ("If-Match: * and If-None-Match: *", b"If-Match: *\r\nIf-None-Match: *\r\n", None),
        ('If-Match: "zz" and If-None-Match: *', b'If-Match: "zz"\r\nIf-None-Match: *\r\n', None),
        ("If-None-Match: * and If-Modified-Since", b"If-None-Match: *\r\n"
         b"If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n", INM_IMS_WHY),
        ('If-None-Match: "zz" and If-Modified-Since', b'If-None-Match: "zz"\r\n'
         b"If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n", None),
        ("If-None-Match: * on two lines", b"If-None-Match: *\r\nIf-None-Match: *\r\n", DUP_WHY),
        ('If-None-Match: "zz" and * on two lines', b'If-None-Match: "zz"\r\nIf-None-Match: *\r\n', DUP_WHY),
        ('If-Match: * and "zz" on two lines', b'If-Match: *\r\nIf-Match: "zz"\r\n', DUP_WHY),
        ("If-None-Match: * between tabs", b"If-None-Match:\t*\t\r\n", OWS_WHY),
        ("If-Match: * and If-Unmodified-Since", b"If-Match: *\r\n"
         b"If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n", IUS_WHY),
    ]
]


def ask(port, data, timeout=3.0):
    """Status lines of every response, the last one's Connection header, and
    how the stream ended (EOF, RST or open)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(data)
    s.settimeout(timeout)
    buf = b""
    raw = b""
    end = "open"
    deadline = time.time() + timeout
    statuses = []
    conn = ""
    try:
        while time.time() < deadline:
            # Parse what is complete.
            while True:
                he = buf.find(b"\r\n\r\n")
                if he < 0:
                    break
                head = buf[:he].decode("latin-1")
                m = re.search(r"(?im)^content-length:\s*(\d+)", head)
                n = int(m.group(1)) if m else 0
                if head.startswith("HTTP/1.1 1") or head.startswith("HTTP/1.1 304"):
                    n = 0
                if data.startswith(b"HEAD"):
                    n = 0
                if len(buf) < he + 4 + n:
                    break
                statuses.append(head.split("\r\n", 1)[0])
                c = re.search(r"(?im)^connection:\s*(\S+)", head)
                if not head.startswith("HTTP/1.1 1"):
                    conn = c.group(1).lower() if c else ""
                buf = buf[he + 4 + n:]
            if statuses and not statuses[-1].startswith("HTTP/1.1 1") and end == "open":
                # One final response is all these cases get; how does it end?
                s.settimeout(0.3)
            b = s.recv(65536)
            if not b:
                end = "EOF"
                break
            buf += b
            raw += b
    except socket.timeout:
        pass
    except ConnectionResetError:
        end = "RST"
    s.close()
    return statuses, conn, end, re.sub(rb"(?im)^(date:)[^\r\n]*", rb"\1 -", raw)


def start_nginx(work, binary="nginx"):
    return launch.start_nginx(binary, work, keepalive="5", locations=[
        'location = / { default_type text/plain; return 200 "Hello from ktimer\\n"; }',
        'location = /stats { default_type text/plain; return 200 "{}\\n"; }',
        'location / { return 404; }'])


def compare_nginx_pair(check, stock, ktimer):
    """Two nginx binaries, byte for byte (the Date header's value aside)."""
    works = [tempfile.mkdtemp(), tempfile.mkdtemp()]
    procs = []
    failures = 0
    try:
        for w, binary in zip(works, (stock, ktimer)):
            procs.append(start_nginx(w, binary))
        print("| request | stock nginx | nginx on ktimer | |")
        print("|---|---|---|---|")
        for name, data, _ in CASES:
            a = ask(procs[0][1], data)
            b = ask(procs[1][1], data)
            same = a[0] == b[0] and a[1] == b[1] and a[2] == b[2] and a[3] == b[3]
            if not same:
                failures += 1

            def show(r):
                st = " + ".join(x.replace("HTTP/1.1 ", "") for x in r[0]) or "(none)"
                return "%s; %s; %s; %d bytes" % (st, r[1] or "-", r[2], len(r[3]))

            print("| %s | %s | %s | %s |" % (name, show(a), show(b), "same bytes" if same else "DIFFERENT"))
    except RuntimeError as e:
        sys.exit(str(e))
    finally:
        for p, _ in procs:
            launch.stop(p)
        for w in works:
            shutil.rmtree(w, ignore_errors=True)
    print()
    print("%d of %d cases differ" % (failures, len(CASES)))
    return 1 if check and failures else 0


def main():
    check = "--check" in sys.argv
    if "--nginx-pair" in sys.argv:
        i = sys.argv.index("--nginx-pair")
        if len(sys.argv) < i + 3:
            sys.exit("--nginx-pair needs two nginx binaries")
        return compare_nginx_pair(check, sys.argv[i + 1], sys.argv[i + 2])
    binary = "bazel-bin/net/httpd"
    if "--httpd" in sys.argv:
        binary = sys.argv[sys.argv.index("--httpd") + 1]
    if not shutil.which("nginx"):
        sys.exit("nginx is not installed (apt-get install nginx-light)")
    work = tempfile.mkdtemp()
    h = n = None
    failures = 0
    try:
        h, hport = launch.start_httpd(binary, ["--workers", "1", "--keepalive", "5"], work)
        n, nport = start_nginx(work)
        version = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr.strip()
        print("| request | httpd | nginx (%s) | |" % version.replace("nginx version: ", ""))
        print("|---|---|---|---|")
        for name, data, design in CASES:
            a = ask(hport, data)
            b = ask(nport, data)
            codes = lambda r: [x[:12] for x in r[0]]  # "HTTP/1.1 414"
            same = codes(a) == codes(b) and a[1] == b[1] and (a[2] == "RST") == (b[2] == "RST")
            verdict = ("same" if a[0] == b[0] else "same code, RFC 9110's reason phrase") if same else ("differs by design: " + design if design else "DIFFERENT")
            if not same and not design:
                failures += 1
            if same and design:
                verdict = "same (expected to differ: " + design + ")"

            def show(r):
                st = " + ".join(x.replace("HTTP/1.1 ", "") for x in r[0]) or "(none)"
                return "%s; %s; %s" % (st, r[1] or "-", r[2])

            print("| %s | %s | %s | %s |" % (name, show(a), show(b), verdict))
    except RuntimeError as e:
        sys.exit(str(e))
    finally:
        launch.stop(h)
        launch.stop(n)
        shutil.rmtree(work, ignore_errors=True)
    print()
    print("%d of %d cases differ where they should not" % (failures, len(CASES)))
    return 1 if check and failures else 0


if __name__ == "__main__":
    sys.exit(main())
