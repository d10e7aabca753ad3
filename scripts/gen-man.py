#!/usr/bin/env python3
"""Makes one man page (section 3) per public function from the headers.

usage: gen-man.py INCLUDE_DIR OUT_DIR VERSION
       gen-man.py --check INCLUDE_DIR      (report undocumented functions)

Reads every include/kernels/*.h: each KERNELS_EXTERN declaration and the
doc comment that documents it, which is one of
  - the /** ... */ block right above it, or above the group of
    declarations it belongs to (declarations with no blank line between);
  - the /**< ... */ comment after it on its line.
A doc comment may end with tags, each on its own line:
  @param NAME text   @return text   @thread text   @since VERSION
What a tag does not say, the header's top comment does: each header says
once that its functions are since 1.0 and thread-safe unless their own
comment says otherwise; the page repeats it. Only the standard library:
the Debian build runs it with the system's python3."""
import re
import sys
from pathlib import Path

DECL = re.compile(r"KERNELS_EXTERN\s*\(([^()]*)\)\s*(\w+)\s*\(((?:[^()]|\([^()]*\))*)\)\s*;[ \t]*(/\*\*<(.*?)\*/)?",
                  re.S)
TAG = re.compile(r"^@(param|return|thread|since)\b\s*(.*)$")


def clean_comment(text):
    """The text of a /** */ comment, the leading stars and blanks gone."""
    text = re.sub(r"^/\*\*<?|\*/$", "", text.strip())
    lines = [re.sub(r"^\s*\*( |$)?", "", ln) for ln in text.splitlines()]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


def header_defaults(text):
    """What the header's top comment says of all its functions."""
    top = re.match(r"\s*/\*(.*?)\*/", text, re.S)
    top = top.group(1) if top else ""
    since = re.search(r"since (\d+\.\d+)", top)
    return {"since": since.group(1) if since else None}


def declarations(path):
    """[(name, return type, params, doc)] of one header, in order."""
    text = path.read_text()
    out = []
    pending = None  # (doc, end offset of the group so far)
    for m in DECL.finditer(text):
        before = text[:m.start()]
        doc = ""
        block = re.search(r"/\*\*(?!<)((?:(?!\*/).)*)\*/\s*$", before, re.S)
        if block:
            doc = clean_comment(block.group(0))
            pending = (doc, m.end())
        elif pending and not re.search(r"\n\s*\n", text[pending[1]:m.start()]) and \
                not re.search(r"/\*", text[pending[1]:m.start()]):
            doc = pending[0]
            pending = (doc, m.end())
        else:
            pending = None
        if m.group(5):
            trailing = clean_comment("/**" + m.group(5) + "*/")
            doc = (doc + "\n\n" + trailing).strip() if doc else trailing
            if not block:
                pending = None
        params = " ".join(m.group(3).split())
        out.append((m.group(2), " ".join(m.group(1).split()), params, doc))
    return out


def split_tags(doc):
    body, tags = [], {"param": [], "return": [], "thread": [], "since": []}
    current = None
    for line in doc.splitlines():
        t = TAG.match(line.strip())
        if t:
            current = [t.group(2)]
            tags[t.group(1)].append(current)
        elif current is not None and line.strip():
            current.append(line.strip())
        else:
            current = None
            body.append(line)
    return "\n".join(body).strip(), {k: [" ".join(v) for v in vs] for k, vs in tags.items()}


def roff(text):
    """Plain text as roff: escapes, and paragraphs; indented lines kept as
    they are (examples)."""
    out = []
    text = text.replace("\\", "\\e")
    para = []
    verbatim = False
    for line in text.splitlines():
        is_code = line.startswith("    ") or line.startswith("\t")
        if is_code and not verbatim:
            if para:
                out.append(" ".join(para))
                para = []
            out += [".PP", ".nf"]
            verbatim = True
        elif not is_code and verbatim and line.strip():
            out.append(".fi")
            verbatim = False
        if verbatim:
            out.append(re.sub(r"^([.'])", r"\\&\1", line))
        elif not line.strip():
            if para:
                out.append(" ".join(para))
                para = []
                out.append(".PP")
        else:
            para.append(line.strip())
    if verbatim:
        out.append(".fi")
    if para:
        out.append(" ".join(para))
    lines = [re.sub(r"^([.'])(?!PP|nf|fi)", r"\\&\1", ln) if not ln.startswith((".PP", ".nf", ".fi")) else ln
             for ln in out]
    while lines and lines[-1] == ".PP":
        lines.pop()
    return "\n".join(lines)


def summary(body):
    first = re.split(r"(?<=[.:;])\s", " ".join(body.split()), maxsplit=1)[0]
    return first.rstrip(".:;") or "libkernels function"


def page(name, rtype, params, doc, header, siblings, version, defaults):
    body, tags = split_tags(doc)
    since = tags["since"][0] if tags["since"] else (defaults["since"] or "1.0")
    thread = tags["thread"][0] if tags["thread"] else (
        "Safe to call from any thread, as every libkernels function whose "
        "comment says nothing else (see docs/threading.md).")
    rtype_sp = rtype if rtype.endswith("*") else rtype + " "
    lines = [f'.TH {name.upper()} 3 "" "libkernels {version}" "libkernels"',
             ".SH NAME", f"{name} \\- {roff(summary(body))}",
             ".SH SYNOPSIS", ".nf", f".B #include <kernels/{header}>", "",
             f"{rtype_sp}{name}({params});".replace("\\", "\\e"), ".fi",
             ".SH DESCRIPTION", roff(body) or "See the header."]
    if tags["param"]:
        lines.append(".SH PARAMETERS")
        for p in tags["param"]:
            pname, _, text = p.partition(" ")
            lines += [".TP", f".I {pname}", roff(text.strip())]
    if tags["return"]:
        lines += [".SH RETURN VALUE", roff(" ".join(tags["return"]))]
    lines += [".SH THREAD SAFETY", roff(thread), ".SH HISTORY", f"Since libkernels {since}."]
    see = [f"{s} (3)" for s in siblings if s != name][:12] + ["libkernels (1)"]
    lines.append(".SH SEE ALSO")
    lines += [f".BR {s}" + ("," if i < len(see) - 1 else "") for i, s in enumerate(see)]
    return "\n".join(lines) + "\n"


def collect(include):
    out = []
    for header in sorted((Path(include) / "kernels").glob("*.h")):
        text = header.read_text()
        decls = declarations(header)
        out.append((header, header_defaults(text), decls))
    return out


def main(argv):
    if argv[:1] == ["--check"]:
        missing = [f"{h.name}: {n}" for h, _, ds in collect(argv[1]) for n, _, _, d in ds if not split_tags(d)[0]]
        print("\n".join(missing) or "every public function is documented")
        return 1 if missing else 0
    include, out_dir, version = argv
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for header, defaults, decls in collect(include):
        names = [d[0] for d in decls]
        for name, rtype, params, doc in decls:
            (out / f"{name}.3").write_text(page(name, rtype, params, doc, header.name, names, version, defaults))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
