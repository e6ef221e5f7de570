#!/usr/bin/env python3
# Capture DeepSeek-V3.2 lightning-indexer traces with the upstream model code (Hugging Face
# transformers), for `dsa-eval kernels trace` and `dsa-eval mrcr|ruler --backend inprocess --traces
# DIR` (docs/kernels.md "Capturing traces from a model").
#
#   capture_traces.py capture --model PATH | --tiny [--layers 0,1] [--rows 4] --dataset F.jsonl --out DIR
#   capture_traces.py parity  --tiny --contexts 4096,8192,... --out DIR
#
# capture: every prompt of an MRCR JSONL file, or of a RULER samples file (`dsa-eval datasets synth
# ruler`: the prompts `dsa-eval ruler` sends, with their needles' byte positions), goes through
# prefill with a forward hook on every
# layer's indexer module; per row one safetensors file holds, per captured layer, the indexer's
# inputs as the stack takes them (k_raw = wk(x), the k LayerNorm, q_raw = wq_b(q_resid) and
# w_raw = weights_proj(x) of the query rows) and the model's own top-k indices, with the RoPE
# table the model used; DIR/manifest.jsonl has one line per row (id, bin, needle(s) and question
# token spans). parity: layer 0 of the model at long contexts, where a full prefill would not fit
# (the eager indexer materialises [S*H, T] scores): the model's own indexer forward runs on the
# query rows against every key, and its selection is compared with an fp64 replica of the golden
# model (kernels/golden.c: LayerNorm and RoPE in fp64 from the same raw inputs).
#
# Needs torch and transformers (a version with models/deepseek_v32; without one, --tiny falls back
# to a plain-torch indexer that follows the upstream code, and says so).
# SPDX-License-Identifier: GPL-3.0-or-later
import argparse
import inspect
import json
import math
import os
import re
import sys
import time
import zlib

torch = None  # imported by main(): the tokenizer and manifest helpers run without it (tests)

BIN_LABELS = ["≤8K", "≤16K", "≤32K", "≤64K", "≤128K", "≤256K", "≤512K", "≤1M"]
BLOCK_TO_BIN = [5, 2, 6, 3, 0, 7, 4, 1]  # datasets/mrcr.c: the official 100-row blocks
EDGE = {"8k": 0, "16k": 1, "32k": 2, "64k": 3, "128k": 4, "256k": 5, "512k": 6, "1m": 7}


