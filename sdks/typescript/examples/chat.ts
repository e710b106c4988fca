// A multi-turn chat over tessera's gRPC session API that never re-feeds its
// history: each turn appends only the new text's tokens; GetSessionInfo shows
// the history growing while the server feeds nothing twice.
//
//   sdks/typescript/build.sh && node build/sdks/typescript/dist/examples/chat.js \
//       127.0.0.1:50051 "Hello" "Tell me more"
import { Client } from "../src";

async function chat(address: string, messages: string[]): Promise<void> {
  const client = new Client(address);
  try {
    const session = await client.createSession({ temperature: 0 });
    for (const [turn, text] of messages.entries()) {
      const tokens = await client.tokenize((turn === 0 ? "" : " ") + text, { addBos: turn === 0 });
      const before = await session.info();
      await session.append(tokens);
      let reply = "";
      for await (const token of session.generate(24)) {
        reply += token.text;
      }
      const after = await session.info();
      const end = session.lastEnd!;
      console.log(`> ${text}\n${reply.trim()}`);
      console.log(
        `[turn ${turn + 1}: ${after.historyTokens} tokens in the session, ` +
          `${before.cachedTokens} kept in the cache, ${tokens.length} appended, ` +
          `${end.generated} generated, stop: ${end.stopReason}]`,
      );
    }
    await session.close();
  } finally {
    client.close();
  }
}

const [address, ...messages] = process.argv.slice(2);
if (!address || messages.length === 0) {
  console.error("usage: chat.js ADDRESS MESSAGE...");
  process.exit(2);
}
chat(address, messages).catch((error) => {
  console.error(`chat: ${error.message}`);
  process.exit(1);
});
