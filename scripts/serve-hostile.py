#!/usr/bin/env python3
"""tessera serve against hostile but fair HTTP clients, on loopback.

Starts `tessera serve` itself (a fresh server per probe that needs other
settings), runs each probe bounded in count and time, and prints one line
per probe with its figure, so two builds can be compared on one machine:

  scripts/serve-hostile.py --tessera build/release/bin/tessera
  scripts/serve-hostile.py --tessera OLD/bin/tessera --only bomb,slowloris

Probes (docs/serving.md, "Under hostile clients", says what each promises):
  bomb        a 1 MB gzip body inflating to 1 GiB, sent without a key:
              status, seconds, the server's peak RSS growth
  slowloris   200 sockets trickling a header line every 2 s and 200 silent
              ones for 12 s: the slowest /health meanwhile
  limit       6 parallel completions at server.max_sessions = 2, 5 rounds:
              the statuses
  sigterm     SIGTERM mid-stream: how the stream ends
  context     a 600-token prompt on a 512-token context: the status
  types       stream_options.include_usage null / "yes": the statuses
  seed        3 unseeded requests at temperature 1: distinct texts
  keepalive   5 /health requests on one connection: median milliseconds
  pipeline    3 pipelined requests in one write: responses received
  bodies      16 bodies of 12 MiB in sequence: the server's RSS after, MiB
Only loopback addresses are used; every loop has a fixed count and deadline.
"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import zlib

HOST = "127.0.0.1"


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, args, *sets):
        self.port = free_port()
        cmd = [args.tessera, "serve", "--config", args.config, "--http", f"{HOST}:{self.port}"]
        for s in sets:
            cmd += ["--set", s]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 30
        while time.time() < deadline and self.proc.poll() is None:
            try:
                if http(self.port, "GET", "/health", timeout=1)[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("tessera serve did not start")

    def status(self, field):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024
        return 0

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def read_response(sock, deadline):
    """One HTTP response (Content-Length or chunked): (status, headers, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        sock.settimeout(max(0.01, deadline - time.time()))
        chunk = sock.recv(65536)
        if not chunk:
            raise OSError("closed")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
    body = rest
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(body) < n:
            sock.settimeout(max(0.01, deadline - time.time()))
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, headers, body[:n], body[n:]
    if headers.get("transfer-encoding", "").lower() == "chunked":
        while b"\r\n0\r\n\r\n" not in b"\r\n" + body:
            sock.settimeout(max(0.01, deadline - time.time()))
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, headers, body, b""
    while True:
        sock.settimeout(max(0.01, deadline - time.time()))
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            break
        body += chunk
    return status, headers, body, b""


def request_bytes(method, path, body=b"", headers=None):
    out = f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\n"
    for k, v in (headers or {}).items():
        out += f"{k}: {v}\r\n"
    if body or method == "POST":
        out += f"Content-Length: {len(body)}\r\n"
    return out.encode() + b"\r\n" + body


def http(port, method, path, body=b"", headers=None, timeout=30):
    with socket.create_connection((HOST, port), timeout=timeout) as sock:
        sock.sendall(request_bytes(method, path, body, headers))
        status, hdrs, data, _ = read_response(sock, time.time() + timeout)
        return status, hdrs, data


def probe_bomb(args):
    srv = Server(args, "server.api_keys=keyA:keyB")
    try:
        comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        block = b"\0" * (1 << 20)
        bomb = b"".join(comp.compress(block) for _ in range(1024)) + comp.flush()
        base = srv.status("VmHWM:")
        start = time.time()
        status = "no answer"
        try:
            with socket.create_connection((HOST, srv.port), timeout=60) as sock:
                sock.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: {HOST}\r\n"
                             f"Content-Encoding: gzip\r\nContent-Length: {len(bomb)}\r\n\r\n".encode())
                try:
                    sock.sendall(bomb)
                except OSError:
                    pass  # the server answered and closed before taking it all
                status = read_response(sock, time.time() + 60)[0]
        except OSError as e:
            status = f"error {e}"
        secs = time.time() - start
        time.sleep(0.5)
        return (f"{len(bomb) / 1e6:.2f} MB gzip -> 1 GiB, no key: {status} after {secs:.2f} s; "
                f"server peak RSS +{srv.status('VmHWM:') - base:.0f} MiB, RSS now {srv.status('VmRSS:'):.0f} MiB")
    finally:
        srv.stop()


