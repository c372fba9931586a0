#!/usr/bin/env python3
"""Intercepted-https benchmark: cookie-proxy beside mitmproxy in one run, same upstream, same client.

Measures, through each proxy intercepting https to the upstream:
  - new-connection https requests/s (CONNECT + TLS handshake with the proxy + GET + close), N client threads;
  - keep-alive https requests/s (many GETs in one intercepted TLS session);
  - for cookie-proxy, the first handshake to a new host name (leaf minted) against a cached one.
The upstream is nginx with TLS (a throwaway CA made here). Everything listens on 127.0.0.1; every process
started is stopped at the end. Usage: bench/tls-bench.py [--seconds 5] [--threads 4]
"""
import argparse, os, shutil, socket, ssl, statistics, subprocess, sys, tempfile, threading, time
from loopback import recv_until, wait_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UP_PORT, OURS_PORT, MITM_PORT = 18443, 18490, 18491
MITMDUMP = os.environ.get("MITMDUMP", os.path.expanduser("~/.cache/proxy-bench/venv/bin/mitmdump"))

def sh(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, **kw)

def make_ca(d):
    sh("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
       "-subj", "/CN=bench CA", "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem",
       "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    sh("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
       "-keyout", f"{d}/leaf.key", "-out", f"{d}/leaf.csr")
    open(f"{d}/ext.cnf", "w").write("subjectAltName=DNS:localhost,DNS:*.localhost,IP:127.0.0.1\n")
    sh("openssl", "x509", "-req", "-in", f"{d}/leaf.csr", "-CA", f"{d}/ca.pem", "-CAkey", f"{d}/ca.key",
       "-CAcreateserial", "-days", "2", "-extfile", f"{d}/ext.cnf", "-out", f"{d}/leaf.pem")

def start_nginx(d):
    conf = f"""
worker_processes 1; daemon off; pid {d}/nginx.pid; error_log {d}/nginx.err;
events {{ worker_connections 4096; }}
http {{ access_log off;
  server {{ listen 127.0.0.1:{UP_PORT} ssl; ssl_certificate {d}/leaf.pem; ssl_certificate_key {d}/leaf.key;
    keepalive_requests 100000;
    location / {{ add_header Set-Cookie "sid=abc; Path=/; SameSite=None"; return 200 "hello\\n"; }} }} }}
"""
    open(f"{d}/nginx.conf", "w").write(conf)
    return subprocess.Popen(["nginx", "-c", f"{d}/nginx.conf", "-p", d])

def tunnel(proxy_port, host):
    s = socket.create_connection(("127.0.0.1", proxy_port))
    s.sendall(f"CONNECT {host}:{UP_PORT} HTTP/1.1\r\nHost: {host}:{UP_PORT}\r\n\r\n".encode())
    buf = recv_until(s, lambda b: b"\r\n\r\n" in b)
    if not buf.startswith(b"HTTP/1.1 200") and not buf.startswith(b"HTTP/1.0 200"):
        raise OSError(buf[:80])
    return s

def get(tls, host):
    tls.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    return recv_until(tls, lambda b: b.endswith(b"hello\n"), 65536)

def new_connection_rate(proxy_port, ctx, seconds, threads, host="localhost"):
    count = [0]
    errors = [0]
    stop = time.time() + seconds
    def worker():
        while time.time() < stop:
            try:
                s = tunnel(proxy_port, host)
                t = ctx.wrap_socket(s, server_hostname=host)
                get(t, host)
                t.close()
                count[0] += 1
            except (OSError, ssl.SSLError):
                errors[0] += 1
    ts = [threading.Thread(target=worker) for _ in range(threads)]
    start = time.time()
    [t.start() for t in ts]
    [t.join() for t in ts]
    return count[0] / (time.time() - start), errors[0]

def keepalive_rate(proxy_port, ctx, seconds, threads, host="localhost"):
    """Requests/s over `threads` intercepted TLS sessions kept open, one per thread."""
    count = [0]
    stop = time.time() + seconds
    def worker():
        s = tunnel(proxy_port, host)
        t = ctx.wrap_socket(s, server_hostname=host)
        while time.time() < stop:
            get(t, host)
            count[0] += 1
        t.close()
    ts = [threading.Thread(target=worker) for _ in range(threads)]
    start = time.time()
    [t.start() for t in ts]
    [t.join() for t in ts]
    return count[0] / (time.time() - start)

