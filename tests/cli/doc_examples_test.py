#!/usr/bin/env python3
"""Every example in the help and the docs runs as written from the repository root.

Extracts the example command lines of
  - `tessera --help`: the command table (the command after each description),
  - `tessera <command> --help`: every line of its "examples:" section, and any
    other indented line that runs tessera (bench's --spec and --serve parts),
  - every Markdown file (README.md, docs/*.md, benchmarks/, examples/, ...):
    every line of a ```sh, ```bash, ```shell or ```console block that runs
    tessera, as the first word of a command or after a pipe, `&&`, `;` or an
    environment assignment (and of an unlabelled block, a line that is a plain
    `tessera <command>`),
  - configs/*.toml and sweeps/*.toml: the indented command lines of the
    comment at the top ("#   tessera ..."), likewise,
continuation lines (a trailing backslash, an open quote) joined. Each example
is then either run or named in doc_examples_skip.txt beside this script with
the reason it is not run (minutes, a server, a download, a file made by an
example that is not run); the examples of a section "[only with PATH: why]"
run where PATH exists (the reference tokenizers of scripts/install-references.sh)
and are left out elsewhere, saying so. Each example that is run runs once, in bash from the
repository root with `tessera` on PATH (the binary under test), standard input
empty, HOME a fresh directory and /tmp/ replaced by a fresh directory (so two
runs of the test never share their outputs), bounded by --timeout seconds. It
must exit 0 and leave the source tree as it found it (no file added or
changed outside .git, build*/ and .deps/). The test fails when an example
fails, when an example is neither run nor listed, and when the list names an
example that no longer exists.

  doc_examples_test.py <tessera> <source-dir> [--timeout S] [--list] [--only TEXT]
Exit 77 (skipped) without ../shared/models beside the repository.

--list prints every example with its sources and what the test does with it;
--only runs the examples containing TEXT (and skips the list's checks).
"""
import argparse
import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

COMMANDS = ["generate", "chat", "serve", "perplexity", "sweep", "bench", "fit-projection",
            "inspect", "quantize", "make-model", "tokenize", "plugins", "version"]
IGNORED_DIRS = {".git", ".deps", "node_modules", ".cache"}
SHELL_LANGUAGES = {"sh", "bash", "shell", "console", ""}
# A line whose first word (after environment assignments) is tessera.
STARTS_WITH_TESSERA = re.compile(r"^\s+([A-Za-z_][A-Za-z0-9_]*=\S*\s+)*(\S*/)?tessera\s")
OPERATORS = {"|", "||", "&&", ";", "&", "(", ")", "|&", ";;"}


def complete(text):
    """True when text is a whole shell command: no open quote, no trailing backslash."""
    if text.rstrip().endswith("\\"):
        return False
    try:
        shlex.split(text, comments=True)
        return True
    except ValueError:
        return False


def strip_comment(text):
    """text without a trailing unquoted # comment."""
    quote = None
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = None
        elif c == "\\":
            i += 1
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i].rstrip()
        i += 1
    return text.rstrip()


def normalise(text):
    """An example's name: continuations joined by one space, the comment dropped."""
    return strip_comment(re.sub(r"\s*\\\n\s*", " ", text).strip())


def join_lines(lines, starts=lambda i: True):
    """Lines joined into whole commands: (first line index, command text), from
    each line i where starts(i) (a line after a command that is not one is left out)."""
    commands = []
    i = 0
    while i < len(lines):
        start, text = i, lines[i]
        if not starts(i):
            i += 1
            continue
        while not complete(text) and i + 1 < len(lines):
            i += 1
            text += "\n" + lines[i]
        commands.append((start, text))
        i += 1
    return commands


def runs_tessera(command):
    """True when one of the command's simple commands is tessera (or a path to it)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    at_start = True
    try:
        for token in lexer:
            if token in OPERATORS:
                at_start = True
            elif at_start:
                if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", token):
                    continue  # an environment assignment before the command
                if token == "tessera" or token.endswith("/tessera"):
                    return True
                at_start = False
    except ValueError:
        return False
    return False


def help_text(tessera, args):
    result = subprocess.run([tessera, *args], capture_output=True, text=True, timeout=30)
    if result.returncode != 0:
        sys.exit(f"FAIL: tessera {' '.join(args)} exited {result.returncode}: {result.stderr}")
    return result.stdout


def from_main_help(text):
    """The command table: the command after each line's description."""
    examples = []
    in_table = False
    for line in text.splitlines():
        if line.startswith("commands:"):
            in_table = True
        elif in_table and not line.startswith(" "):
            in_table = False
        elif in_table:
            m = re.match(r"^\s+\S.*?:\s+((\S+=\S+\s+)*tessera\s.*)$", line)
            if m:
                examples.append(m.group(1))
    return examples


