#!/usr/bin/env python3
"""The training corpus of the shipped test models, from the Debian packages of this machine.

Gathers English documentation whose licence allows reuse (GNU info manuals, English man pages
rendered to text, README/NEWS/Markdown/HTML files under /usr/share/doc), records each
package, its licence (from /usr/share/doc/PKG/copyright) and what was taken, and adds the
synthetic conversations of synth_chat.py rendered with the Qwen3 chat template. Runs on a
Debian machine without PyTorch (see tools/train/README.md):

    python3 tools/train/build_corpus.py --out .train/corpus \
        --sources models/corpus_sources.json

Writes OUT/docs.jsonl.xz ({"id", "package", "license", "kind", "text"} per document, the
held-out split decided by a hash of the id) and OUT/chat.jsonl.xz (rendered conversations).
"""

import argparse
import collections
import gzip
import hashlib
import html.parser
import json
import lzma
import multiprocessing
import os
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import synth_chat  # noqa: E402  (beside this file)

DOC_ROOT = Path("/usr/share/doc")
INFO_ROOT = Path("/usr/share/info")
MAN_ROOT = Path("/usr/share/man")
MAN_SECTIONS = ("man1", "man5", "man7", "man8")
MAN_PAGES_CAP = 3000      # NOTE(train): rendering is ~50 ms a page; all 18k would take 15 min here
MAN_PER_PACKAGE_CAP = 60  # so that a few packages with hundreds of pages do not dominate
DOC_FILE_CAP_BYTES = 400_000
HELDOUT_PERCENT = 2       # documents whose id hashes below this go to the held-out split

# Debian copyright short names (DEP-5 "License:" of the "Files: *" stanza) that allow reuse
# and redistribution of the text. Anything else, or a package without a readable licence,
# is skipped and listed as skipped in the sources file.
FREE_LICENSE = re.compile(
    r"^(GPL|LGPL|GFDL|BSD|MIT|Expat|Apache|Artistic|ISC|Zlib|public[- ]domain|PSF|Python|"
    r"MPL|X11|curl|BSL|CC0|CC-BY|OpenLDAP|FTL|Unicode|Ruby|Perl|Vim|Sleepycat|W3C|OFL|"
    r"man-pages|Verbatim|GPLv|LGPLv|permissive)", re.IGNORECASE)
TEXT_DOC = re.compile(r"^(README|NEWS|FAQ|TODO|HACKING|USAGE|THANKS|BUGS)([._-].*)?$|"
                      r"\.(txt|md|rst|text)(\.gz)?$", re.IGNORECASE)


def read_maybe_gz(path):
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8", errors="replace")


def package_license(package):
    """The licence of the package's main files, from its copyright file, or None."""
    path = DOC_ROOT / package / "copyright"
    if not path.is_file():
        return None
    text = path.read_text(errors="replace")
    # DEP-5: the License line of the "Files: *" stanza.
    for stanza in re.split(r"\n\s*\n", text):
        if re.search(r"^Files:\s*\*\s*$", stanza, re.MULTILINE):
            match = re.search(r"^License:[ \t]*(\S.*)$", stanza, re.MULTILINE)
            if match:
                return match.group(1).strip()
    for needle, name in (("GNU Lesser General Public License", "LGPL"),
                         ("GNU Library General Public License", "LGPL"),
                         ("GNU Free Documentation License", "GFDL"),
                         ("GNU General Public License", "GPL"),
                         ("Apache License", "Apache-2.0"),
                         ("Artistic License", "Artistic"),
                         ("public domain", "public-domain"),
                         ("Permission is hereby granted, free of charge", "MIT"),
                         ("Redistribution and use in source and binary forms", "BSD")):
        if needle.lower() in text.lower():
            return name
    return None


def file_owners():
    """path -> Debian package, from dpkg's file lists."""
    owners = {}
    for lst in Path("/var/lib/dpkg/info").glob("*.list"):
        package = lst.stem.split(":")[0]
        for line in lst.read_text(errors="replace").splitlines():
            owners[line] = package
    return owners


