#!/usr/bin/env python3
"""Aggregate tokens/s and per-token latency of concurrent streaming clients
against a running `tessera serve` (or any OpenAI-compatible server): the
interim load client of docs/serving.md's first figures, until
`tessera bench --serve` measures against llama-server.

    scripts/serve-load.py http://127.0.0.1:8080 CLIENTS TOKENS ROUNDS

Each round starts CLIENTS streaming /v1/completions of TOKENS tokens at once
(four prompts in turn, seed = client index, temperature 0.8) and waits for
all; tokens are counted as the text chunks received.
"""
import json, sys, threading, time, urllib.request
url, clients, tokens, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
prompts = ["Once upon a time", "The little dog", "A girl named Lily", "Tom had a ball"]
def one(i, out):
    body = json.dumps({"prompt": prompts[i % 4], "max_tokens": tokens, "stream": True,
                       "seed": i, "temperature": 0.8}).encode()
    req = urllib.request.Request(url + "/v1/completions", body, {"Content-Type": "application/json"})
    t0 = time.perf_counter(); stamps = []
    with urllib.request.urlopen(req) as r:
        for line in r:
            if line.startswith(b"data: {"):
                d = json.loads(line[6:])
                if d["choices"] and d["choices"][0]["text"]:
                    stamps.append(time.perf_counter())
    out[i] = (t0, stamps)
total_tokens = 0; wall = 0; gaps = []
for _ in range(rounds):
    out = {}; ts = [threading.Thread(target=one, args=(i, out)) for i in range(clients)]
    t0 = time.perf_counter(); [t.start() for t in ts]; [t.join() for t in ts]; wall += time.perf_counter() - t0
    for i, (s, st) in out.items():
        total_tokens += len(st)
        gaps += [b - a for a, b in zip(st, st[1:])]
gaps.sort()
print(f"clients {clients}: {total_tokens / wall:.1f} tokens/s aggregate, "
      f"p50 {1000 * gaps[len(gaps) // 2]:.2f} ms, p99 {1000 * gaps[int(len(gaps) * 0.99)]:.2f} ms per token")