def from_command_help(text):
    """The examples: section, and any other indented line that runs tessera."""
    lines = text.splitlines()
    # The usage paragraph (its continuation lines run tessera too) is not an example.
    body_start = 0
    if lines and lines[0].startswith("usage:"):
        while body_start < len(lines) and lines[body_start].strip():
            body_start += 1
    examples = []
    in_examples = False
    candidates = []
    for line in lines[body_start:]:
        if line.startswith("examples:"):
            in_examples = True
            continue
        if line and not line[0].isspace():
            in_examples = False
        candidates.append((in_examples, line))
    # A command starts on a line of the section, or on an indented line whose
    # first word runs tessera; its continuation lines are indented too.
    texts = [line.strip() for _, line in candidates]

    def starts(i):
        in_section, line = candidates[i]
        return bool(line.strip()) and (in_section or STARTS_WITH_TESSERA.match(line) is not None)

    for _, command in join_lines(texts, starts):
        examples.append(command)
    return examples


def from_markdown(path):
    """(line number, command) of each shell block line that runs tessera."""
    examples = []
    block, language, start = None, None, 0
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for n, line in enumerate(lines, 1):
        fence = re.match(r"^\s*```\s*([\w+-]*)", line)
        if fence:
            if block is None:
                block, language, start = [], fence.group(1).lower(), n
            else:
                if language in SHELL_LANGUAGES:
                    examples += block_examples(block, language, start)
                block = None
            continue
        if block is not None:
            block.append(line)
    return examples


def markdown_files(source_dir):
    """README.md, docs/*.md, then every other Markdown file of the tree."""
    found = []
    for root, dirs, files in os.walk(source_dir):
        dirs[:] = sorted(d for d in dirs if d not in IGNORED_DIRS and not
                         (root == source_dir and d.startswith("build")))
        found += [os.path.relpath(os.path.join(root, f), source_dir) for f in files if f.endswith(".md")]
    rank = lambda p: (p != "README.md", not p.startswith("docs" + os.sep), p)
    return sorted(found, key=rank)


