"""Corpus for the tiny demo model: public-domain children's books from Project Gutenberg.

Source: the public GitHub repository rcdm-uga/Gutenberg_Text at commit
a0b16d35a9851168ce9ac649851c17b7ab08d48e (plain-text Project Gutenberg eBooks, one folder per author).
The files are read with `git show <commit>:<path>` from a local clone (--repo), their sha256 is checked
against the table below, the Project Gutenberg header and licence footer are cut off (everything
outside the "*** START OF ..." / "*** END OF ..." lines), hard-wrapped lines are joined into one line
per paragraph, typographic quotes and dashes become ASCII, and `_italic_` markers are dropped.

The works are in the public domain in the United States (all first published before 1929); the
Project Gutenberg licence covers only the PG trademark text, which is removed here.

Usage: python corpus.py --repo /path/to/Gutenberg_Text --out data/
  writes data/train.txt, data/heldout.txt and data/manifest.json (files, bytes, sha256).
"""

import argparse
import hashlib
import json
import os
import re
import subprocess

COMMIT = "a0b16d35a9851168ce9ac649851c17b7ab08d48e"
REPO_NAME = "rcdm-uga/Gutenberg_Text"

# Paths in the repository at COMMIT; their sizes and sha256 are written to data/manifest.json (a copy is
# committed as corpus_manifest.json, and train.py checks the data against it).
TRAIN_FILES = [
    "Lang, Andrew/The Blue Fairy Book.txt",
    "Lang, Andrew/The Red Fairy Book.txt",
    "Lang, Andrew/The Green Fairy Book.txt",
    "Lang, Andrew/The Yellow Fairy Book.txt",
    "Lang, Andrew/The Pink Fairy Book.txt",
    "Lang, Andrew/The Grey Fairy Book.txt",
    "Lang, Andrew/The Violet Fairy Book.txt",
    "Grimm, Jacob/Grimms' Fairy Tales.txt",
    "Grimm, Jacob/Household Stories by the Brothers Grimm.txt",
    "Andersen, H. C. (Hans Christian)/Hans Andersen's Fairy Tales. First Series.txt",
    "Andersen, H. C. (Hans Christian)/Hans Andersen's Fairy Tales. Second Series.txt",
    "Baum, L. Frank (Lyman Frank)/The Wonderful Wizard of Oz.txt",
    "Baum, L. Frank (Lyman Frank)/The Marvelous Land of Oz.txt",
    "Baum, L. Frank (Lyman Frank)/The Emerald City of Oz.txt",
    "Baum, L. Frank (Lyman Frank)/American Fairy Tales.txt",
    "Carroll, Lewis/Alice's Adventures in Wonderland.txt",
    "Carroll, Lewis/Through the Looking-Glass.txt",
    "Kipling, Rudyard/Just So Stories.txt",
    "Kipling, Rudyard/The Jungle Book.txt",
    "Potter, Beatrix/A Collection of Beatrix Potter Stories.txt",
    "Chesterton, G. K. (Gilbert Keith)/Aesop's Fables; a new translation.txt",
]
# A whole book the model never sees in training: held-out accuracy is measured on it.
HELDOUT_FILES = ["Lang, Andrew/The Crimson Fairy Book.txt"]

REPLACE = {
    "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2014": "--", "\u2013": "-",
    "\u2026": "...", "\u00a0": " ", "\ufeff": "",
}


def git_show(repo, path):
    return subprocess.run(["git", "-C", repo, "show", f"{COMMIT}:{path}"], check=True,
                          capture_output=True).stdout


def clean(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace").replace("\r\n", "\n")
    lines = text.split("\n")
    start = next((i for i, l in enumerate(lines) if l.startswith("*** START OF")), -1)
    end = next((i for i, l in enumerate(lines) if l.startswith("*** END OF")), len(lines))
    body = lines[start + 1:end]
    paragraphs, cur = [], []
    for line in body:
        if line.strip():
            cur.append(line.strip())
        elif cur:
            paragraphs.append(" ".join(cur))
            cur = []
    if cur:
        paragraphs.append(" ".join(cur))
    out = []
    for p in paragraphs:
        for a, b in REPLACE.items():
            p = p.replace(a, b)
        p = re.sub(r"_([^_]+)_", r"\1", p)
        p = re.sub(r"\[Illustration[^\]]*\]", "", p)
        p = re.sub(r"\s+", " ", p).strip()
        # Drop PG production credits and pure headings/page furniture, keep prose.
        if not p or p.startswith("Produced by") or len(p) < 2:
            continue
        out.append(p)
    return "\n".join(out) + "\n"


def expected_sha256():
    """path -> sha256 from the committed corpus_manifest.json (empty when absent)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus_manifest.json")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        m = json.load(f)
    return {e["path"]: e["sha256"] for split in ("train", "heldout") for e in m[split]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True, help="local clone of " + REPO_NAME)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    manifest = {"repository": REPO_NAME, "commit": COMMIT,
                "licence": "public domain in the USA (Project Gutenberg texts, PG header/footer removed)",
                "train": [], "heldout": []}
    expected = expected_sha256()
    for split, files in (("train", TRAIN_FILES), ("heldout", HELDOUT_FILES)):
        texts = []
        for path in files:
            raw = git_show(a.repo, path)
            if path in expected and hashlib.sha256(raw).hexdigest() != expected[path]:
                raise SystemExit(f"{path}: sha256 differs from corpus_manifest.json")
            manifest[split].append({"path": path, "bytes": len(raw),
                                    "sha256": hashlib.sha256(raw).hexdigest()})
            texts.append(clean(raw))
        with open(os.path.join(a.out, f"{split}.txt"), "w", encoding="utf-8") as f:
            # Books are separated by an empty line; train.py turns that into an EOS token.
            f.write("\n".join(texts))
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    for split in ("train", "heldout"):
        print(split, os.path.getsize(os.path.join(a.out, f"{split}.txt")), "bytes")


if __name__ == "__main__":
    main()