class _HtmlText(html.parser.HTMLParser):
    SKIP = {"script", "style", "nav", "head"}
    BLOCK = {"p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "tr", "dt", "dd",
             "table", "ul", "ol", "section", "blockquote"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.skip, self.pre = [], 0, 0

    def handle_starttag(self, tag, attrs):
        if tag in self.SKIP:
            self.skip += 1
        if tag == "pre":
            self.pre += 1
        if tag in self.BLOCK:
            self.parts.append("\n\n" if tag.startswith("h") or tag == "p" else "\n")

    def handle_endtag(self, tag):
        if tag in self.SKIP:
            self.skip = max(0, self.skip - 1)
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if self.skip:
            return
        self.parts.append(data if self.pre else re.sub(r"\s+", " ", data))


def html_to_text(source):
    parser = _HtmlText()
    parser.feed(source)
    return "".join(parser.parts)


def clean_text(text):
    text = text.replace("\r\n", "\n").replace("\t", "    ")
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip() + "\n"


def info_to_text(text):
    # Drop the node headers and the menu markers info files carry.
    text = re.sub(r"\x1f\n(File: [^\n]*\n)?", "\n", text)
    text = re.sub(r"^Tag Table:.*", "", text, flags=re.MULTILINE | re.DOTALL)
    text = text.replace("\x7f", "").replace("\x08", "")
    return text


def render_man(path):
    """A man page as plain text (groff, no formatting codes), or '' on failure."""
    try:
        src = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        out = subprocess.run(["groff", "-mandoc", "-Tutf8", "-P-cbou", "-rLL=78n", "-rHY=0"],
                             input=src, capture_output=True, timeout=20, check=False).stdout
        return out.decode("utf-8", errors="replace")
    except (OSError, subprocess.SubprocessError, EOFError, gzip.BadGzipFile):
        return ""


def doc_id_heldout(doc_id):
    return int(hashlib.sha256(doc_id.encode()).hexdigest(), 16) % 100 < HELDOUT_PERCENT


def collect(args):
    owners = file_owners()
    licenses = {}

    def license_of(package):
        if package not in licenses:
            licenses[package] = package_license(package)
        return licenses[package]

    candidates = []  # (doc_id, package, kind, path)
    for path in sorted(INFO_ROOT.glob("*.info*")):
        package = owners.get(str(path))
        if package:
            candidates.append((f"info:{path.name}", package, "info", path))
    for path in sorted(DOC_ROOT.rglob("*")):
        if not path.is_file() or path.is_symlink() or path.stat().st_size > DOC_FILE_CAP_BYTES:
            continue
        rel = path.relative_to(DOC_ROOT)
        package = rel.parts[0]
        if "changelog" in path.name.lower() or path.name == "copyright":
            continue
        if path.name.endswith((".html", ".htm")):
            candidates.append((f"doc:{rel}", package, "html", path))
        elif TEXT_DOC.search(path.name):
            candidates.append((f"doc:{rel}", package, "text", path))
    man_pages, per_package = [], collections.Counter()
    for section in MAN_SECTIONS:
        for path in sorted((MAN_ROOT / section).glob("*")):
            if path.is_symlink() or not path.is_file() or path.stat().st_size < 1200:
                continue
            package = owners.get(str(path))
            if not package or per_package[package] >= MAN_PER_PACKAGE_CAP:
                continue
            per_package[package] += 1
            man_pages.append((f"man:{section}/{path.name}", package, "man", path))
    # An even spread over the alphabet when capping.
    step = max(1, len(man_pages) // MAN_PAGES_CAP)
    candidates += man_pages[::step][:MAN_PAGES_CAP]

    allowed = [c for c in candidates if (lic := license_of(c[1])) and FREE_LICENSE.match(lic)]
    skipped = sorted({c[1] for c in candidates} - {c[1] for c in allowed})
    print(f"{len(candidates)} candidate documents, {len(allowed)} with a free licence; "
          f"{len(skipped)} packages skipped", flush=True)

    man_paths = [c[3] for c in allowed if c[2] == "man"]
    with multiprocessing.Pool(args.jobs) as pool:
        rendered = dict(zip(man_paths, pool.map(render_man, man_paths, chunksize=16)))

    docs, seen = [], set()
    for doc_id, package, kind, path in allowed:
        try:
            if kind == "man":
                text = rendered[path]
            elif kind == "info":
                text = info_to_text(read_maybe_gz(path))
            elif kind == "html":
                text = html_to_text(read_maybe_gz(path))
            else:
                text = read_maybe_gz(path)
        except (OSError, EOFError, gzip.BadGzipFile, UnicodeError):
            continue
        text = clean_text(text)
        if len(text) < 400 or text.count("\ufffd") > 10:
            continue
        digest = hashlib.sha256(text.encode()).hexdigest()
        if digest in seen:  # the same file shipped by several packages
            continue
        seen.add(digest)
        docs.append({"id": doc_id, "package": package, "license": licenses[package], "kind": kind,
                     "heldout": doc_id_heldout(doc_id), "text": text})
    return docs, licenses, skipped


def write_jsonl_xz(path, rows):
    with lzma.open(path, "wt", encoding="utf-8", preset=6) as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for docs.jsonl.xz, chat.jsonl.xz")
    parser.add_argument("--sources", type=Path, required=True, help="where to write the sources/licences JSON")
    parser.add_argument("--chat-conversations", type=int, default=60000)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    docs, licenses, skipped = collect(args)
    write_jsonl_xz(args.out / "docs.jsonl.xz", docs)
    commands = synth_chat.commands_from_man_pages(docs)
    chats = synth_chat.generate(args.chat_conversations, args.seed, commands)
    write_jsonl_xz(args.out / "chat.jsonl.xz", chats)

    by_package = collections.defaultdict(lambda: {"license": None, "documents": 0, "bytes": 0,
                                                  "kinds": set()})
    for doc in docs:
        entry = by_package[doc["package"]]
        entry["license"] = doc["license"]
        entry["documents"] += 1
        entry["bytes"] += len(doc["text"].encode())
        entry["kinds"].add(doc["kind"])
    sources = {
        "note": "Debian 12 packages whose documentation is in the training corpus (tools/train/build_corpus.py); "
                "license is the DEP-5 License of the package's 'Files: *' stanza in /usr/share/doc/PKG/copyright "
                "(or the licence its copyright file names).",
        "documents": len(docs),
        "heldout_documents": sum(d["heldout"] for d in docs),
        "bytes": sum(len(d["text"].encode()) for d in docs),
        "synthetic_conversations": {"count": len(chats), "seed": args.seed,
                                    "bytes": sum(len(c["text"].encode()) for c in chats),
                                    "generator": "tools/train/synth_chat.py (our own code; no licence constraints)"},
        "packages": {name: dict(v, kinds=sorted(v["kinds"])) for name, v in sorted(by_package.items())},
        "skipped_packages_without_a_free_licence": skipped,
    }
    args.sources.parent.mkdir(parents=True, exist_ok=True)
    args.sources.write_text(json.dumps(sources, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(docs)} documents ({sources['bytes'] / 1e6:.1f} MB, {sources['heldout_documents']} held out) "
          f"from {len(by_package)} packages; {len(chats)} conversations "
          f"({sources['synthetic_conversations']['bytes'] / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
