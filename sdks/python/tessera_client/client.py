"""Client, Session and the errors they raise (see the package docstring)."""

from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence

import grpc

from tessera.v1 import runtime_pb2, runtime_pb2_grpc


class TesseraError(Exception):
    """A call the server refused: `code` is the grpc.StatusCode, `details` why."""

    def __init__(self, code: grpc.StatusCode, details: str):
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


@dataclass
class Token:
    id: int
    text: str      # its text after the token before it
    seconds: float  # since the generate call started


@dataclass
class TurnEnd:
    stop_reason: str  # eos, stop_token, max_tokens, cache_full, cancelled, shutdown
    generated: int
    seconds: float
    steps: int = 0    # forwards the turn took (generated / steps: tokens per forward)
    drafted: int = 0  # tokens its proposer drafted


def _call(method, request, metadata):
    try:
        return method(request, metadata=metadata)
    except grpc.RpcError as error:
        raise TesseraError(error.code(), error.details()) from None


class Session:
    """A session on the server; create it with Client.create_session()."""

    def __init__(self, client: "Client", session_id: str, seed: Optional[int] = None):
        self._client = client
        self.id = session_id
        # The seed its sampler started from (asked for, or chosen by the
        # server): pass it to create_session to replay. None for a fork.
        self.seed = seed
        self.last_end: Optional[TurnEnd] = None

    def append(self, tokens: Sequence[int]) -> int:
        """Appends token ids (all or none); returns the history's length."""
        response = self._client._rpc("AppendTokens", runtime_pb2.AppendTokensRequest(
            session_id=self.id, tokens=list(tokens)))
        return response.history_tokens

    def generate(self, max_tokens: int, stop_tokens: Sequence[int] = (),
                 ignore_eos: bool = False) -> Iterator[Token]:
        """Streams the turn's tokens; afterwards `last_end` says why it ended.
        Leaving the loop early cancels the turn; the session stays usable."""
        request = runtime_pb2.GenerateRequest(session_id=self.id, max_tokens=max_tokens,
                                              stop_tokens=list(stop_tokens),
                                              ignore_eos=ignore_eos)
        stream = self._client._stub.Generate(request, metadata=self._client._metadata)
        self.last_end = None
        try:
            for event in stream:
                if event.HasField("token"):
                    yield Token(event.token.id, event.token.text, event.token.seconds)
                else:
                    self.last_end = TurnEnd(event.end.stop_reason, event.end.generated,
                                            event.end.seconds, event.end.steps,
                                            event.end.drafted)
        except grpc.RpcError as error:
            raise TesseraError(error.code(), error.details()) from None
        finally:
            stream.cancel()  # a no-op when the stream ended

    def fork(self) -> "Session":
        """A new session with this one's history (copy-on-write on paged)."""
        response = self._client._rpc("ForkSession", runtime_pb2.ForkSessionRequest(
            session_id=self.id))
        return Session(self._client, response.session_id)

    def info(self, include_history: bool = False) -> runtime_pb2.SessionInfo:
        """What the session holds; `history` (its token ids) with include_history."""
        return self._client._rpc("GetSessionInfo", runtime_pb2.GetSessionInfoRequest(
            session_id=self.id, include_history=include_history))

    def close(self) -> None:
        self._client._rpc("CloseSession", runtime_pb2.CloseSessionRequest(session_id=self.id))


class Client:
    """A connection to `tessera serve --grpc ADDRESS`."""

    def __init__(self, address: str, api_key: Optional[str] = None):
        self._channel = grpc.insecure_channel(address)
        self._stub = runtime_pb2_grpc.RuntimeStub(self._channel)
        self._metadata = [("authorization", f"Bearer {api_key}")] if api_key else []

    def _rpc(self, name, request):
        return _call(getattr(self._stub, name), request, self._metadata)

    def create_session(self, temperature: Optional[float] = None, top_k: Optional[int] = None,
                       top_p: Optional[float] = None, seed: Optional[int] = None,
                       proposer: Optional[str] = None) -> Session:
        """A new, empty session; unset sampling options take the server's [sampling].
        `proposer`: what drafts for it (the server's decode.proposer when unset, else
        one of its decode.alternate_proposers, e.g. "none")."""
        sampling = runtime_pb2.SamplingOptions()
        if temperature is not None:
            sampling.temperature = temperature
        if top_k is not None:
            sampling.top_k = top_k
        if top_p is not None:
            sampling.top_p = top_p
        request = runtime_pb2.CreateSessionRequest(sampling=sampling)
        if seed is not None:
            request.seed = seed
        if proposer is not None:
            request.proposer = proposer
        response = self._rpc("CreateSession", request)
        return Session(self, response.session_id, response.seed)

    def tokenize(self, text: str, add_bos: bool = False,
                 parse_special: bool = False) -> List[int]:
        return list(self._rpc("Tokenize", runtime_pb2.TokenizeRequest(
            text=text, add_bos=add_bos, parse_special=parse_special)).tokens)

    def detokenize(self, tokens: Sequence[int]) -> str:
        return self._rpc("Detokenize", runtime_pb2.DetokenizeRequest(tokens=list(tokens))).text

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
