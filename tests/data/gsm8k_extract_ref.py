# Reference GSM8K extraction with CPython `re`, for tests/unit/test_gsm8k.c.
# Reads JSONL {"text": ...} on stdin; writes one JSONL line per input with the prediction of
# each mode and the lm-eval normalisation of the text, using the reference patterns and
# filter logic (lm_eval/filters/extraction.py RegexFilter; vLLM/SGLang get_answer_value;
# lm_eval exact_match regexes_to_ignore + ignore_case).
# SPDX-License-Identifier: GPL-3.0-or-later
import ast
import json
import re
import sys

INVALID = "[invalid]"


def regex_filter(pattern, resp, group_select):
    match = re.findall(pattern, resp)
    if not match:
        return INVALID
    match = match[group_select]
    if isinstance(match, tuple):
        match = [m for m in match if m]
        match = match[0] if match else INVALID
    return match.strip()


def vllm_rule(s):
    s = s.replace(",", "")
    numbers = re.findall(r"\d+", s)
    if len(numbers) < 1:
        return INVALID
    try:
        return str(ast.literal_eval(numbers[-1]))
    except (SyntaxError, ValueError):
        return INVALID


def normalize(s):
    for r in [",", "\\$", "(?s).*#### ", "\\.$"]:
        s = re.sub(r, "", s)
    return s.lower()


for line in sys.stdin:
    text = json.loads(line)["text"]
    out = {
        "cot-strict": regex_filter(r"The answer is (\-?[0-9\.\,]+).", text, 0),
        "gsm8k-strict": regex_filter(r"#### (\-?[0-9\.\,]+)", text, 0),
        "flexible": regex_filter(r"(-?[$0-9.,]{2,})|(-?[0-9]+)", text, -1),
        "vllm": vllm_rule(text),
        "normalize": normalize(text),
    }
    sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
