# SPDX-License-Identifier: GPL-3.0-or-later
"""Independent Python reference of dsa-test-server's documented behaviour (docs/test-server.md):
the tokenizer, the decision function, the MRCR answer and the synthetic spec-decode counts.
The CLI tests compare the server against these, so a change on either side shows up."""
import hashlib
import json
import re
import socket
import urllib.request

MASK = (1 << 64) - 1
VOCAB = 129280


def splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def fnv1a64(data: bytes):
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & MASK
    return h


def decide_bits(seed, h, tag):
    return splitmix64(splitmix64(seed & MASK) ^ h ^ fnv1a64(tag.encode()))


def decide_u(seed, h, tag):
    return (decide_bits(seed, h, tag) >> 11) * 2.0 ** -53


# ---- tokenizer
def _is_word(c):
    return c.isascii() and c.isalnum() or not c.isascii()


def pieces(text: str):
    out, i, n = [], 0, len(text)
    while i < n:
        j = i
        while j < n and text[j] in " \t\n\r":
            j += 1
        if j == n:
            out.append(text[i:n])
            break
        if not _is_word(text[j]):
            j += 1
        else:
            k = 0
            while k < 4 and j < n and _is_word(text[j]):
                j += 1
                k += 1
        out.append(text[i:j])
        i = j
    return out


def count(text):
    return len(pieces(text))


def chat_count(messages):
    return 2 + sum(4 + count(m.get("content") or "") for m in messages)


def token_ids(text):
    return [fnv1a64(p.encode()) % VOCAB for p in pieces(text)]


# ---- MRCR
QUESTION = re.compile(r"^\s*Prepend (.+?) to the ([0-9]{1,9})(?:st|nd|rd|th) \(1 indexed\) "
                      r"(.+?) about (.+?)\.?(?: Do not include any other text in your response\.)?\s*$",
                      re.S)
REQUEST = re.compile(r"^\s*write an? (.+?) about (.+?)[.!]?\s*$", re.S | re.I)


def content_hash(messages):
    h = hashlib.sha256()
    for m in messages:
        h.update((m.get("role") or "").encode() + b"\0" + (m.get("content") or "").encode() + b"\0")
    return int(h.hexdigest()[:16], 16)


def ptable(spec, tokens):
    if spec is None:
        return 0.0
    rows = []
    for item in spec.split(","):
        if ":" in item:
            lim, p = item.split(":")
            lim = float("inf") if lim in ("inf", "max") else int(lim.lower().rstrip("k")) * (1024 if lim.lower().endswith("k") else 1)
        else:
            lim, p = float("inf"), item
        rows.append((lim, float(p)))
    for lim, p in rows:
        if tokens <= lim:
            return p
    return 0.0


