"""Many sessions at once through the Python SDK against a real `tessera serve
--grpc`: every session runs several turns (append a user line, generate), first
each alone, one after another, then all at once on their own threads. Passes
when no session is lost or refused and every session's tokens, turn by turn,
equal its run alone (INV-3 seen from a client), and every turn fed only the
new tokens (the cache holds the whole history but its last token).

    python_load_test.py ADDRESS SESSIONS TURNS TOKENS
"""

import sys
import threading
import time

from tessera_client import Client, TesseraError

PROMPTS = ["Once upon a time", "The little dog", "A girl named Lily", "Tom had a ball",
           "One day, a bird", "The sun was hot"]
USER_LINES = [" Then", " The end.", " She smiled.", " He ran home.", " It was fun."]


def run_session(client, index, turns, tokens):
    """One session's whole conversation; returns its tokens per turn."""
    session = client.create_session(temperature=0.8, top_p=0.95, seed=1000 + index)
    replies = []
    history = client.tokenize(PROMPTS[index % len(PROMPTS)], add_bos=True)
    session.append(history)
    for turn in range(turns):
        reply = [t.id for t in session.generate(max_tokens=tokens, ignore_eos=True)]
        if session.last_end is None or session.last_end.stop_reason != "max_tokens":
            raise AssertionError(f"session {index} turn {turn}: ended {session.last_end}")
        replies.append(reply)
        history += reply
        info = session.info()
        if info.history_tokens != len(history) or info.cached_tokens != len(history) - 1:
            raise AssertionError(
                f"session {index} turn {turn}: history {info.history_tokens} cached "
                f"{info.cached_tokens}, expected {len(history)} and {len(history) - 1}")
        line = client.tokenize(USER_LINES[(index + turn) % len(USER_LINES)])
        session.append(line)
        history += line
    session.close()
    return replies


def main():
    address, sessions, turns, tokens = sys.argv[1], *map(int, sys.argv[2:5])
    with Client(address) as client:
        start = time.perf_counter()
        alone = [run_session(client, i, turns, tokens) for i in range(sessions)]
        alone_seconds = time.perf_counter() - start

        together = [None] * sessions
        failures = []

        def worker(i):
            try:
                together[i] = run_session(client, i, turns, tokens)
            except (TesseraError, AssertionError) as error:
                failures.append(f"session {i}: {error}")

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(sessions)]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        together_seconds = time.perf_counter() - start

    differ = [i for i in range(sessions) if together[i] is not None and together[i] != alone[i]]
    generated = sessions * turns * tokens
    print(f"{sessions} sessions x {turns} turns x {tokens} tokens: alone one after another "
          f"{alone_seconds:.1f} s ({generated / alone_seconds:.0f} tokens/s), at once "
          f"{together_seconds:.1f} s ({generated / together_seconds:.0f} tokens/s)")
    print(f"lost or refused: {len(failures)}; tokens differing from alone: {len(differ)}")
    for failure in failures[:10]:
        print("  " + failure)
    for i in differ[:10]:
        first = next(t for t in range(turns) if together[i][t] != alone[i][t])
        print(f"  session {i} turn {first}: alone {alone[i][first]} at once {together[i][first]}")
    sys.exit(1 if failures or differ else 0)


if __name__ == "__main__":
    main()
