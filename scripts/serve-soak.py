#!/usr/bin/env python3
"""Soak a running `tessera serve` through the Python SDK: SESSIONS sessions
talk for MINUTES minutes (generate TOKENS tokens, append a user line, wait
THINK seconds, again), the sessions never closed, their histories growing
without end.
Run the server with a store that bounds each session's K/V (`sink_window`) so
the K/V must stay flat however long the histories grow:

    tessera serve --config configs/serve-stories260k.toml --http 127.0.0.1:8080 \\
        --grpc 127.0.0.1:50051 --set cache.plugin=sink_window --set cache.sink=4 \\
        --set cache.window=128 &
    PYTHONPATH=build/release/sdks/python scripts/serve-soak.py --grpc 127.0.0.1:50051 --http http://127.0.0.1:8080 \\
        --pid $! --minutes 60 --sessions 16 --think 0.5

Every minute it prints a line (sampling every 10 s) (turns, turn latency, K/V live bytes from
/metrics, the server's resident memory); at the end the first and last
tenth of the run side by side. It passes (exit 0) when
  - no call failed and no session was lost,
  - K/V live bytes at the end are no more than at the end of the first tenth,
  - the median turn latency of the last tenth is within 1.5x of the first's,
  - /metrics counts no invariant violation.
The server's resident memory grows by the raw histories (4 bytes a token,
kept whole by design); the report prints that growth beside the histories'.
"""

import argparse
import os
import re
import statistics
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sdks", "python"))
from tessera_client import Client, TesseraError  # noqa: E402

PROMPTS = ["Once upon a time", "The little dog", "A girl named Lily", "Tom had a ball"]
USER_LINES = [" Then", " The end.", " She smiled.", " He ran home.", " It was fun."]


def metrics(url):
    text = urllib.request.urlopen(url + "/metrics", timeout=30).read().decode()
    values = {}
    for line in text.splitlines():
        match = re.match(r"^([a-z_]+(?:\{[^}]*\})?) ([0-9.e+-]+)$", line)
        if match:
            values[match.group(1)] = float(match.group(2))
    violations = sum(v for k, v in values.items()
                     if k.startswith("tessera_invariant_violations_total"))
    return values.get("tessera_kv_live_bytes", -1), violations


def resident_bytes(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return -1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grpc", required=True)
    parser.add_argument("--http", required=True, help="base URL, for /metrics")
    parser.add_argument("--pid", type=int, required=True, help="the server's process id")
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--think", type=float, default=0.5,
                        help="seconds a session waits between turns (a user or an agent's tool)")
    args = parser.parse_args()

    deadline = time.time() + args.minutes * 60
    turns = []  # (end time, seconds) of every turn
    errors = []
    history_tokens = [0] * args.sessions
    lock = threading.Lock()

    def talk(index):
        with Client(args.grpc) as client:
            try:
                session = client.create_session(temperature=0.8, seed=index)
                history_tokens[index] = session.append(
                    client.tokenize(PROMPTS[index % len(PROMPTS)], add_bos=True))
                turn = 0
                while time.time() < deadline:
                    start = time.perf_counter()
                    got = sum(1 for _ in session.generate(max_tokens=args.tokens, ignore_eos=True))
                    seconds = time.perf_counter() - start
                    if got != args.tokens or session.last_end.stop_reason != "max_tokens":
                        raise RuntimeError(f"turn {turn} gave {got} tokens, {session.last_end}")
                    history_tokens[index] = session.append(
                        client.tokenize(USER_LINES[turn % len(USER_LINES)]))
                    with lock:
                        turns.append((time.time(), seconds))
                    turn += 1
                    time.sleep(args.think)
                info = session.info()
                if info.history_tokens != history_tokens[index]:
                    raise RuntimeError(f"history {info.history_tokens}, sent {history_tokens[index]}")
            except (TesseraError, RuntimeError) as error:
                with lock:
                    errors.append(f"session {index}: {error}")

    started = time.time()
    threads = [threading.Thread(target=talk, args=(i,)) for i in range(args.sessions)]
    for thread in threads:
        thread.start()
    samples = []  # (time, kv bytes, violations, resident bytes, history tokens)
    print("minute  turns  p50 turn ms  kv live bytes  resident MiB  history tokens", flush=True)
    printed = started
    while any(t.is_alive() for t in threads):
        time.sleep(min(10, max(1, deadline - time.time() + 1)))
        now = time.time()
        kv, violations = metrics(args.http)
        samples.append((now, kv, violations, resident_bytes(args.pid), sum(history_tokens)))
        if now - printed < 60 and now < deadline:
            continue
        printed = now
        with lock:
            recent = [s for t, s in turns if t > now - 60]
        p50 = 1000 * statistics.median(recent) if recent else float("nan")
        print(f"{(now - started) / 60:6.1f}  {len(recent):5d}  {p50:11.2f}  {kv:13.0f}  "
              f"{samples[-1][3] / 2**20:12.1f}  {samples[-1][4]:14d}", flush=True)
    for thread in threads:
        thread.join()

    span = time.time() - started
    tenth = span / 10
    first = [s for t, s in turns if t <= started + tenth]
    last = [s for t, s in turns if t > started + span - tenth]
    kv_early = max([s[1] for s in samples if s[0] <= started + tenth] or [samples[0][1]])
    kv_end = samples[-1][1]
    ratio = statistics.median(last) / statistics.median(first)
    violations = samples[-1][2]
    resident_growth = samples[-1][3] - samples[0][3]
    history_growth = 4 * (samples[-1][4] - samples[0][4])
    print(f"\n{args.sessions} sessions, {len(turns)} turns of {args.tokens} tokens in "
          f"{span / 60:.1f} min; histories {sum(history_tokens)} tokens")
    print(f"turn latency p50: first tenth {1000 * statistics.median(first):.2f} ms, "
          f"last tenth {1000 * statistics.median(last):.2f} ms ({ratio:.2f}x)")
    print(f"kv live bytes: {kv_early:.0f} after the first tenth, {kv_end:.0f} at the end")
    print(f"resident memory: +{resident_growth / 2**20:.1f} MiB after the first 10 s; the "
          f"histories' token ids grew {history_growth / 2**20:.1f} MiB")
    print(f"invariant violations: {violations:.0f}; failed sessions: {len(errors)}")
    for error in errors[:10]:
        print("  " + error)
    ok = not errors and kv_end <= kv_early and ratio <= 1.5 and violations == 0
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
