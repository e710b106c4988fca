// tessera serve through the official openai client (npm `openai`, pinned in
// scripts/npm): completions and chat, whole and streamed, a bad request and
// the list of models. Prints what it checked; exits 1 at the first mismatch.
//   node serve_openai_client.mjs <node_modules> <base url>
import { createRequire } from "node:module";
import assert from "node:assert/strict";

const [modules, baseURL] = process.argv.slice(2);
const require = createRequire(modules + "/");
const { default: OpenAI } = await import(require.resolve("openai"));
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });

const models = await client.models.list();
assert.equal(models.data[0].id, "stories260K.gguf");
console.log("models:", models.data.map((m) => m.id).join(", "));

const completion = await client.completions.create({
  model: "stories260K.gguf", prompt: "Once upon a time", max_tokens: 24, temperature: 0,
});
assert.equal(completion.choices[0].finish_reason, "length");
assert.equal(completion.usage.completion_tokens, 24);
console.log("completion:", JSON.stringify(completion.choices[0].text));

const chat = await client.chat.completions.create({
  model: "stories260K.gguf", max_tokens: 20, seed: 7,
  messages: [{ role: "system", content: "Tell a story." }, { role: "user", content: "A dog" }],
});
const whole = chat.choices[0].message.content;
console.log("chat:", JSON.stringify(whole), chat.choices[0].finish_reason);

const stream = await client.chat.completions.create({
  model: "stories260K.gguf", max_tokens: 20, seed: 7, stream: true,
  messages: [{ role: "system", content: "Tell a story." }, { role: "user", content: "A dog" }],
});
let streamed = "";
let chunks = 0;
for await (const chunk of stream) {
  streamed += chunk.choices[0]?.delta?.content ?? "";
  chunks++;
}
assert.equal(streamed, whole, "the streamed reply equals the whole one");
console.log(`chat stream: ${chunks} chunks, same text`);

const scored = await client.chat.completions.create({
  model: "stories260K.gguf", max_tokens: 8, temperature: 0, logprobs: true, top_logprobs: 3,
  messages: [{ role: "user", content: "A dog" }],
});
const content = scored.choices[0].logprobs.content;
assert.equal(content.length, scored.usage.completion_tokens, "one logprob per token");
for (const entry of content) {
  assert.equal(entry.top_logprobs.length, 3);
  assert.equal(entry.top_logprobs[0].token, entry.token, "greedy: the most likely token");
  assert.ok(entry.logprob <= 0);
}
assert.equal(content.map((e) => e.token).join(""), scored.choices[0].message.content);
console.log(`logprobs: ${content.length} tokens, each with 3 alternatives`);
const penalised = await client.chat.completions.create({
  model: "stories260K.gguf", max_tokens: 8, temperature: 0, frequency_penalty: 2,
  presence_penalty: 1, messages: [{ role: "user", content: "A dog" }],
});
assert.notEqual(penalised.choices[0].message.content, scored.choices[0].message.content);
console.log("penalties: taken, the greedy answer changes");

await assert.rejects(
  client.completions.create({ model: "x", prompt: "Once", max_tokens: -1 }),
  (error) => error.status === 400 && /max_tokens/.test(error.message),
);
console.log("bad request: 400 with the field named");

// A prompt past the context: 400 context_length_exceeded, which the client
// does not retry (it retried the 429 this used to be, then raised
// RateLimitError). A client with its default retries, as a user has it.
const retrying = new OpenAI({ baseURL, apiKey: "unused" });
const tooLong = Array.from({ length: 600 }, (_, i) => 10 + (i % 100));
const started = Date.now();
await assert.rejects(
  retrying.completions.create({ model: "x", prompt: tooLong, max_tokens: 4 }),
  (error) =>
    error instanceof OpenAI.BadRequestError && error.code === "context_length_exceeded" &&
    /512/.test(error.message),
);
assert.ok(Date.now() - started < 2000, "no retry with backoff");
console.log("context exceeded: 400 context_length_exceeded, not retried");

const model = await client.models.retrieve("stories260K.gguf");
assert.equal(model.id, "stories260K.gguf");
console.log("models.retrieve:", model.id);
