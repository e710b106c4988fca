// The TypeScript SDK end to end against a real `tessera serve --grpc`
// (address in argv[2]): turns that keep the history, fork, errors as
// TesseraError with the gRPC status, a loop left early, many sessions at once.
//   node dist/test/sdk.test.js 127.0.0.1:50051
import * as assert from "node:assert/strict";
import { after, test } from "node:test";

import { status } from "@grpc/grpc-js";

import { Client, Session, TesseraError } from "../src";

const address = process.argv[2];
if (!address) {
  console.error("usage: sdk.test.js ADDRESS");
  process.exit(2);
}
const client = new Client(address);
after(() => client.close());

async function collect(session: Session, maxTokens: number): Promise<number[]> {
  const ids: number[] = [];
  for await (const token of session.generate(maxTokens, { ignoreEos: true })) {
    ids.push(token.id);
  }
  return ids;
}

async function rejection(promise: Promise<unknown>): Promise<TesseraError> {
  let refusal: unknown;
  await promise.catch((error: unknown) => (refusal = error));
  assert.ok(refusal instanceof TesseraError, `not refused with a TesseraError: ${refusal}`);
  return refusal;
}

test("turns keep the history and never feed it again", async () => {
  const session = await client.createSession({ temperature: 0 });
  const history = await client.tokenize("Once upon a time", { addBos: true });
  assert.equal(await session.append(history), history.length);
  for (let turn = 0; turn < 2; turn++) {
    const reply = await collect(session, 10);
    assert.equal(reply.length, 10);
    assert.equal(session.lastEnd?.stopReason, "max_tokens");
    history.push(...reply);
    const info = await session.info();
    assert.equal(info.historyTokens, history.length);
    assert.equal(info.cachedTokens, history.length - 1);
    const more = await client.tokenize(" Then");
    await session.append(more);
    history.push(...more);
  }
  const fork = await session.fork();
  assert.deepEqual(await collect(fork, 8), await collect(session, 8));
  await session.close();
  await fork.close();
});

test("the seed is reported and the history shown when asked", async () => {
  const session = await client.createSession({ temperature: 1 });
  assert.equal(typeof session.seed, "number");
  assert.equal((await session.info()).seed, session.seed);
  const prompt = await client.tokenize("Once upon a time", { addBos: true });
  await session.append(prompt);
  const reply = await collect(session, 12);
  assert.deepEqual((await session.info({ includeHistory: true })).history, [...prompt, ...reply]);
  assert.deepEqual((await session.info()).history, []);
  const replay = await client.createSession({ temperature: 1, seed: session.seed });
  await replay.append(prompt);
  assert.deepEqual(await collect(replay, 12), reply);
  await session.close();
  await replay.close();
});

test("refusals are TesseraErrors with the gRPC status", async () => {
  const session = await client.createSession();
  const outside = await rejection(session.append([1, 1 << 20]));
  assert.equal(outside.code, status.INVALID_ARGUMENT);
  assert.match(outside.details, /outside this model's vocabulary/);
  await session.close();
  const closed = await rejection(session.info());
  assert.equal(closed.code, status.NOT_FOUND);
  assert.match(closed.details, /closed by its owner/);
  const unknown = await rejection(new Session(client, "0".repeat(32)).append([1]));
  assert.equal(unknown.code, status.NOT_FOUND);
  const proposer = await rejection(client.createSession({ proposer: "tree" }));
  assert.equal(proposer.code, status.INVALID_ARGUMENT);
  assert.match(proposer.details, /is not one this server runs/);
  await (await client.createSession({ proposer: "none" })).close();
});

test("leaving the loop early cancels the turn, the session stays usable", async () => {
  const session = await client.createSession();
  await session.append(await client.tokenize("Once upon a time", { addBos: true }));
  let seen = 0;
  for await (const token of session.generate(100000, { ignoreEos: true })) {
    assert.ok(token.id >= 0);
    if (++seen === 3) break;
  }
  for (let attempt = 0; ; attempt++) {
    try {
      await session.append([1]); // taken once the cancelled turn ended
      break;
    } catch (error) {
      assert.ok(error instanceof TesseraError && error.code === status.FAILED_PRECONDITION);
      assert.ok(attempt < 500, "the session never took an append after the cancel");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
  assert.equal((await session.info()).generating, false);
  await session.close();
});

test("sessions at once each get what they get alone", async () => {
  const run = async (seed: number) => {
    const session = await client.createSession({ temperature: 0.8, seed });
    await session.append(await client.tokenize("The dog", { addBos: true }));
    const ids = await collect(session, 12);
    await session.close();
    return ids;
  };
  const seeds = [0, 1, 2, 3, 4, 5, 6, 7];
  const together = await Promise.all(seeds.map(run));
  for (const seed of seeds) {
    assert.deepEqual(together[seed], await run(seed), `seed ${seed}`);
  }
});
