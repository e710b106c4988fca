"""A multi-turn chat over tessera's gRPC session API that never re-feeds its
history: each turn appends only the new text's tokens; GetSessionInfo shows
the history growing while the server feeds nothing twice.

    python3 sdks/python/examples/chat.py 127.0.0.1:50051 "Hello" "Tell me more"
(stubs and this SDK on PYTHONPATH: docs/serving.md)
"""

import sys

from tessera_client import Client


def main(address: str, messages):
    with Client(address) as client:
        session = client.create_session(temperature=0.0)
        for turn, text in enumerate(messages):
            tokens = client.tokenize(("" if turn == 0 else " ") + text, add_bos=(turn == 0))
            before = session.info()
            session.append(tokens)
            reply = "".join(token.text for token in session.generate(max_tokens=24))
            after = session.info()
            print(f"> {text}\n{reply.strip()}")
            print(f"[turn {turn + 1}: {after.history_tokens} tokens in the session, "
                  f"{before.cached_tokens} kept in the cache, {len(tokens)} appended, "
                  f"{session.last_end.generated} generated, stop: {session.last_end.stop_reason}]")
        session.close()


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: chat.py ADDRESS MESSAGE...")
    main(sys.argv[1], sys.argv[2:])
