#!/usr/bin/python3
"""Generates core/unicode/unicode_tables.cpp from the Unicode Character Database.

Usage: /usr/bin/python3 scripts/gen-unicode-tables.py [UCD_DIR] [OUTPUT]
  UCD_DIR defaults to /usr/share/unicode (Debian package unicode-data, 15.0).
  OUTPUT defaults to core/unicode/unicode_tables.cpp next to this script.

Reads UnicodeData.txt (general category, canonical combining class, canonical
decompositions, simple case mappings), PropList.txt (White_Space),
DerivedNormalizationProps.txt (Full_Composition_Exclusion, NFC_QC) and
CaseFolding.txt (simple case folding, statuses C and S).

Layout of what it writes (read by core/unicode/unicode_data.cpp and normalize.cpp):
  - a two-level table of 16-bit properties: kPropertyStage1[cp >> 7] names a
    128-entry block of kPropertyStage2; an entry is
      bits 0-4  general category (index into kCategoryNames)
      bit  5    White_Space
      bit  6    NFC_QC is No or Maybe
      bits 8-15 canonical combining class
  - sorted (code point, mapping) arrays for simple lower/upper/fold mappings;
  - the full canonical decomposition of every code point that has one
    (recursively expanded, Hangul excluded: done algorithmically);
  - the primary composites as sorted (first << 21 | second, composite) pairs.
"""
import os
import sys

UNICODE_VERSION_FILE = "ReadMe.txt"
BLOCK_SHIFT = 7
BLOCK = 1 << BLOCK_SHIFT
MAX_CP = 0x110000

CATEGORIES = ["Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd",
              "Ps", "Pe", "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf",
              "Cs", "Co"]


