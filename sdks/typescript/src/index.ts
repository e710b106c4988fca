// tessera-client: sessions on a `tessera serve --grpc` that keep their K/V
// across turns; every turn appends only new tokens (docs/serving.md).
//
//   const client = new Client("127.0.0.1:50051");
//   const session = await client.createSession({ temperature: 0 });
//   await session.append(await client.tokenize("Once upon a time", { addBos: true }));
//   for await (const token of session.generate(32)) process.stdout.write(token.text);
export { Client, Session, TesseraError } from "./client";
export type { GenerateOptions, SessionInfo, SessionOptions, Token, TurnEnd } from "./client";
