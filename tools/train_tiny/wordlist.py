"""Writes corpus_words.txt: every word of the training text (data/train.txt) that occurs at least
--min-count times, lower-cased, one per line, sorted. A "word" is a maximal run of ASCII letters
([A-Za-z]+), the same rule tests/cli/tiny_model_test.cpp uses to split generated text, so "don't" is
"don" + "t" on both sides.

The end-to-end test checks that most words the model generates are words of its corpus; a model with
random weights produces sub-word fragments ("refle", "hibahiba") that are not in this list.

Usage: python wordlist.py --train data/train.txt --out corpus_words.txt
"""

import argparse
import collections
import re


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-count", type=int, default=3)
    a = ap.parse_args()
    with open(a.train, encoding="utf-8") as f:
        counts = collections.Counter(w.lower() for w in re.findall(r"[A-Za-z]+", f.read()))
    words = sorted(w for w, c in counts.items() if c >= a.min_count)
    with open(a.out, "w") as f:
        f.write("\n".join(words) + "\n")
    print(len(words), "words ->", a.out)


if __name__ == "__main__":
    main()