def parse_ranges(path, wanted_property):
    """Yields (first, last, value) for lines `cp(..cp)? ; property (; value)?`."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = [x.strip() for x in line.split(";")]
            if fields[1] != wanted_property:
                continue
            if ".." in fields[0]:
                a, b = fields[0].split("..")
            else:
                a = b = fields[0]
            yield int(a, 16), int(b, 16), (fields[2] if len(fields) > 2 else None)


def read_unicode_data(path):
    category = [0] * MAX_CP
    ccc = [0] * MAX_CP
    decomposition = {}
    lower, upper = {}, {}
    range_start = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split(";")
            cp = int(fields[0], 16)
            name = fields[1]
            cat = CATEGORIES.index(fields[2])
            if name.endswith(", First>"):
                range_start = cp
                continue
            first = range_start if name.endswith(", Last>") else cp
            range_start = None
            for c in range(first, cp + 1):
                category[c] = cat
                ccc[c] = int(fields[3])
            if fields[5] and not fields[5].startswith("<"):
                decomposition[cp] = [int(x, 16) for x in fields[5].split()]
            if fields[13]:
                lower[cp] = int(fields[13], 16)
            if fields[12]:
                upper[cp] = int(fields[12], 16)
    return category, ccc, decomposition, lower, upper


def read_unicode_version(ucd_dir):
    # DerivedAge.txt's header names the version: "# DerivedAge-15.0.0.txt".
    with open(os.path.join(ucd_dir, "DerivedAge.txt"), encoding="utf-8") as f:
        first = f.readline().strip()
    return first.split("-", 1)[1].rsplit(".txt", 1)[0]


def full_decomposition(cp, decomposition):
    if cp not in decomposition:
        return [cp]
    out = []
    for c in decomposition[cp]:
        out.extend(full_decomposition(c, decomposition))
    return out


def emit_array(name, ctype, values, per_line=16):
    lines = [f"const {ctype} {name}[{len(values)}] = {{"]
    for i in range(0, len(values), per_line):
        lines.append("    " + ",".join(str(v) for v in values[i:i + per_line]) + ",")
    lines.append("};")
    return "\n".join(lines)


def main():
    ucd = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/unicode"
    here = os.path.dirname(os.path.abspath(__file__))
    output = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        here, "..", "core", "unicode", "unicode_tables.cpp")
    version = read_unicode_version(ucd)

    category, ccc, decomposition, lower, upper = read_unicode_data(
        os.path.join(ucd, "UnicodeData.txt"))
    white_space = [False] * MAX_CP
    for a, b, _ in parse_ranges(os.path.join(ucd, "PropList.txt"), "White_Space"):
        for c in range(a, b + 1):
            white_space[c] = True
    norm_props = os.path.join(ucd, "DerivedNormalizationProps.txt")
    nfc_not_yes = [False] * MAX_CP
    for a, b, _ in parse_ranges(norm_props, "NFC_QC"):
        for c in range(a, b + 1):
            nfc_not_yes[c] = True
    exclusions = set()
    for a, b, _ in parse_ranges(norm_props, "Full_Composition_Exclusion"):
        exclusions.update(range(a, b + 1))
    fold = {}
    with open(os.path.join(ucd, "CaseFolding.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            code, status, mapping = [x.strip() for x in line.split(";")[:3]]
            if status in ("C", "S"):
                fold[int(code, 16)] = int(mapping, 16)

    # Two-level property table with deduplicated blocks.
    props = [category[c] | (white_space[c] << 5) | (nfc_not_yes[c] << 6) | (ccc[c] << 8)
             for c in range(MAX_CP)]
    blocks, stage1, stage2 = {}, [], []
    for start in range(0, MAX_CP, BLOCK):
        block = tuple(props[start:start + BLOCK])
        if block not in blocks:
            blocks[block] = len(blocks)
            stage2.extend(block)
        stage1.append(blocks[block])

    # Full canonical decompositions (Hangul syllables are algorithmic).
    decomp_index, decomp_pool = [], []
    for cp in sorted(decomposition):
        full = full_decomposition(cp, decomposition)
        decomp_index.append((cp, len(decomp_pool), len(full)))
        decomp_pool.extend(full)

    # Primary composites: canonical pairs that are not excluded from composition.
    composites = []
    for cp, parts in decomposition.items():
        if len(parts) == 2 and cp not in exclusions:
            composites.append(((parts[0] << 21) | parts[1], cp))
    composites.sort()

    out = ["// clang-format off"]
    out.append("// GENERATED by scripts/gen-unicode-tables.py from the Unicode Character Database "
               f"{version}")
    out.append("// (Debian unicode-data: UnicodeData.txt, PropList.txt, "
               "DerivedNormalizationProps.txt, CaseFolding.txt). Do not edit; rerun the script.")
    out.append('#include "core/unicode/unicode_tables.h"')
    out.append("")
    out.append("namespace tessera::unicode::tables {")
    out.append("")
    out.append(f'const char kUnicodeVersion[] = "{version}";')
    out.append("const char* const kCategoryNames[kCategoryCount] = {" +
               ", ".join(f'"{c}"' for c in CATEGORIES) + "};")
    out.append(emit_array("kPropertyStage1", "uint16_t", stage1, 32))
    out.append(emit_array("kPropertyStage2", "uint16_t", stage2, 32))
    for name, mapping in (("kLowercase", lower), ("kUppercase", upper), ("kCaseFold", fold)):
        pairs = []
        for cp in sorted(mapping):
            pairs.extend((cp, mapping[cp]))
        out.append(f"const uint32_t {name}Count = {len(mapping)};")
        out.append(emit_array(name, "uint32_t", pairs, 16))
    out.append(f"const uint32_t kDecompositionCount = {len(decomp_index)};")
    out.append(emit_array("kDecompositionIndex", "uint32_t",
                          [v for e in decomp_index for v in e], 18))
    out.append(emit_array("kDecompositionPool", "uint32_t", decomp_pool, 16))
    out.append(f"const uint32_t kCompositionCount = {len(composites)};")
    out.append(emit_array("kCompositionKeys", "uint64_t", [k for k, _ in composites], 8))
    out.append(emit_array("kCompositionValues", "uint32_t", [v for _, v in composites], 16))
    out.append("")
    out.append("}  // namespace tessera::unicode::tables")
    with open(output, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    print(f"{output}: Unicode {version}, {len(blocks)} property blocks of {BLOCK}, "
          f"{len(decomp_index)} decompositions, {len(composites)} composites, "
          f"{os.path.getsize(output)} bytes")


if __name__ == "__main__":
    main()