def cut(s, num, den):
    return s[: len(s) * num // den]


def mrcr_answer(messages, seed=0, wrong=None, garble=None, build="", build_fraction=0.0):
    """Returns (text, decisions) the server must give, or None if not an MRCR question."""
    q = QUESTION.match(messages[-1]["content"])
    if not q or messages[-1]["role"] != "user":
        return None
    prefix, k, fmt, topic = q.group(1), int(q.group(2)), q.group(3), q.group(4)
    needles = []
    for i in range(len(messages) - 2):
        m, nxt = messages[i], messages[i + 1]
        r = REQUEST.match(m.get("content") or "") if m["role"] == "user" else None
        if r and nxt["role"] == "assistant" and r.group(1).lower() == fmt.lower() \
                and r.group(2).lower() == topic.lower():
            needles.append(i + 1)
    h = content_hash(messages)
    tokens = chat_count(messages)
    is_wrong = decide_u(seed, h, "wrong") < ptable(wrong, tokens)
    is_garbled = not is_wrong and decide_u(seed, h, "garble") < ptable(garble, tokens)
    changed = bool(build) and decide_u(seed, h, "build:" + build) < build_fraction
    pick = -1
    if 1 <= k <= len(needles):
        pick = needles[k - 1]
        if is_wrong:
            if len(needles) > 1:
                j = (k - 1 + 1 + decide_bits(seed, h, "pick") % (len(needles) - 1)) % len(needles)
                pick = needles[j]
            elif pick + 2 < len(messages) - 1:
                pick += 2
            elif pick >= 3:
                pick -= 2
    body = messages[pick]["content"] if pick >= 0 else ""
    if is_garbled:
        body = cut(body, 1, 2)
    if changed:
        body = cut(body, 3, 4)
    return prefix + body, {"wrong": is_wrong, "garbled": is_garbled, "build_changed": changed}


# ---- spec decode
def vdc(n):
    v, f = 0.0, 0.5
    while n:
        if n & 1:
            v += f
        n >>= 1
        f *= 0.5
    return v


def spec_counts(rates, completion_tokens):
    k = len(rates)
    steps = acc = 0
    per_pos = [0] * k
    made = 1 if completion_tokens > 0 else 0
    s = 0
    while made < completion_tokens:
        u = vdc(s + 1)
        n = 0
        while n < k and u < rates[n]:
            n += 1
        steps += 1
        acc += n
        for i in range(n):
            per_pos[i] += 1
        made += 1 + n
        s += 1
    return {"drafts": steps, "draft_tokens": steps * k, "accepted": acc, "per_pos": per_pos}


def rates_from_length(k, length):
    x = length - 1.0
    whole = int(x)
    return [1.0 if i < whole else (x - whole if i == whole else 0.0) for i in range(k)]


# ---- Prometheus
def float_to_go(d):
    """prometheus_client's floatToGoString, restated."""
    d = float(d)
    if d == float("inf"):
        return "+Inf"
    if d == float("-inf"):
        return "-Inf"
    if d != d:
        return "NaN"
    s = repr(d)
    dot = s.find(".")
    if d > 0 and dot > 6:
        mantissa = f"{s[0]}.{s[1:dot]}{s[dot + 1:]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return s


def parse_metrics(text):
    """{(name, frozenset(labels)): value}; raises on a malformed line."""
    out = {}
    line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
    label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)')
    for line in text.split("\n"):
        if not line or line.startswith("#"):
            continue
        m = line_re.match(line)
        if not m:
            raise ValueError("bad line: " + line)
        labels = tuple(sorted((a, b) for a, b, _ in label_re.findall(m.group(3) or "")))
        out[(m.group(1), labels)] = float(m.group(4))
    return out


def metric_sum(parsed, name):
    return sum(v for (n, _), v in parsed.items() if n == name)


# ---- HTTP
def http(url, body=None, headers=None, method=None, timeout=30):
    """(status, headers dict lowercased, body bytes)"""
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def sse_events(raw: bytes):
    """Splits an SSE body into its data payloads; asserts the framing vLLM uses."""
    text = raw.decode()
    assert text.endswith("\n\n"), "stream does not end with a blank line"
    events = text[:-2].split("\n\n")
    out = []
    for e in events:
        assert e.startswith("data: ") and "\n" not in e, "bad event: %r" % e[:80]
        out.append(e[6:])
    return out


def mrcr_conversation(n_needles=3, fmt="poem", topic="tapirs", k=3, prefix="AbCdEfGhIj",
                      filler=2, seed=1):
    """A small synthetic MRCR conversation in the real layout (docs/mrcr.md "The dataset")."""
    msgs = [{"role": "user", "content": "Here are some examples of conversations succeeded by a "
             "follow-up question answered correctly:\n\n======EXAMPLE======\nUser: write a poem "
             "about cats\nAssistant: Cats sleep.\n======END EXAMPLE======"}]
    others = [("song", "rain"), ("riddle", "clocks"), ("email", "faculty"), ("diary entry", "the sea")]
    x = seed
    for i in range(n_needles):
        for j in range(filler):
            f, t = others[(i + j + seed) % len(others)]
            x = splitmix64(x)
            msgs.append({"role": "user", "content": f"write a{'n' if f[0] in 'aeiou' else ''} {f} about {t}"})
            msgs.append({"role": "assistant", "content": f"A {f} about {t}, number {x % 1000}: " + "la " * (x % 40)})
        x = splitmix64(x)
        msgs.append({"role": "user", "content": f"write a {fmt} about {topic}"})
        msgs.append({"role": "assistant", "content": f"{fmt.title()} {i + 1} about {topic} ({x % 997}).\n"
                     + "Verse with snouts and ünïcode. " * (1 + x % 7)})
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(k if k < 20 else k % 10, "th")
    msgs.append({"role": "user", "content": f"Prepend {prefix} to the {k}{suffix} (1 indexed) {fmt} "
                 f"about {topic}. Do not include any other text in your response."})
    return msgs
