"""How fast is the `oneshot` preset's correctness grading, and does it agree with math-verify?

Builds GSM8K-style completions (from ../shared/data/gsm8k/test.jsonl when present, else synthetic problems):
correct and wrong answers in the XML and `####` formats, plus the format variants models produce (`$72`,
`1,234`, `72.00`, `72 dollars`). Grades every (completion, reference) pair twice: with
`oneshot_reason.rewards.oneshot_correctness` (TRL-style batches) and with math-verify's `parse` + `verify`
called directly. Prints a side-by-side table; the last line is JSON:
`{"speedup_vs_math_verify": x, "agreement": y}`.

    python bench/rewards.py [--problems 400] [--batch 64] [--seed 0]
"""
from __future__ import annotations

import argparse
import json
import logging
import platform
import random
import re
import time

from oneshot_reason.core import read_jsonl, shared_data_dir
from oneshot_reason import rewards
from oneshot_reason.rewards import oneshot_correctness

UNITS = ["dollars", "apples", "minutes", "miles", "cookies"]


def load_problems(n: int, seed: int) -> tuple[list[tuple[str, str]], str]:
    "(reasoning, answer) pairs: GSM8K's test split when available, else synthetic sums."
    rng = random.Random(seed)
    data = shared_data_dir()
    path = None if data is None else data / "gsm8k" / "test.jsonl"
    if path is not None and path.exists():
        problems = []
        for row in read_jsonl(path):
            reasoning, _, answer = row["answer"].rpartition("####")
            reasoning = re.sub(r"<<[^>]*>>", "", reasoning).strip()
            problems.append((reasoning, answer.strip().replace(",", "")))
        source = f"GSM8K test split, {path}"
    else:
        problems = []
        for _ in range(max(n, 200)):
            a, b, c = rng.randint(2, 400), rng.randint(2, 60), rng.randint(1, 900)
            problems.append((f"{a} boxes of {b} is {a} * {b} = {a * b}.\nPlus {c} makes {a * b} + {c} = {a * b + c}.",
                             str(a * b + c)))
        source = "synthetic sums (no ../shared/data/gsm8k/test.jsonl)"
    rng.shuffle(problems)
    return (problems[:n] if n else problems), source


def wrong(answer: str, rng: random.Random) -> str:
    value = int(float(answer))
    return str(value + rng.choice([1, 2, 5, 10, -1]) if rng.random() < 0.7 else value * 2 + 1)


def with_commas(answer: str) -> str:
    value = int(float(answer))
    return f"{value:,}" if abs(value) >= 1000 else f"{value}.0"


def xml(reasoning: str, answer: str) -> str:
    return f"<reasoning>\n{reasoning}\n</reasoning>\n<answer>\n{answer}\n</answer>"


VARIANTS = {
    "xml, correct": lambda r, a, rng: xml(r, a),
    "xml, wrong": lambda r, a, rng: xml(r, wrong(a, rng)),
    "####, correct": lambda r, a, rng: f"{r}\n#### {a}",
    "####, wrong": lambda r, a, rng: f"{r}\n#### {wrong(a, rng)}",
    "xml, $N": lambda r, a, rng: xml(r, "$" + a),
    "xml, 1,234 / N.0": lambda r, a, rng: xml(r, with_commas(a)),
    "xml, N.00": lambda r, a, rng: xml(r, a + ".00"),
    "xml, N units": lambda r, a, rng: xml(r, f"{a} {rng.choice(UNITS)}"),
    "xml, wrong $N": lambda r, a, rng: xml(r, "$" + wrong(a, rng)),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=400, help="problems to use (0 = all)")
    parser.add_argument("--batch", type=int, default=64, help="completions per reward call, as in a TRL step")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # math-verify logs every unparsable string
    from math_verify import parse, verify

    problems, source = load_problems(args.problems, args.seed)
    rng = random.Random(args.seed)
    rows = [(name, build(reasoning, answer, rng), answer)
            for reasoning, answer in problems for name, build in VARIANTS.items()]
    completions, references = [r[1] for r in rows], [r[2] for r in rows]

    def grade_oneshot(idx):
        out = []
        for i in range(0, len(idx), args.batch):
            chunk = idx[i:i + args.batch]
            out += oneshot_correctness(completions=[completions[j] for j in chunk], answer=[references[j] for j in chunk])
        return out

    by_variant = {name: [i for i, r in enumerate(rows) if r[0] == name] for name in VARIANTS}
    ours, ours_seconds = [0.0] * len(rows), {}
    for name, idx in by_variant.items():
        best = float("inf")
        for _ in range(5):  # best of five (the machine is shared), each with a cold number cache
            rewards._parse_number_text.cache_clear()
            start = time.perf_counter(); verdicts = grade_oneshot(idx); best = min(best, time.perf_counter() - start)
        ours_seconds[name] = best
        for i, v in zip(idx, verdicts): ours[i] = v
    theirs, their_seconds = [], []
    for completion, reference in zip(completions, references):
        start = time.perf_counter()
        theirs.append(float(verify(parse(reference), parse(completion))))
        their_seconds.append(time.perf_counter() - start)

    print(f"source: {source}; {len(problems)} problems x {len(VARIANTS)} variants = {len(rows)} completions")
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}\n")
    header = f"{'variant':18s} {'n':>5s} {'oneshot acc':>11s} {'math-verify acc':>15s} {'agree':>7s}"
    print(header + f" {'oneshot us/c':>12s} {'math-verify us/c':>16s}")
    for name, idx in by_variant.items():
        acc_ours = sum(ours[i] for i in idx) / len(idx)
        acc_theirs = sum(theirs[i] for i in idx) / len(idx)
        agree = sum(ours[i] == theirs[i] for i in idx) / len(idx)
        print(f"{name:18s} {len(idx):5d} {acc_ours:11.3f} {acc_theirs:15.3f} {agree:7.3f} "
              f"{ours_seconds[name] / len(idx) * 1e6:12.1f} {sum(their_seconds[i] for i in idx) / len(idx) * 1e6:16.1f}")
    agreement = sum(a == b for a, b in zip(ours, theirs)) / len(rows)
    total_ours, total_theirs = sum(ours_seconds.values()), sum(their_seconds)
    speedup = total_theirs / total_ours
    print(f"\n{'all':18s} {len(rows):5d} {sum(ours) / len(rows):11.3f} {sum(theirs) / len(rows):15.3f} "
          f"{agreement:7.3f} {total_ours / len(rows) * 1e6:12.1f} {total_theirs / len(rows) * 1e6:16.1f}")
    print(f"oneshot correctness: {len(rows) / total_ours:,.0f} completions/s; math-verify: "
          f"{len(rows) / total_theirs:,.0f} completions/s; speedup {speedup:.0f}x")
    disagreements = [(rows[i][0], rows[i][1][-60:], rows[i][2], ours[i], theirs[i])
                     for i in range(len(rows)) if ours[i] != theirs[i]]
    for d in disagreements[:5]: print("disagreement:", d)
    print(json.dumps({"speedup_vs_math_verify": round(speedup, 1), "agreement": round(agreement, 4)}))


if __name__ == "__main__":
    main()
