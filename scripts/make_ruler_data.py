#!/usr/bin/env python3
# Rebuilds the RULER eval's shipped data (datasets/ruler/, see its README.md) from two Debian
# packages, so the files can be checked byte for byte:
#   apt-get download bible-kjv bible-kjv-text wordnet-base
#   for f in *.deb; do dpkg-deb -x "$f" root; done
#   root/usr/bin/bible -p root/usr/lib "gen1:1-rev22:21" > kjv_raw.txt
#   python3 scripts/make_ruler_data.py kjv_raw.txt root/usr/share/wordnet datasets/ruler
# SPDX-License-Identifier: GPL-3.0-or-later
import re
import sys


def kjv_chapters(raw_path):
    """(title, text) per chapter of the bible(1) listing, verse numbers dropped."""
    chapters = []
    for line in open(raw_path, encoding="ascii").read().split("\n"):
        if not line.strip():
            continue
        verse = re.match(r"^ +(\d+) (.*)$", line)
        if verse:
            chapters[-1][1].append(verse.group(2))
        elif re.match(r"^[1-3A-Z][A-Za-z ]* \d+$", line):
            chapters.append((line.strip(), []))
        else:  # a verse wrapped onto the next line
            chapters[-1][1][-1] += " " + line.strip()
    return [(t, " ".join(v)) for t, v in chapters]


def haystack(raw_path, stop_book):
    """One line per chapter, from Genesis up to (not including) stop_book."""
    out = []
    for title, text in kjv_chapters(raw_path):
        if title.rsplit(" ", 1)[0] == stop_book:
            break
        out.append(text + "\n")
    return "".join(out)


def wordnet_words(wn_dir, pos):
    """Single lowercase ASCII lemmas of 3..12 letters with at least one sense tagged in the
    SemCor concordance (tagsense_cnt >= 1): a frequency filter that keeps common words."""
    words = []
    for line in open(f"{wn_dir}/index.{pos}", encoding="latin-1"):
        if line.startswith(" "):
            continue
        f = line.split()
        lemma, p_cnt = f[0], int(f[3])
        tagsense = int(f[4 + p_cnt + 1])
        if lemma.isascii() and lemma.isalpha() and lemma.islower() and 3 <= len(lemma) <= 12:
            if tagsense >= 1:
                words.append(lemma)
    return sorted(set(words))


def main():
    raw, wn_dir, out = sys.argv[1:4]
    with open(f"{out}/kjv-genesis-2kings.txt", "w", encoding="ascii", newline="\n") as f:
        f.write(haystack(raw, "1 Chronicles"))
    for pos, name in (("noun", "nouns"), ("adj", "adjectives"), ("verb", "verbs")):
        with open(f"{out}/{name}.txt", "w", encoding="ascii", newline="\n") as f:
            f.write("".join(w + "\n" for w in wordnet_words(wn_dir, pos)))


if __name__ == "__main__":
    main()
