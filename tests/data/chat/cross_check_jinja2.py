#!/usr/bin/python3
"""Renders templates.json x cases.json with Python jinja2 set up as Hugging Face
transformers sets it up for chat templates (ImmutableSandboxedEnvironment,
trim_blocks and lstrip_blocks on, loopcontrols, tojson as
json.dumps(ensure_ascii=False), raise_exception and strftime_now globals), and
writes expected_jinja2.json beside this file, in expected.json's layout.

    /usr/bin/python3 tests/data/chat/cross_check_jinja2.py

It then lists every rendering where jinja2 and @huggingface/jinja
(expected.json, from make_reference.mjs) disagree. The context is exactly the
one make_reference.mjs passes (transformers itself would also pass tools=None
and documents=None). strftime_now() formats cases.json's "now".
"""
import datetime
import json
import os

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

here = os.path.dirname(os.path.abspath(__file__))
cases = json.load(open(os.path.join(here, "cases.json"), encoding="utf-8"))
templates = json.load(open(os.path.join(here, "templates.json"), encoding="utf-8"))
now = datetime.datetime.strptime(cases["now"], "%Y-%m-%dT%H:%M:%SZ")


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


class Generation(Extension):
    """transformers' AssistantTracker renders {% generation %} bodies as they are."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.Scope(body, lineno=lineno)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                       extensions=[loopcontrols, Generation])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: now.strftime(fmt)
    return env


results = []
for t in templates:
    source = open(os.path.join(here, t["file"]), encoding="utf-8").read()
    try:
        template = environment().from_string(source)
    except Exception as e:  # noqa: BLE001 - report any parse failure
        results.append({"template": t["name"], "parse_error": f"{type(e).__name__}: {e}"})
        continue
    for c in cases["cases"]:
        for gen in cases["add_generation_prompt"]:
            context = dict(messages=c["messages"], add_generation_prompt=gen,
                           bos_token=t["bos_token"], eos_token=t["eos_token"], **c.get("extra", {}))
            entry = {"template": t["name"], "case": c["name"], "add_generation_prompt": gen}
            try:
                entry["output"] = template.render(**json.loads(json.dumps(context)))
            except Exception as e:  # noqa: BLE001
                entry["error"] = str(e)
            results.append(entry)

out = {"generator": "tests/data/chat/cross_check_jinja2.py",
       "reference": f"jinja2 {jinja2.__version__} (transformers' chat-template environment)",
       "now": cases["now"], "results": results}
with open(os.path.join(here, "expected_jinja2.json"), "w", encoding="utf-8") as f:
    json.dump(out, f, indent=2, ensure_ascii=False)
    f.write("\n")

hf = json.load(open(os.path.join(here, "expected.json"), encoding="utf-8"))["results"]
key = lambda r: (r["template"], r.get("case"), r.get("add_generation_prompt"))
hf_by_key = {key(r): r for r in hf}
agree = disagree = 0
for r in results:
    h = hf_by_key.get(key(r))
    same = h is not None and (("output" in r and r.get("output") == h.get("output")) or
                              ("output" not in r and "output" not in h))
    if same:
        agree += 1
        continue
    disagree += 1
    what = lambda x: ("output" if "output" in x else "error: " + (x.get("error") or x.get("parse_error", ""))[:90]) if x else "missing"
    print(f"DISAGREE {r['template']} / {r.get('case')} / gen={r.get('add_generation_prompt')}:\n"
          f"  jinja2: {what(r)}\n  @huggingface/jinja: {what(h)}")
print(f"jinja2 vs @huggingface/jinja: {agree} agree, {disagree} disagree, of {len(results)}")
