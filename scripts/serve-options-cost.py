#!/usr/bin/env python3
"""What asking for logprobs or penalties costs a served answer: one
`tessera serve` started here, whole /v1/completions of TOKENS greedy tokens
(ignore_eos) without options, with `logprobs: 20` and with both penalties at
0.5, interleaved round by round; medians and their ratio to the plain one.

    scripts/serve-options-cost.py BIN CONFIG MODEL [ROUNDS] [TOKENS]

e.g. scripts/serve-options-cost.py build/release/bin/tessera \\
         configs/serve-stories260k.toml stories260K.gguf 15 256
"""
import json, socket, statistics, subprocess, sys, time, urllib.request

binary, config, model = sys.argv[1], sys.argv[2], sys.argv[3]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 15
tokens = int(sys.argv[5]) if len(sys.argv) > 5 else 256
probe = socket.socket(); probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]; probe.close()
server = subprocess.Popen([binary, "serve", "--config", config, "--set", f"model.path={model}",
                           "--http", f"127.0.0.1:{port}"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
url = f"http://127.0.0.1:{port}"
try:
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "/health")
            break
        except OSError:
            time.sleep(0.1)

    def answer(extra):
        body = {"prompt": "Once upon a time", "max_tokens": tokens, "temperature": 0,
                "ignore_eos": True, **extra}
        request = urllib.request.Request(url + "/v1/completions", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
        start = time.perf_counter()
        reply = json.loads(urllib.request.urlopen(request).read())
        seconds = time.perf_counter() - start
        assert reply["usage"]["completion_tokens"] == tokens, reply
        return seconds

    cases = {"plain": {}, "logprobs=20": {"logprobs": 20},
             "penalties": {"frequency_penalty": 0.5, "presence_penalty": 0.5}}
    times = {name: [] for name in cases}
    for round_ in range(rounds + 3):  # three warm-up rounds
        for name, extra in cases.items():
            seconds = answer(extra)
            if round_ >= 3:
                times[name].append(seconds)
finally:
    server.terminate()
    server.wait()
plain = statistics.median(times["plain"])
for name, values in times.items():
    median = statistics.median(values)
    print(f"{name:12s} {tokens / median:8.0f} tokens/s  median {median * 1000:7.1f} ms "
          f"per answer  {median / plain:.3f}x the plain time")
