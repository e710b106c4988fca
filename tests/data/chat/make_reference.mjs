// Renders every template of templates.json with every case of cases.json using
// @huggingface/jinja (the reference the tessera chat-template tests compare
// against, exactly), and writes expected.json next to this file.
//
//   node tests/data/chat/make_reference.mjs [node_modules dir]
//
// The node_modules directory defaults to $TESSERA_REFERENCES_DIR, then to
// .deps/npm/node_modules (scripts/install-references.sh installs the pinned
// @huggingface/jinja 0.5.11 there). strftime_now() reads the clock, so the
// clock is pinned to cases.json's "now" in UTC.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

process.env.TZ = "UTC";
const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.argv[2] ?? process.env.TESSERA_REFERENCES_DIR ??
    path.join(here, "../../../.deps/npm/node_modules");
const jinjaDir = path.join(modules, "@huggingface/jinja");
const { Template } = await import(pathToFileURL(path.join(jinjaDir, "dist/index.js")).href);
const jinjaVersion = JSON.parse(fs.readFileSync(path.join(jinjaDir, "package.json"), "utf8")).version;

const cases = JSON.parse(fs.readFileSync(path.join(here, "cases.json"), "utf8"));
const templates = JSON.parse(fs.readFileSync(path.join(here, "templates.json"), "utf8"));

const RealDate = Date;
const fixedNow = new RealDate(cases.now).getTime();
globalThis.Date = class extends RealDate {
  constructor(...args) {
    super(...(args.length ? args : [fixedNow]));
  }
  static now() {
    return fixedNow;
  }
};

const results = [];
for (const t of templates) {
  const source = fs.readFileSync(path.join(here, t.file), "utf8");
  let template;
  try {
    template = new Template(source);
  } catch (e) {
    results.push({ template: t.name, parse_error: String(e.message ?? e) });
    continue;
  }
  for (const c of cases.cases) {
    for (const addGenerationPrompt of cases.add_generation_prompt) {
      const context = {
        messages: c.messages,
        add_generation_prompt: addGenerationPrompt,
        bos_token: t.bos_token,
        eos_token: t.eos_token,
        ...(c.extra ?? {}),
      };
      const entry = { template: t.name, case: c.name, add_generation_prompt: addGenerationPrompt };
      try {
        entry.output = template.render(structuredClone(context));
      } catch (e) {
        entry.error = String(e.message ?? e);
      }
      results.push(entry);
    }
  }
}

const out = {
  generator: "tests/data/chat/make_reference.mjs",
  reference: `@huggingface/jinja ${jinjaVersion}`,
  now: cases.now,
  results,
};
fs.writeFileSync(path.join(here, "expected.json"), JSON.stringify(out, null, 2) + "\n");
const errors = results.filter((r) => r.error || r.parse_error).length;
console.log(`expected.json: ${results.length} renderings (${errors} errors) with @huggingface/jinja ${jinjaVersion}`);