def from_toml_comment(path):
    """(line number, command) of each "#   command" line of the file's first comment."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    block = []
    for line in lines:
        if not line.startswith("#"):
            break
        # An example is indented in the comment; prose is not a command.
        block.append(line[1:].strip() if line.startswith("#  ") else "")
    return [(n, c) for n, c in block_examples(block, "sh", 0)]


def block_examples(block, language, fence_line):
    if language == "console":
        # Only the prompt lines are commands; the rest is output.
        block = [l[2:] if l.startswith("$ ") else "" for l in block]
    found = []
    if language == "":
        # An unlabelled block (text, output): only a line that is a plain tessera command.
        plain = re.compile(r"^\s*tessera (%s)( |$)" % "|".join(COMMANDS))
        starts = lambda i: plain.match(block[i]) is not None
    else:
        starts = lambda i: True
    for i, command in join_lines(block, starts):
        if runs_tessera(command):
            found.append((fence_line + 1 + i, command.strip()))
    return found


def needed_path(reason):
    """PATH of a section "[only with PATH: why]": its examples run where PATH exists."""
    m = re.match(r"^only with (\S+):", reason or "")
    return m.group(1) if m else None


def read_skip_list(path):
    """{example: reason} of the list beside this script."""
    skips = {}
    reason = None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            m = re.match(r"^\[(.+)\]$", line)
            if m:
                reason = m.group(1)
                continue
            if reason is None:
                sys.exit(f"FAIL: {path}:{n}: an example before any [reason] line")
            if line in skips:
                sys.exit(f"FAIL: {path}:{n}: listed twice: {line}")
            skips[line] = reason
    return skips


def tree_state(source_dir):
    """{path: mtime} of the source tree outside .git, build*/ and .deps/."""
    state = {}
    for root, dirs, files in os.walk(source_dir):
        if root == source_dir:
            dirs[:] = [d for d in dirs if d not in IGNORED_DIRS and not d.startswith("build")]
        for name in dirs + files:
            p = os.path.join(root, name)
            try:
                state[os.path.relpath(p, source_dir)] = os.lstat(p).st_mtime_ns
            except FileNotFoundError:
                pass
    return state


def run_example(command, cwd, env, timeout):
    """(exit code or None when it ran out of time, output) of bash -c command.
    The example runs in a process group of its own, killed at the end: a
    server it started in the background does not outlive it."""
    process = subprocess.Popen(["bash", "-o", "pipefail", "-c", command], cwd=cwd, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        code = None
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if code is None:
        output, _ = process.communicate()
    return code, output.decode("utf-8", "replace")


def print_sources(examples, skips):
    """Per source (a help text, a file): how many of its examples run and are listed."""
    counts = {}
    for example, where in examples.items():
        for w in where:
            source = w.rsplit(":", 1)[0] if not w.startswith("tessera") else w
            run, listed = counts.get(source, (0, 0))
            not_run = example in skips and not needed_path(skips[example])
            counts[source] = (run, listed + 1) if not_run else (run + 1, listed)
    for source, (run, listed) in counts.items():
        print(f"  {source}: {run} run, {listed} listed")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tessera")
    parser.add_argument("source_dir")
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--only")
    args = parser.parse_args()
    tessera = os.path.abspath(args.tessera)
    source_dir = os.path.abspath(args.source_dir)
    skip_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "doc_examples_skip.txt")

    # example -> the places it is written, in the order first seen (which is
    # the order they run: a later example may read what an earlier wrote).
    examples = {}

    def add(command, where):
        examples.setdefault(normalise(command), []).append(where)

    for command in from_main_help(help_text(tessera, ["--help"])):
        add(command, "tessera --help")
    for name in COMMANDS:
        for command in from_command_help(help_text(tessera, [name, "--help"])):
            add(command, f"tessera {name} --help")
    for relative in markdown_files(source_dir):
        for n, command in from_markdown(os.path.join(source_dir, relative)):
            add(command, f"{relative}:{n}")
    for folder in ("configs", "sweeps"):
        for path in sorted(glob.glob(os.path.join(source_dir, folder, "*.toml"))):
            relative = os.path.relpath(path, source_dir)
            for n, command in from_toml_comment(path):
                add(command, f"{relative}:{n}")

    skips = read_skip_list(skip_path)
    if args.list:
        for example, where in examples.items():
            what = f"listed: {skips[example]}" if example in skips else "run"
            if needed_path(skips.get(example)):
                what = f"run where {needed_path(skips[example])} exists"
            print(f"{example}\n    {', '.join(where)}\n    -> {what}")
        return 0

    problems = []
    if not args.only:
        for example in skips:
            if example not in examples:
                problems.append(f"listed in {os.path.basename(skip_path)} but no longer an example: {example}")

    # The examples name the models and texts of ../shared beside the repository.
    shared = os.path.join(os.path.dirname(source_dir), "shared")
    if not os.path.isfile(os.path.join(shared, "models", "stories260K.gguf")):
        print(f"SKIP: no {shared}/models/stories260K.gguf")
        return 77

    work = tempfile.mkdtemp(prefix="tessera-doc-examples-")
    try:
        tmp = os.path.join(work, "tmp")
        home = os.path.join(work, "home")
        bindir = os.path.join(work, "bin")
        for d in (tmp, home, bindir):
            os.mkdir(d)
        os.symlink(tessera, os.path.join(bindir, "tessera"))
        env = dict(os.environ)
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
        env["HOME"] = home
        env["TMPDIR"] = tmp
        for key in ("TESSERA_MODEL_PATH", "TESSERA_PLUGIN_PATH"):
            env.pop(key, None)
        ran = listed = 0
        started = time.monotonic()
        for example, where in examples.items():
            if args.only and args.only not in example:
                continue
            needs = needed_path(skips.get(example))
            if needs and not os.path.exists(os.path.join(source_dir, needs)):
                print(f"--- {example}\n    not run: no {needs} here")
                listed += 1
                continue
            if example in skips and not needs and not args.only:
                listed += 1
                continue
            command = example.replace("/tmp/", tmp + "/")
            # The binary a build preset writes is the one under test.
            command = re.sub(r"(^|[\s|;&])build/[\w.-]+/bin/tessera(?=\s)", r"\1tessera", command)
            before = tree_state(source_dir)
            t0 = time.monotonic()
            code, output = run_example(command, source_dir, env, args.timeout)
            seconds = time.monotonic() - t0
            after = tree_state(source_dir)
            ran += 1
            print(f"--- {example}\n    ({', '.join(where)}; {seconds:.1f} s)")
            written = sorted(p for p in after if before.get(p) != after[p])
            failure = None
            if code is None:
                failure = f"still running after {args.timeout:.0f} s (list it if it takes that long)"
            elif code != 0:
                failure = f"exit code {code}"
            elif written:
                failure = "wrote into the source tree: " + ", ".join(written)
            if failure:
                tail = "\n".join(output.splitlines()[-15:])
                print(f"    FAIL: {failure}\n{tail}")
                problems.append(f"{example} ({', '.join(where)}): {failure}")
                # Nothing is deleted: a file that appeared while the example
                # ran may be someone's work (an editor saving into the tree
                # during a local run), and a test must never lose data.
        print(f"\n{len(examples)} examples: {ran} run ({time.monotonic() - started:.0f} s), "
              f"{listed} listed in {os.path.basename(skip_path)}")
        if not args.only:
            print_sources(examples, skips)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if problems:
        print("\nFAIL:\n  " + "\n  ".join(problems))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