def probe_slowloris(args):
    srv = Server(args)
    socks = []
    try:
        for i in range(400):
            s = socket.create_connection((HOST, srv.port), timeout=5)
            if i % 2 == 0:
                s.sendall(b"GET /health HTTP/1.1\r\n")
            socks.append(s)
        stop = time.time() + 12
        worst, times = 0.0, []

        def trickle():
            while time.time() < stop:
                for s in socks[::2]:
                    try:
                        s.sendall(b"X-Slow: 1\r\n")
                    except OSError:
                        pass
                time.sleep(2)

        t = threading.Thread(target=trickle)
        t.start()
        time.sleep(0.5)
        while time.time() < stop - 0.5:
            start = time.time()
            try:
                http(srv.port, "GET", "/health", timeout=30)
            except OSError:
                pass
            times.append(time.time() - start)
            time.sleep(0.25)
        t.join()
        return (f"400 slow sockets (200 trickling, 200 silent), 12 s: /health worst "
                f"{max(times) * 1000:.0f} ms, median {statistics.median(times) * 1000:.1f} ms "
                f"over {len(times)} requests")
    finally:
        for s in socks:
            s.close()
        srv.stop()


def probe_limit(args):
    srv = Server(args, "server.max_sessions=2")
    try:
        rounds = []
        body = json.dumps({"prompt": "Once", "max_tokens": 32}).encode()
        for _ in range(5):
            statuses = [0] * 6

            def one(i):
                try:
                    statuses[i] = http(srv.port, "POST", "/v1/completions", body,
                                       {"Content-Type": "application/json"}, timeout=60)[0]
                except OSError:
                    statuses[i] = -1

            ts = [threading.Thread(target=one, args=(i,)) for i in range(6)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            rounds.append(" ".join(map(str, sorted(statuses))))
        return "6 at max_sessions=2, 5 rounds: " + " | ".join(rounds)
    finally:
        srv.stop()


def probe_sigterm(args):
    srv = Server(args, "cache.plugin=sink_window", "cache.window=64")
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 100000, "stream": True}).encode()
    sock = socket.create_connection((HOST, srv.port), timeout=30)
    sock.sendall(request_bytes("POST", "/v1/completions", body))
    data = sock.recv(65536)
    time.sleep(0.3)
    srv.stop()
    sock.settimeout(10)
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    text = data.decode("utf-8", "replace")
    ends = []
    if '"finish_reason":"stop"' in text:
        ends.append('finish_reason "stop"')
    if '"finish_reason":"length"' in text:
        ends.append('finish_reason "length"')
    if '"error"' in text:
        ends.append("an error event")
    if "[DONE]" in text:
        ends.append("[DONE]")
    return "a stream cut by SIGTERM ends with: " + (", ".join(ends) or "nothing")


def probe_context(args):
    srv = Server(args)
    try:
        body = json.dumps({"prompt": [10 + i % 100 for i in range(600)], "max_tokens": 4}).encode()
        status, _, data = http(srv.port, "POST", "/v1/completions", body)
        err = json.loads(data or b"{}").get("error", {})
        return f"600-token prompt, 512 context: {status} {err.get('type')} {err.get('code')}"
    finally:
        srv.stop()


