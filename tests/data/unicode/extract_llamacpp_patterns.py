#!/usr/bin/python3
"""Writes llamacpp_patterns.json: the pre-tokenizer regex lists of llama.cpp's
src/llama-vocab.cpp (the `regex_exprs` of each LLAMA_VOCAB_PRE_TYPE case) for the
pre-tokenizers tessera must split exactly like llama.cpp.

Usage: /usr/bin/python3 tests/data/unicode/extract_llamacpp_patterns.py [LLAMA_VOCAB_CPP]
  default: `git -C /work/.mirror/ngxson+llama.cpp/repo show HEAD:src/llama-vocab.cpp`
"""
import json
import os
import re
import subprocess
import sys

WANTED = ["LLAMA3", "QWEN2", "GPT2", "MPT", "DEEPSEEK_LLM", "DEEPSEEK_CODER", "FALCON",
          "STARCODER", "REFACT", "TEKKEN", "GPT4O", "CHATGLM4", "PORO", "SEED_CODER"]


def c_unescape(body):
    out, i = [], 0
    simple = {"\\": "\\", '"': '"', "n": "\n", "r": "\r", "t": "\t", "'": "'"}
    while i < len(body):
        if body[i] == "\\":
            out.append(simple[body[i + 1]])
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


def main():
    if len(sys.argv) > 1:
        source = open(sys.argv[1], encoding="utf-8").read()
        origin = sys.argv[1]
    else:
        repo = "/work/.mirror/ngxson+llama.cpp/repo"
        commit = subprocess.check_output(["git", "-C", repo, "rev-parse", "HEAD"], text=True).strip()
        source = subprocess.check_output(["git", "-C", repo, "show", "HEAD:src/llama-vocab.cpp"],
                                         text=True)
        origin = f"llama.cpp (ngxson/llama.cpp mirror) {commit} src/llama-vocab.cpp"
    patterns = {}
    # Each case block: one or more `case LLAMA_VOCAB_PRE_TYPE_X:` then regex_exprs = {...};
    for block in re.finditer(r"((?:\s*case LLAMA_VOCAB_PRE_TYPE_\w+:\s*(?://[^\n]*\n\s*)*)+)"
                             r"(?:\s*//[^\n]*)*\s*regex_exprs = \{(.*?)\};", source, re.S):
        names = re.findall(r"LLAMA_VOCAB_PRE_TYPE_(\w+)", block.group(1))
        body = "\n".join(line for line in block.group(2).split("\n")
                         if not line.strip().startswith("//"))
        exprs = [c_unescape(m) for m in re.findall(r'"((?:[^"\\]|\\.)*)"', body)]
        for name in names:
            if name in WANTED:
                patterns[name.lower()] = exprs
    missing = [w for w in WANTED if w.lower() not in patterns]
    if missing:
        sys.exit(f"not found: {missing}")
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llamacpp_patterns.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"origin": origin, "generator": "tests/data/unicode/extract_llamacpp_patterns.py",
                   "patterns": patterns}, f, ensure_ascii=False, indent=1)
    print(out, {k: len(v) for k, v in patterns.items()})


if __name__ == "__main__":
    main()