def handshake_ms(proxy_port, ctx, host):
    s = tunnel(proxy_port, host)
    t0 = time.perf_counter()
    t = ctx.wrap_socket(s, server_hostname=host)
    ms = (time.perf_counter() - t0) * 1000
    t.close()
    return ms

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--threads", type=int, default=4)
    a = ap.parse_args()
    d = tempfile.mkdtemp(prefix="tls-bench-")
    procs = []
    try:
        make_ca(d)
        procs.append(start_nginx(d))
        wait_port(UP_PORT)
        home = f"{d}/cp"
        ours = subprocess.Popen([f"{ROOT}/.build/release/cookie-proxy", "run", "--quiet", "--threads", "1", "--listen",
                                 f"127.0.0.1:{OURS_PORT}", "--intercept", "localhost", "--intercept", "*.localhost",
                                 "--upstream-ca", f"{d}/ca.pem", "--log", "none"],
                                env={**os.environ, "COOKIE_PROXY_HOME": home}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(ours)
        wait_port(OURS_PORT)
        ours_ctx = ssl.create_default_context(cafile=f"{home}/ca-cert.pem")
        ours_ctx.set_alpn_protocols(["http/1.1"])
        rows = []
        have_mitm = os.path.exists(MITMDUMP)
        if have_mitm:
            mitm = subprocess.Popen([MITMDUMP, "-q", "--listen-host", "127.0.0.1", "--listen-port", str(MITM_PORT),
                                     "--set", f"confdir={d}/mitm", "--set", f"ssl_verify_upstream_trusted_ca={d}/ca.pem"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(mitm)
            wait_port(MITM_PORT, 60)
            for _ in range(100):
                if os.path.exists(f"{d}/mitm/mitmproxy-ca-cert.pem"):
                    break
                time.sleep(0.1)
            mitm_ctx = ssl.create_default_context(cafile=f"{d}/mitm/mitmproxy-ca-cert.pem")
            mitm_ctx.set_alpn_protocols(["http/1.1"])
        for name, port, ctx in [("cookie-proxy", OURS_PORT, ours_ctx)] + ([("mitmproxy", MITM_PORT, mitm_ctx)] if have_mitm else []):
            handshake_ms(port, ctx, "localhost")  # warm-up (and the leaf for localhost is cached)
            nc, errors = new_connection_rate(port, ctx, a.seconds, a.threads)
            ka = keepalive_rate(port, ctx, a.seconds, a.threads)
            rows.append((name, nc, errors, ka))
        # First handshake to a new host (leaf minted) against a cached one, cookie-proxy.
        first = [handshake_ms(OURS_PORT, ours_ctx, f"h{i}.localhost") for i in range(100)]
        cached = [handshake_ms(OURS_PORT, ours_ctx, f"h{i}.localhost") for i in range(100)]
        print(f"# Intercepted https: cookie-proxy vs mitmproxy ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n")
        print(f"client: Python ssl, {a.threads} threads for new connections, {a.seconds:.0f}s per figure; upstream nginx (TLS) on 127.0.0.1")
        print("each new-connection request = CONNECT + TLS handshake with the proxy (+ the proxy's TLS to nginx) + GET + close\n")
        print(f"| proxy | new-connection https req/s | errors | keep-alive https req/s ({a.threads} sessions) |")
        print("|---|---:|---:|---:|")
        for name, nc, errors, ka in rows:
            print(f"| {name} | {nc:,.0f} | {errors} | {ka:,.0f} |")
        if len(rows) == 2:
            print(f"\nratio cookie-proxy / mitmproxy: new connections {rows[0][1] / max(rows[1][1], 1e-9):.1f}×, keep-alive {rows[0][3] / max(rows[1][3], 1e-9):.1f}×")
        q = lambda xs, f: sorted(xs)[int(f * (len(xs) - 1))]
        print(f"\ncookie-proxy TLS handshake as the client measures it (100 host names): first to a new host (leaf minted) "
              f"median {statistics.median(first):.2f} ms, p90 {q(first, 0.9):.2f} ms, max {max(first):.2f} ms; "
              f"same host again (cached leaf) median {statistics.median(cached):.2f} ms, p90 {q(cached, 0.9):.2f} ms")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(d, ignore_errors=True)

main()