def probe_types(args):
    srv = Server(args)
    try:
        out = []
        for value in ("null", '"yes"'):
            body = ('{"prompt": "a", "max_tokens": 2, "stream": true, "stream_options": '
                    '{"include_usage": %s}}' % value).encode()
            status, _, data = http(srv.port, "POST", "/v1/completions", body)
            out.append(f"include_usage {value}: {status}{' (empty body)' if not data else ''}")
        return "; ".join(out)
    finally:
        srv.stop()


def probe_seed(args):
    srv = Server(args, "sampling.temperature=1.0")
    try:
        texts = set()
        body = json.dumps({"prompt": "Once upon a time", "max_tokens": 24}).encode()
        for _ in range(3):
            texts.add(json.loads(http(srv.port, "POST", "/v1/completions", body)[2])["choices"][0]["text"])
        return f"3 unseeded requests at temperature 1: {len(texts)} distinct texts"
    finally:
        srv.stop()


def probe_keepalive(args):
    srv = Server(args)
    try:
        with socket.create_connection((HOST, srv.port), timeout=10) as sock:
            times = []
            for _ in range(5):  # cpp-httplib closed a connection after 5 requests
                start = time.time()
                sock.sendall(request_bytes("GET", "/health"))
                data = b""
                while b'"ok"}' not in data:
                    chunk = sock.recv(65536)
                    if not chunk:
                        raise OSError("the server closed the kept-alive connection")
                    data += chunk
                times.append((time.time() - start) * 1000)
        return (f"/health on one kept-alive connection: first {times[0]:.1f} ms, "
                f"median of the rest {statistics.median(times[1:]):.1f} ms")
    finally:
        srv.stop()


def probe_pipeline(args):
    srv = Server(args)
    try:
        with socket.create_connection((HOST, srv.port), timeout=10) as sock:
            sock.sendall(request_bytes("GET", "/health") + request_bytes("GET", "/v1/models") +
                         request_bytes("GET", "/health"))
            data = b""
            deadline = time.time() + 6
            try:
                while data.count(b"HTTP/1.1 ") < 3 and time.time() < deadline:
                    sock.settimeout(max(0.01, deadline - time.time()))
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            got = data.count(b"HTTP/1.1 ")
        return f"3 pipelined requests: {got} responses"
    finally:
        srv.stop()


def probe_bodies(args):
    # Under a 16 MiB body limit on both builds (server.max_body_bytes is new;
    # the old server's limit was 16 MiB), so both read every body.
    try:
        srv = Server(args, "server.max_body_bytes=16777216")
    except RuntimeError:
        srv = Server(args)
    try:
        body = b'{"prompt": 7, "pad": "' + b"a" * (12 << 20) + b'"}'
        statuses = set()
        for _ in range(16):
            try:
                statuses.add(http(srv.port, "POST", "/v1/completions", body, timeout=60)[0])
            except OSError as e:
                statuses.add(f"error {e}")
        time.sleep(0.5)
        return (f"16 x 12 MiB bodies: statuses {sorted(map(str, statuses))}, server RSS after "
                f"{srv.status('VmRSS:'):.0f} MiB (peak {srv.status('VmHWM:'):.0f} MiB)")
    finally:
        srv.stop()


PROBES = {
    "bomb": probe_bomb, "slowloris": probe_slowloris, "limit": probe_limit,
    "sigterm": probe_sigterm, "context": probe_context, "types": probe_types, "seed": probe_seed,
    "keepalive": probe_keepalive, "pipeline": probe_pipeline, "bodies": probe_bodies,
}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tessera", default="build/release/bin/tessera")
    p.add_argument("--config", default="configs/serve-stories260k.toml")
    p.add_argument("--only", default="", help="comma-separated probe names (default: all)")
    args = p.parse_args()
    names = args.only.split(",") if args.only else list(PROBES)
    for name in names:
        try:
            print(f"{name:10s} {PROBES[name](args)}", flush=True)
        except Exception as e:  # a probe that breaks is a figure too
            print(f"{name:10s} probe failed: {e}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
