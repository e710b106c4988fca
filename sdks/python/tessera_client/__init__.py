"""Python client of tessera serve's gRPC session API (tessera.v1.Runtime).

A Session keeps its history's K/V on the server between turns: append() adds
token ids, generate() streams the reply and feeds only what is new, so the
history is never fed again.

    from tessera_client import Client
    with Client("127.0.0.1:50051") as client:
        session = client.create_session(seed=1)
        session.append(client.tokenize("Once upon a time", add_bos=True))
        for token in session.generate(max_tokens=32):
            print(token.text, end="", flush=True)

The stubs (tessera/v1/runtime_pb2*.py) are generated from
proto/tessera/v1/runtime.proto at build time, into build/<preset>/sdks/python;
put that directory and this one on PYTHONPATH (docs/serving.md).
"""

from tessera_client.client import Client, Session, Token, TurnEnd, TesseraError

__all__ = ["Client", "Session", "Token", "TurnEnd", "TesseraError"]