def note(msg):
    print("capture_traces: " + msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- tokenizers


class WordTokenizer:
    """For random checkpoints without a tokenizer: words and punctuation, each hashed (crc32)
    to an id; ids 0..15 are reserved for the role tags. Deterministic across machines."""

    def __init__(self, vocab):
        self.vocab = vocab
        self.name = "words-crc32-%d" % vocab

    def encode(self, text):
        return [t for t, _, _ in self.encode_offsets(text)]

    def encode_offsets(self, text):
        """(id, start, end) per token, the offsets in characters of text."""
        return [(16 + zlib.crc32(m.group().encode("utf-8")) % (self.vocab - 16), m.start(), m.end())
                for m in re.finditer(r"\w+|[^\w\s]", text)]

    def tag(self, role):
        return [{"system": 1, "user": 2, "assistant": 3}.get(role, 4), 5]


class HFTokenizer:
    def __init__(self, path):
        from transformers import AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(path)
        self.name = getattr(self.tok, "name_or_path", path)

    def encode(self, text):
        return self.tok.encode(text, add_special_tokens=False)

    def encode_offsets(self, text):
        enc = self.tok(text, add_special_tokens=False, return_offsets_mapping=True)
        return [(t, a, b) for t, (a, b) in zip(enc["input_ids"], enc["offset_mapping"])]

    def tag(self, role):
        return self.encode("<|%s|>\n" % role)


def render(messages, needle_msg, tok):
    """The prompt as the in-process path builds it (evals/inproc_mrcr.c): per message a role tag
    then the content, each piece tokenized on its own so the spans are exact. Returns ids, the
    needle span and the question span (the last message's content)."""
    ids, needle, question = [], None, None
    for i, m in enumerate(messages):
        ids += tok.tag(m.get("role") or "user")
        lo = len(ids)
        ids += tok.encode(m.get("content") or "")
        if i == needle_msg:
            needle = [lo, len(ids)]
        if i + 1 == len(messages):
            question = [lo, len(ids)]
    return ids, needle, question


def jsonl_lines(path):
    """(line number from 1, line) of each non-blank line of a JSONL file, in file order."""
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.strip():
                yield lineno, line


def mrcr_rows(path):
    """(id, bin, messages, needle message index) in file order, ids and bins as dsa-eval's
    reader gives them (docs/mrcr.md: n8/r0123; "bin", else "context_tokens", else the block)."""
    per_n = {}
    for lineno, line in jsonl_lines(path):
        try:
            row = json.loads(line)
            msgs = row["messages"] if "messages" in row else json.loads(row["prompt"])
            n = int(row["n_needles"])
            dmi = int(row["desired_msg_index"])
        except (ValueError, KeyError, TypeError) as e:
            sys.exit("capture_traces: cannot parse line %d of '%s': %s" % (lineno, path, e))
        r = per_n.get(n, 0)
        per_n[n] = r + 1
        b = None
        if isinstance(row.get("bin"), str):
            b = EDGE.get(row["bin"].lower().lstrip("≤<="))
        elif isinstance(row.get("context_tokens"), int):
            ct = row["context_tokens"]
            b = next((k for k in range(8) if ct <= 8192 << k), None)
        if b is None:
            b = BLOCK_TO_BIN[(r // 100) % 8]
        yield "n%d/r%04d" % (n, r), b, msgs, dmi + 1


def ruler_rows(path):
    """The rows of a RULER samples file (`dsa-eval datasets synth ruler`), in file order."""
    for lineno, line in jsonl_lines(path):
        try:
            row = json.loads(line)
            assert row["eval"] == "ruler" and isinstance(row["prompt"], str)
            row["needles"], row["question"]["bytes"]
        except (ValueError, KeyError, TypeError, AssertionError) as e:
            sys.exit("capture_traces: cannot parse line %d of '%s' as a RULER sample: %s" %
                     (lineno, path, e))
        yield row


def is_ruler(path):
    """A RULER samples file: its first row says "eval": "ruler" (MRCR rows have no "eval")."""
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                try:
                    return json.loads(line).get("eval") == "ruler"
                except ValueError:
                    return False
    return False


def token_span(offs, lo, hi):
    """[first, last+1) of the tokens (id, start, end) that overlap characters [lo, hi), as
    dsa-eval's dsa_ruler_needle_tokens maps a span: every token that overlaps it."""
    first = next((i for i, (_, a, b) in enumerate(offs) if b > lo), len(offs))
    last = first
    while last < len(offs) and offs[last][1] < hi:
        last += 1
    return first, last


def render_ruler(row, tok):
    """A RULER prompt as the in-process path builds it (evals/ruler_eval.c: one user message):
    the role tag then the prompt. Returns ids, the answer needles' token spans, the distractor
    needles' spans and the question span (to the end of the prompt), all in the ids' positions."""
    text = row["prompt"]
    raw = text.encode("utf-8")
    char = lambda b: len(raw[:b].decode("utf-8"))  # the needles' byte offsets in characters
    ids = tok.tag("user")
    base = len(ids)
    offs = tok.encode_offsets(text)
    ids = ids + [t for t, _, _ in offs]
    spans = {"answer": [], "distractor": []}
    for nd in row["needles"]:
        lo, hi = token_span(offs, char(nd["bytes"][0]), char(nd["bytes"][1]))
        spans[nd["kind"]].append([base + lo, base + hi])
    q, _ = token_span(offs, char(row["question"]["bytes"][0]), len(text))
    return ids, spans["answer"], spans["distractor"], [base + q, len(ids)]


def dataset_rows(args, tok):
    """(manifest fields, ids) per row of --dataset: MRCR rows (trimmed to --max-tokens with
    --trim) or RULER samples."""
    if is_ruler(args.dataset):
        for row in ruler_rows(args.dataset):
            ids, needles, distractors, question = render_ruler(row, tok)
            yield {"id": row["id"], "eval": "ruler", "task": row["task"], "bin": row["bin"],
                   "bin_tokens": row["bin_tokens"], "needles": needles,
                   "distractors": distractors, "question": question,
                   "input_sha256": row["input_sha256"]}, ids
        return
    for rid, b, msgs, needle_msg in mrcr_rows(args.dataset):
        if args.trim:
            msgs, needle_msg = trim(msgs, needle_msg, args.max_tokens, tok)
        ids, needle, question = render(msgs, needle_msg, tok)
        yield {"id": rid, "bin": BIN_LABELS[b], "bin_tokens": 8192 << b, "needle": needle,
               "question": question}, ids


def trim(messages, needle_msg, budget, tok):
    """--max-tokens with --trim: drop whole user/assistant pairs that are neither the requested
    needle's nor repeats of its request (the other needles, MRCR's lexical distractors), from the
    end of the conversation backwards, until the prompt fits. Keeps messages[0] and the question."""
    req = messages[needle_msg - 1].get("content") if needle_msg >= 1 else None
    keep = list(range(len(messages)))
    cost = lambda idx: sum(len(tok.tag(messages[i].get("role") or "user")) +
                           len(tok.encode(messages[i].get("content") or "")) for i in idx)
    total = cost(keep)
    i = len(messages) - 3
    while total > budget and i >= 1:
        pair = [i, i + 1]
        if needle_msg not in pair and messages[i].get("content") != req:
            total -= cost(pair)
            keep = [k for k in keep if k not in pair]
        i -= 2
    new_needle = keep.index(needle_msg) if needle_msg in keep else -1
    return [messages[k] for k in keep], new_needle


# ---------------------------------------------------------------- the model


# the two DSA architectures transformers implements: config and model class names, the indexer's
# RoPE pair layout and its head count (GLM-5.x: interleaved pairs, 32 heads)
ARCHS = {
    "deepseek_v32": ("DeepseekV32Config", "DeepseekV32ForCausalLM", "neox", 64),
    "glm_moe_dsa": ("GlmMoeDsaConfig", "GlmMoeDsaForCausalLM", "interleaved", 32),
}


def model_rope(args, model=None):
    """The indexer's RoPE layout: the architecture's, from the checkpoint's model_type if loaded."""
    mt = getattr(getattr(model, "config", None), "model_type", None)
    return ARCHS.get(mt, ARCHS[args.arch])[2]


def tiny_config_kwargs(args):
    L = args.tiny_layers
    kw = dict(vocab_size=args.vocab, hidden_size=256, intermediate_size=512,
                moe_intermediate_size=128, num_hidden_layers=L, num_attention_heads=4,
                num_key_value_heads=4, n_shared_experts=1, n_routed_experts=4,
                num_experts_per_tok=2, n_group=1, topk_group=1, kv_lora_rank=64, q_lora_rank=128,
                qk_rope_head_dim=64, qk_nope_head_dim=64, v_head_dim=64, index_n_heads=64,
                index_head_dim=128, index_topk=2048, first_k_dense_replace=L,
                mlp_layer_types=["dense"] * L, max_position_embeddings=262144,
                rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                                 "original_max_position_embeddings": 4096, "beta_fast": 32.0,
                                 "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0},
                tie_word_embeddings=False)
    kw["index_n_heads"] = ARCHS[args.arch][3]
    kw["index_topk"] = args.index_topk
    if args.arch == "glm_moe_dsa":
        kw["indexer_types"] = ["full"] * L  # every layer runs its own indexer
    return kw


def make_config(cls, kw):
    """Builds the config, dropping keyword arguments this transformers version does not know."""
    kw = dict(kw)
    for _ in range(len(kw) + 1):
        try:
            return cls(**kw)
        except TypeError as e:
            m = re.search(r"'(\w+)'", str(e))
            if not m or m.group(1) not in kw:
                raise
            note("config: this transformers has no '%s'; dropped" % m.group(1))
            kw.pop(m.group(1))
    raise RuntimeError("cannot build the config")


def load_model(args):
    """Returns (model, tokenizer, model name, indexer modules by layer)."""
    import transformers

    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[args.dtype]
    if args.model:
        load = transformers.AutoModelForCausalLM.from_pretrained
        try:  # transformers 5 names it dtype, 4.x torch_dtype
            model = load(args.model, dtype=dtype, attn_implementation="eager")
        except TypeError:
            model = load(args.model, torch_dtype=dtype, attn_implementation="eager")
        tok, name = HFTokenizer(args.model), args.model
    else:
        cfg_name, model_name = ARCHS[args.arch][:2]
        cfg_cls = getattr(transformers, cfg_name, None)
        model_cls = getattr(transformers, model_name, None)
        if cfg_cls is None or model_cls is None:
            return None, WordTokenizer(args.vocab), "plain-torch", None
        kw = tiny_config_kwargs(args)
        try:
            cfg = make_config(cfg_cls, kw)
        except Exception as e:  # an older rope_parameters schema
            note("config: YaRN parameters refused (%s); plain RoPE" % e)
            kw.pop("rope_parameters")
            cfg = make_config(cfg_cls, kw)
        cfg._attn_implementation = "eager"
        torch.manual_seed(args.seed)
        model = model_cls(cfg).to(dtype)
        # a random model's norms are ones and zeros: give the k LayerNorm real weights so a
        # stack that dropped its affine part would be caught
        with torch.no_grad():
            for m in model.modules():
                if type(m).__name__.endswith("Indexer"):
                    m.k_norm.weight.normal_(1.0, 0.1)
                    m.k_norm.bias.normal_(0.0, 0.02)
        tok = WordTokenizer(args.vocab)
        name = "tiny-random %s (transformers %s, seed %d, %d layers, hidden 256)" % (
            model_name.replace("ForCausalLM", ""), transformers.__version__, args.seed,
            args.tiny_layers)
    model = model.to(args.device).eval()
    indexers = {}
    for mname, m in model.named_modules():
        if type(m).__name__.endswith("Indexer"):
            lm = re.search(r"layers\.(\d+)\.", mname)
            indexers[int(lm.group(1)) if lm else len(indexers)] = m
    if not indexers:
        sys.exit("capture_traces: the model has no module whose class name ends in 'Indexer'")
    return model, tok, name, indexers


def bind(module, args, kwargs):
    sig = inspect.signature(module.forward)
    b = sig.bind_partial(*args, **kwargs)
    return b.arguments


def model_selection(out, rows, qpos):
    """The module's output at output rows `rows` (prompt positions qpos) -> [M, K] int32 indices
    (-1 where the key is masked: a row that sees fewer than K keys still returns K), and the
    scores when the module returns them. Upstream forms: indices [B, S, K] (transformers 5.17),
    (indices, scores), or an additive [B, S, T] mask (0 at the selected keys)."""
    t = out[0] if isinstance(out, (tuple, list)) else out
    sc = out[1][0, rows].float() if isinstance(out, (tuple, list)) and len(out) > 1 else None
    qp = torch.as_tensor(qpos, device=t.device).long()[:, None]
    if t.dtype.is_floating_point:
        mask = t[0, rows]
        sel = [torch.nonzero(mask[m] == 0).flatten() for m in range(mask.shape[0])]
        idx = torch.full((len(sel), max(len(x) for x in sel)), -1, dtype=torch.long,
                         device=t.device)
        for m, x in enumerate(sel):
            idx[m, : len(x)] = x
    else:
        idx = t[0, rows].long()
    bad = idx > qp
    if sc is not None:
        bad |= ~torch.isfinite(sc)
    idx = torch.where(bad, torch.full_like(idx, -1), idx)
    return idx.to(torch.int32), sc


def rope_table(pe, T):
    """(cos, sin) of the module ([.., T, 64], halves equal) -> [T, 32] fp32 each."""
    cos, sin = pe
    cos, sin = cos.reshape(-1, T, cos.shape[-1])[0].float(), sin.reshape(-1, T, sin.shape[-1])[0].float()
    half = cos.shape[-1] // 2
    if not torch.equal(cos[:, :half], cos[:, half:]):
        note("warning: the RoPE cos table's halves differ; storing the first half")
    return cos[:, :half].contiguous(), sin[:, :half].contiguous()


def indexer_inputs(mod, a, rows, chunk=0):
    """The stack's inputs of one indexer call: k_raw [T,128], q_raw [M,H,128], w_raw [M,H]."""
    hs, qr = a["hidden_states"], a["q_resid"]
    H, D = getattr(mod, "n_heads", 64), 128
    T = hs.shape[1]
    # the same GEMM shapes as the module's own calls, so the values are bit-identical
    step = chunk if chunk else T
    k_raw = torch.cat([mod.wk(hs[:, s:s + step]) for s in range(0, T, step)], dim=1)[0]
    q_raw = mod.wq_b(qr[:, rows])[0].view(len(rows), H, D)
    w_raw = mod.weights_proj(hs[:, rows].to(mod.weights_proj.weight.dtype))[0]
    return k_raw, q_raw, w_raw


# ---------------------------------------------------------------- fp64 golden replica


def rope64(x, cos, sin, layout):
    x = x.clone()
    if layout == "neox":
        i1, i2 = torch.arange(32), torch.arange(32, 64)
    else:
        i1, i2 = torch.arange(0, 64, 2), torch.arange(1, 64, 2)
    x1, x2 = x[..., i1].clone(), x[..., i2].clone()
    x[..., i1] = x1 * cos - x2 * sin
    x[..., i2] = x2 * cos + x1 * sin
    return x


def golden64(k_raw, ln_w, ln_b, q_raw, w_raw, cos, sin, qpos, layout):
    """kernels/golden.c in torch fp64: LayerNorm (eps 1e-6) and RoPE in fp64, w folded with
    128^-0.5 * H^-0.5, logit = sum_h w * relu(q.k), keys 0..pos. Returns [M, T] fp64 (-inf out)."""
    k = k_raw.double()
    mean = k.mean(-1, keepdim=True)
    var = ((k - mean) ** 2).mean(-1, keepdim=True)
    k = (k - mean) / torch.sqrt(var + 1e-6) * ln_w.double() + ln_b.double()
    k = rope64(k, cos.double(), sin.double(), layout)
    M, H, _ = q_raw.shape
    q = rope64(q_raw.double(), cos[qpos].double()[:, None, :], sin[qpos].double()[:, None, :], layout)
    w = w_raw.double() * (128 ** -0.5) * (H ** -0.5)
    out = torch.empty((M, k.shape[0]), dtype=torch.float64, device=k.device)
    for m in range(M):
        dots = torch.relu(q[m] @ k.T)  # [H, T]
        out[m] = w[m] @ dots
        out[m, qpos[m] + 1:] = -math.inf
    return out


def topk_set(v, K, pos):
    n = min(K, pos + 1)
    # (value desc, index asc): a stable sort of the negated values
    order = torch.sort(-v[: pos + 1], stable=True).indices[:n]
    return order


def compare_row(model_idx, gold, K, pos, model_scores=None):
    """recall of the model's set against the golden set, the largest gap of a swapped pair (a
    near-tie when it is within the fp32 error), and the largest |fp32 - fp64| score difference."""
    g = topk_set(gold, K, pos)
    mi = model_idx[model_idx >= 0].long()
    gs, ms = set(g.tolist()), set(mi.tolist())
    rec = len(gs & ms) / max(1, len(gs))
    gap = 0.0
    if gs != ms:
        thr = gold[g[-1]].item()
        only_m = sorted(ms - gs)
        if only_m:
            lo = gold[torch.tensor(only_m, dtype=torch.long, device=gold.device)].min().item()
            gap = thr - lo
    dmax = None
    if model_scores is not None:  # the model's fp32 scores of every key [T]
        vis = torch.isfinite(gold)
        dmax = (model_scores.double()[vis] - gold[vis]).abs().max().item()
    return rec, gap, dmax


# ---------------------------------------------------------------- safetensors writing


def save(path, tensors, meta):
    from safetensors.torch import save_file

    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, path,
              metadata={k: str(v) for k, v in meta.items()})


def store_dtype(t, args):
    return t.float() if args.store == "f32" else t.to(torch.bfloat16)


# ---------------------------------------------------------------- capture


def capture(args):
    model, tok, name, indexers = load_model(args)
    if model is None:
        sys.exit("capture_traces: this transformers has no DeepseekV32 classes; "
                 "capture needs a model (parity --tiny works with the plain-torch indexer)")
    layers = sorted(indexers) if args.layers == "all" else [int(x) for x in args.layers.split(",")]
    for L in layers:
        if L not in indexers:
            sys.exit("capture_traces: the model has no indexer in layer %d" % L)
    os.makedirs(args.out, exist_ok=True)
    grabbed = {}

    def hook_for(L):
        def hook(mod, a, kw, out):
            grabbed[L] = (mod, bind(mod, a, kw), out)
        return hook

    handles = [indexers[L].register_forward_hook(hook_for(L), with_kwargs=True) for L in layers]
    man = open(os.path.join(args.out, "manifest.jsonl"), "w", encoding="utf-8")
    nrows = 0
    for fields, ids in dataset_rows(args, tok):
        if args.limit and nrows >= args.limit:
            break
        rid, question = fields["id"], fields["question"]
        T = len(ids)
        if T > args.max_tokens:
            note("row %s: %d tokens > --max-tokens %d, skipped" % (rid, T, args.max_tokens))
            continue
        M = min(args.rows, question[1] - question[0])
        rows = list(range(T - M, T))
        grabbed.clear()
        t0 = time.time()
        with torch.no_grad():
            model(torch.tensor([ids], device=args.device), use_cache=False)
        tensors = {"tokens": torch.tensor(ids, dtype=torch.int32),
                   "q_pos": torch.tensor(rows, dtype=torch.int64)}
        for L in layers:
            mod, a, out = grabbed[L]
            with torch.no_grad():
                k_raw, q_raw, w_raw = indexer_inputs(mod, a, rows)
                sel, _ = model_selection(out, rows, rows)
            if "cos" not in tensors:
                tensors["cos"], tensors["sin"] = rope_table(a["position_embeddings"], T)
            p = "layers.%d." % L
            tensors[p + "k_raw"] = store_dtype(k_raw, args)
            tensors[p + "q_raw"] = store_dtype(q_raw, args)
            tensors[p + "w_raw"] = w_raw.float()
            tensors[p + "ln_w"] = mod.k_norm.weight.float()
            tensors[p + "ln_b"] = mod.k_norm.bias.float()
            tensors[p + "topk"] = sel
        fname = rid.replace("/", "_") + ".safetensors"
        save(os.path.join(args.out, fname), tensors,
             {"format": "dsa-eval-trace-2", "rope": model_rope(args, model), "model": name,
              "tokenizer": tok.name, "row_id": rid, "layers": ",".join(map(str, layers)),
              "index_topk": getattr(model.config, "index_topk", 2048)})
        line = {k: fields[k] for k in ("id", "bin", "bin_tokens")}  # MRCR's order of old
        line.update(file=fname, context_tokens=T)
        line.update({k: v for k, v in fields.items() if k not in line})
        line.update(q_pos=rows, layers=layers, model=name)
        man.write(json.dumps(line, ensure_ascii=False) + "\n")
        man.flush()
        nrows += 1
        note("row %s: %d tokens, %d query rows, layers %s, %.1f s -> %s" %
             (rid, T, M, layers, time.time() - t0, fname))
    for h in handles:
        h.remove()
    man.close()
    note("%d rows captured into %s" % (nrows, args.out))


# ---------------------------------------------------------------- parity


class KeyShim:
    """Stands in for the cache: the indexer's update_indexer(k, layer) gets the keys of the query
    rows it computed itself and returns every key of the prompt, computed by the same module. The
    query rows' keys are checked to be equal, so the keys are the module's own."""

    def __init__(self, k_all, rows):
        self.k_all, self.rows, self.checked, self.max_diff = k_all, rows, False, None

    def update_indexer(self, k, layer_idx):
        # the same function of the same inputs; a GEMM of another shape may round differently
        self.max_diff = (k[0] - self.k_all[0, self.rows]).abs().max().item()
        if self.max_diff > 1e-4:
            raise RuntimeError("the module's keys differ from the precomputed keys")
        self.checked = True
        k_all = self.k_all.clone()
        k_all[0, self.rows] = k[0]  # the query rows' own keys, exactly as the module made them
        return k_all

    def get_seq_length(self, *a):
        return self.k_all.shape[1]


KEY_CHUNK = 512


def module_keys(mod, hs, pe):
    """Every key as the module computes it, by running its forward over chunks of the prompt with
    a recording shim (the keys of each chunk are what it passes to update_indexer)."""
    keys = []

    class Rec:
        def update_indexer(self, k, layer_idx):
            keys.append(k)
            return k

    cos, sin = pe
    T = hs.shape[1]
    for s in range(0, T, KEY_CHUNK):
        e = min(T, s + KEY_CHUNK)
        sl = slice(s, e)
        a = dict(hidden_states=hs[:, sl], q_resid=torch.zeros((1, e - s, mod.wq_b.in_features),
                                                              device=hs.device, dtype=hs.dtype),
                 position_embeddings=(cos[:, sl], sin[:, sl]),
                 attention_mask=torch.zeros((1, e - s, e - s), device=hs.device),
                 past_key_values=Rec())
        params = inspect.signature(mod.forward).parameters
        if "position_ids" in params:
            a["position_ids"] = torch.arange(s, e, device=hs.device)[None]
        mod(**a)
    return torch.cat(keys, dim=1)


def parity(args):
    import transformers

    note("torch %s, transformers %s, device %s" % (torch.__version__, transformers.__version__,
                                                    args.device))
    args.dtype = "float32"
    model, tok, name, indexers = load_model(args)
    if model is None:
        sys.exit("capture_traces: parity without DeepseekV32 classes is not implemented")
    mod = indexers[0]
    layer0 = model.model.layers[0]
    attn = layer0.self_attn
    os.makedirs(args.out, exist_ok=True)
    results = []
    g = torch.Generator().manual_seed(args.seed)
    own = model_rope(args, model)
    other = "interleaved" if own == "neox" else "neox"
    note("indexer RoPE layout %s, %d index heads" % (own, getattr(mod, "n_heads", 64)))
    print("%8s %5s %10s %12s %12s %12s %12s %10s" % ("T", "rows", "recall", "recall_" + other[:4],
                                                     "max|d|", "score_scale", "max_gap",
                                                     "seconds"), flush=True)
    for T in [int(x) for x in args.contexts.split(",")]:
        t0 = time.time()
        ids = torch.randint(16, args.vocab, (1, T), generator=g).to(args.device)
        M = args.rows
        rows = torch.arange(T - M, T, device=args.device)
        with torch.no_grad():
            x = model.model.embed_tokens(ids)
            pos = torch.arange(T, device=args.device)[None]
            pe = model.model.rotary_emb(x, position_ids=pos)
            hs = layer0.input_layernorm(x)
            qr = attn.q_a_layernorm(attn.q_a_proj(hs))
            k_all = module_keys(mod, hs, pe)
            shim = KeyShim(k_all, rows)
            mask = torch.zeros((1, M, T), device=args.device)
            mask[0] = torch.where(torch.arange(T, device=args.device)[None, :] <= rows[:, None],
                                  0.0, -math.inf)
            a = dict(hidden_states=hs[:, rows], q_resid=qr[:, rows],
                     position_embeddings=(pe[0][:, rows], pe[1][:, rows]), attention_mask=mask,
                     past_key_values=shim)
            if "position_ids" in inspect.signature(mod.forward).parameters:
                a["position_ids"] = rows[None]
            # the module's own fp32 index scores: the tensor its forward calls .topk on
            spied, topk0 = {}, torch.Tensor.topk

            def spy(t, *ta, **tk):
                spied["scores"] = t
                return topk0(t, *ta, **tk)

            torch.Tensor.topk = spy
            try:
                out = mod(**a)
            finally:
                torch.Tensor.topk = topk0
            assert shim.checked, "the indexer never asked for its keys"
            sel, scores = model_selection(out, list(range(M)), rows)
            k_raw, q_raw, w_raw = indexer_inputs(mod, {"hidden_states": hs, "q_resid": qr},
                                                 rows, KEY_CHUNK)
            cos, sin = rope_table(pe, T)
            full = spied.get("scores")
            full = full[0].float() if full is not None and full.shape[-1] == T else scores
            rec = {"T": T, "rows": M, "key_max_diff": shim.max_diff, "rope": own}
            for layout in (own, other):
                gold = golden64(k_raw, mod.k_norm.weight, mod.k_norm.bias, q_raw, w_raw, cos, sin,
                                rows.tolist(), layout)
                rs = [compare_row(sel[m], gold[m], mod.index_topk, int(rows[m]),
                                  full[m] if full is not None else None) for m in range(M)]
                rec[layout] = {"recall": sum(r[0] for r in rs) / M,
                               "max_gap": max(r[1] for r in rs),
                               "max_score_diff": None if full is None else max(r[2] for r in rs),
                               "score_scale": gold[torch.isfinite(gold)].abs().max().item()}
        save(os.path.join(args.out, "parity-%d.safetensors" % T),
             {"k_raw": k_raw.float(), "q_raw": q_raw.float(), "w_raw": w_raw.float(),
              "ln_w": mod.k_norm.weight.float(), "ln_b": mod.k_norm.bias.float(), "cos": cos,
              "sin": sin, "q_pos": rows.cpu().to(torch.int64), "topk": sel,
              "tokens": ids[0].to(torch.int32)},
             {"format": "dsa-eval-trace-2", "rope": own, "model": name, "layer": "0"})
        rec["seconds"] = time.time() - t0
        results.append(rec)
        n = rec[own]
        print("%8d %5d %10.6f %12.6f %12s %12.3e %12.3e %10.1f" % (
            T, M, n["recall"], rec[other]["recall"],
            "n/a" if n["max_score_diff"] is None else "%.3e" % n["max_score_diff"],
            n["score_scale"], n["max_gap"], rec["seconds"]), flush=True)
        del k_all, shim, out
        torch.cuda.empty_cache() if args.device.startswith("cuda") else None
    with open(os.path.join(args.out, "parity.json"), "w") as f:
        json.dump({"model": name, "torch": torch.__version__,
                   "transformers": transformers.__version__, "results": results}, f, indent=1)


def main():
    global torch
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    ap = argparse.ArgumentParser(
        description="Capture DeepSeek-V3.2 indexer traces with transformers (docs/kernels.md)")
    ap.add_argument("mode", choices=["capture", "parity"])
    ap.add_argument("--model", help="a DeepSeek-V3.2-architecture checkpoint (directory or id)")
    ap.add_argument("--tiny", action="store_true", help="a tiny random config instead (see --arch)")
    ap.add_argument("--arch", choices=sorted(ARCHS), default="deepseek_v32",
                    help="--tiny: the architecture (GLM-5.x is glm_moe_dsa: 32 heads, interleaved RoPE)")
    ap.add_argument("--tiny-layers", type=int, default=2)
    ap.add_argument("--index-topk", type=int, default=2048,
                    help="--tiny: the indexer's k (a smaller k keeps a fixture's prompt short)")
    ap.add_argument("--vocab", type=int, default=4096, help="--tiny: vocabulary size")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dataset", help="capture: an MRCR JSONL file, or RULER samples "
                    "(dsa-eval datasets synth ruler)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", default="all", help="capture: 'all' or a list like 0,3,10")
    ap.add_argument("--rows", type=int, default=4, help="query rows: the last N question tokens")
    ap.add_argument("--limit", type=int, default=0, help="capture: at most N rows")
    ap.add_argument("--max-tokens", type=int, default=8192,
                    help="capture: skip (or with --trim, shorten) longer prompts")
    ap.add_argument("--trim", action="store_true",
                    help="capture: drop filler pairs until the prompt fits --max-tokens")
    ap.add_argument("--store", choices=["bf16", "f32"], default="bf16",
                    help="dtype of k_raw/q_raw in the files (f32 for a float32 model)")
    ap.add_argument("--dtype", choices=["bfloat16", "float32"], default="bfloat16")
    ap.add_argument("--contexts", default="4096,8192,16384,32768,65536,131072")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    if bool(args.model) == bool(args.tiny):
        ap.error("give --model PATH or --tiny")
    if args.mode == "capture" and not args.dataset:
        ap.error("capture needs --dataset")
    (capture if args.mode == "capture" else parity)(args)


if __name__ == "__main__":
    main()
