// Client, Session and the error they throw: the TypeScript face of the
// tessera.v1.Runtime gRPC service (proto/tessera/v1/runtime.proto).
import * as path from "node:path";

import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

import type { ProtoGrpcType } from "./generated/runtime";
import type { GenerateResponse__Output } from "./generated/tessera/v1/GenerateResponse";
import type { RuntimeClient } from "./generated/tessera/v1/Runtime";
import type { SessionInfo__Output } from "./generated/tessera/v1/SessionInfo";

/** A call the server refused: `code` is the gRPC status, `details` says why. */
export class TesseraError extends Error {
  constructor(
    readonly code: grpc.status,
    readonly details: string,
  ) {
    super(`${grpc.status[code]}: ${details}`);
    this.name = "TesseraError";
  }
}

export interface Token {
  id: number;
  /** Its text after the token before it ("" mid-character). */
  text: string;
  /** Since the generate call started. */
  seconds: number;
}

export interface TurnEnd {
  /** eos, stop_token, max_tokens, cache_full, cancelled, shutdown */
  stopReason: string;
  generated: number;
  seconds: number;
  /** Forwards the turn took (generated / steps: tokens per forward). */
  steps: number;
  /** Tokens its proposer drafted. */
  drafted: number;
}

export type SessionInfo = SessionInfo__Output;

export interface SessionOptions {
  /** Unset options take the server's [sampling]. 0: greedy. */
  temperature?: number;
  topK?: number;
  topP?: number;
  seed?: number;
  /** What drafts for the session: the server's decode.proposer when unset,
   * else one of its decode.alternate_proposers (e.g. "none"). */
  proposer?: string;
}

export interface GenerateOptions {
  /** End the turn at these tokens (kept in the history, not streamed). */
  stopTokens?: number[];
  /** Do not end at the vocabulary's end-of-generation tokens. */
  ignoreEos?: boolean;
}

// The proto ships beside dist/ (build.sh copies it); these options must match
// build.sh's proto-loader-gen-types flags, which typed the messages.
const PROTO_ROOT = path.resolve(__dirname, "..", "..", "proto");
let runtimeService: ProtoGrpcType["tessera"]["v1"]["Runtime"] | undefined;

function loadRuntimeService() {
  if (!runtimeService) {
    const definition = protoLoader.loadSync("tessera/v1/runtime.proto", {
      includeDirs: [PROTO_ROOT],
      longs: Number,
      enums: String,
      defaults: true,
      oneofs: true,
    });
    const loaded = grpc.loadPackageDefinition(definition) as unknown as ProtoGrpcType;
    runtimeService = loaded.tessera.v1.Runtime;
  }
  return runtimeService;
}

function asTesseraError(error: unknown): unknown {
  const status = error as Partial<grpc.ServiceError>;
  if (typeof status.code === "number" && typeof status.details === "string") {
    return new TesseraError(status.code, status.details);
  }
  return error;
}

type Callback<Response> = (error: grpc.ServiceError | null, response?: Response) => void;

/** A connection to `tessera serve --grpc ADDRESS`. */
export class Client {
  /** @internal */ readonly stub: RuntimeClient;
  /** @internal */ readonly metadata = new grpc.Metadata();

  constructor(address: string, options: { apiKey?: string } = {}) {
    const Runtime = loadRuntimeService();
    this.stub = new Runtime(address, grpc.credentials.createInsecure());
    if (options.apiKey) {
      this.metadata.set("authorization", `Bearer ${options.apiKey}`);
    }
  }

  /** @internal One unary call as a promise; refusals reject with TesseraError. */
  unary<Response>(invoke: (callback: Callback<Response>) => void): Promise<Response> {
    return new Promise((resolve, reject) =>
      invoke((error, response) => (error ? reject(asTesseraError(error)) : resolve(response!))),
    );
  }

  /** A new, empty session. */
  async createSession(options: SessionOptions = {}): Promise<Session> {
    const { seed, proposer, ...sampling } = options;
    const response = await this.unary<{ sessionId: string; seed: number }>((done) =>
      this.stub.CreateSession({ sampling, seed, proposer }, this.metadata, done),
    );
    return new Session(this, response.sessionId, response.seed);
  }

  async tokenize(text: string, options: { addBos?: boolean; parseSpecial?: boolean } = {}) {
    const response = await this.unary<{ tokens: number[] }>((done) =>
      this.stub.Tokenize({ text, ...options }, this.metadata, done),
    );
    return response.tokens;
  }

  async detokenize(tokens: number[]): Promise<string> {
    const response = await this.unary<{ text: string }>((done) =>
      this.stub.Detokenize({ tokens }, this.metadata, done),
    );
    return response.text;
  }

  close(): void {
    this.stub.close();
  }
}

/** A session on the server; create it with Client.createSession(). */
export class Session {
  /** Why the last generate() ended; undefined while it runs or when it failed. */
  lastEnd: TurnEnd | undefined;

  constructor(
    private readonly client: Client,
    readonly id: string,
    /** The seed its sampler started from (asked for, or chosen by the server):
     * pass it to createSession to replay. Undefined for a fork. */
    readonly seed?: number,
  ) {}

  /** Appends token ids (all or none); resolves to the history's length. */
  async append(tokens: number[]): Promise<number> {
    const response = await this.client.unary<{ historyTokens: number }>((done) =>
      this.client.stub.AppendTokens({ sessionId: this.id, tokens }, this.client.metadata, done),
    );
    return response.historyTokens;
  }

  /** Streams the turn's tokens. Leaving the loop early cancels the turn; the
   * session stays usable. */
  async *generate(maxTokens: number, options: GenerateOptions = {}): AsyncGenerator<Token> {
    const call = this.client.stub.Generate(
      { sessionId: this.id, maxTokens, stopTokens: options.stopTokens, ignoreEos: options.ignoreEos },
      this.client.metadata,
    );
    this.lastEnd = undefined;
    try {
      for await (const event of call as AsyncIterable<GenerateResponse__Output>) {
        if (event.event === "token" && event.token) {
          yield { id: event.token.id, text: event.token.text, seconds: event.token.seconds };
        } else if (event.event === "end" && event.end) {
          const { stopReason, generated, seconds, steps, drafted } = event.end;
          this.lastEnd = { stopReason, generated, seconds, steps, drafted };
        }
      }
    } catch (error) {
      throw asTesseraError(error);
    } finally {
      call.on("error", () => {}); // the CANCELLED that cancel() raises is ours
      call.cancel(); // a no-op once the stream ended
    }
  }

  /** A new session with this one's history (copy-on-write on `paged`). */
  async fork(): Promise<Session> {
    const response = await this.client.unary<{ sessionId: string }>((done) =>
      this.client.stub.ForkSession({ sessionId: this.id }, this.client.metadata, done),
    );
    return new Session(this.client, response.sessionId);
  }

  /** What the session holds; `history` (its token ids) with includeHistory. */
  info(options: { includeHistory?: boolean } = {}): Promise<SessionInfo> {
    return this.client.unary<SessionInfo>((done) =>
      this.client.stub.GetSessionInfo(
        { sessionId: this.id, includeHistory: options.includeHistory },
        this.client.metadata,
        done,
      ),
    );
  }

  async close(): Promise<void> {
    await this.client.unary<object>((done) =>
      this.client.stub.CloseSession({ sessionId: this.id }, this.client.metadata, done),
    );
  }
}
