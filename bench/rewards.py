"""How fast is the package's grader, and does it agree with math-verify?

Part 1, GSM8K-style completions (from ../shared/data/gsm8k/test.jsonl when present, else synthetic problems): correct
and wrong answers in the XML and `####` formats, plus the format variants models produce (`$72`, `1,234`, `72.00`,
`72 dollars`). Every (completion, reference) pair is graded with `oneshot_reason.grading.check_answer` (the grader
behind every accuracy the package reports), with the `oneshot` preset's `oneshot_correctness` (TRL-style batches),
and with math-verify's `parse` + `verify` called directly.

Part 2, LaTeX-style predictions: hand-written pairs (intervals, sets, relations, matrices, units, percentages,
Minerva's "Final Answer: ...", chat-template tokens, answers that only contain the right number) plus pairs built
from MATH-500's gold answers (../shared/data/benchmarks/math500.parquet, when present) in a dozen answer styles,
each an equivalent rewrite or a wrong answer. math-verify's verdict is `verify(parse("\\boxed{ref}"), parse(pred))`
(the reference is wrapped so that math-verify reads it whole: parsed bare, `[0,1)` gives nothing and `x < 3` gives
`3`); the agreement with the bare-reference verdict is printed too.

Prints side-by-side tables; the last line is JSON:
`{"speedup_vs_math_verify": x, "agreement": y, "oneshot_speedup_vs_math_verify": ..., "oneshot_agreement": ...,
"oneshot_lenient_speedup_vs_math_verify": ..., "oneshot_lenient_agreement": ..., "latex_agreement": ..., "latex_n": ...}`
(the first two for `check_answer` on part 1; `check_answer`'s slowest call is printed with part 2).

    python bench/rewards.py [--problems 400] [--batch 64] [--seed 0] [--latex 170] [--out bench/results/rewards.json]
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import random
import re
import sys
import time

from oneshot_reason.core import read_jsonl
from oneshot_reason.testing import real_data_dir
from oneshot_reason import answers
from oneshot_reason.grading import check_answer, warm_up_grader
from oneshot_reason.rewards import oneshot_correctness, oneshot_lenient_correctness

UNITS = ["dollars", "apples", "minutes", "miles", "cookies"]


def load_problems(n: int, seed: int) -> tuple[list[tuple[str, str]], str]:
    "(reasoning, answer) pairs: GSM8K's test split when available, else synthetic sums."
    rng = random.Random(seed)
    data = real_data_dir()
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


# Part 2: LaTeX-style predictions. (completion, reference) pairs written by hand ...
HAND = [
 # issue bullets
 ("$[0,1)$", "[0,1)"), (r"$\sqrt3 $", r"\sqrt{3}"), (r"We find that $x \lt 3$.", "x < 3"), (r"$\frac13 $", "1/3"),
 (r"$k = \frac{1}{3}$", "1/3"), (r"$\dfrac{1}{3}$", "1/3"), (r"$\frac{1}{3} \text{meters}$", "1/3"),
 (r"$\frac{1+\sqrt{5}}{2}$", "2"), (r"$\frac{1}{2}$", "2"), (r"$\sqrt{2}$", "2"), ("The area is $x^2$.", "2"), (r"$-[0,1)$", "1"),
 ("Final Answer: The final answer is $10,455$. I hope it is correct.", "10455"), ("Final Answer: The largest $n$ is 34.", "34"),
 ("So the probability is 2/3. <|im_end|>", "2/3"), ("#### 72<|im_end|>", "72"), (r"\boxed{72}<|im_end|>", "72"),
 (r"The roots are \boxed{1}, \boxed{2}, \boxed{3}", r"\{1,2,3\}"), (r"The solutions are \boxed{(2, 2)} and \boxed{(6, 2)}.", "(2, 2), (6, 2)"),
 (r"\boxed{32, 349}", "32349"), (r"$x \geq 5$", "x >= 5"), (r"$5 \geq x$", r"x \leq 5"),
 (r"$\begin{pmatrix} 1 \\ 2 \end{pmatrix}$", r"\begin{bmatrix} 1 \\ 2 \end{bmatrix}"), (r"The answer is $\text{E}$.", "E"),
 (r"So the line is $2x + 2y = 2$.", "x + y = 1"),
 # intervals, sets, relations
 (r"The domain is $\boxed{(-\infty, 3]}$.", r"(-\infty,3]"), (r"The range is $\boxed{[0, \infty)}$.", r"(0,\infty)"),
 (r"$\boxed{(-\infty,2)\cup(3,\infty)}$", r"(-\infty, 2) \cup (3, \infty)"), (r"\boxed{\{1, 3, 5\}}", r"\{5,3,1\}"),
 (r"\boxed{\{1, 3\}}", r"\{1,3,5\}"), (r"The solution is $x > 2$.", r"(2, \infty)"), (r"$\boxed{x \le -1}$", r"x \leq -1"),
 (r"$\boxed{y < 4}$", r"y \leq 4"), (r"$\boxed{[2, 5]}$", "[2,5)"), (r"$\boxed{(1, 2)}$", "(2, 1)"),
 # matrices
 (r"$\boxed{\begin{pmatrix} 1 & 0 \\ 0 & 1 \end{pmatrix}}$", r"\begin{pmatrix} 1 & 0 \\ 0 & 1 \end{pmatrix}"),
 (r"$\boxed{\begin{bmatrix} 2 & 1 \\ 0 & 1 \end{bmatrix}}$", r"\begin{pmatrix} 2 & 1 \\ 0 & 3 \end{pmatrix}"),
 (r"$\begin{pmatrix} -1 \\ 4 \end{pmatrix}$", r"\begin{pmatrix} -1 \\ 4 \end{pmatrix}"),
 # letters, text
 (r"The answer is $\boxed{\text{(C)}}$.", "C"), (r"\boxed{C}", r"\text{(C)}"), (r"\boxed{\text{B}}", r"\text{(C)}"),
 (r"\boxed{\text{Evelyn}}", r"\text{Evelyn}"), (r"\boxed{\text{odd}}", r"\text{even}"),
 # equations, expressions
 (r"$\boxed{y = 2x + 3}$", "y=2x+3"), (r"$\boxed{2x - y + 3 = 0}$", "y = 2x + 3"), (r"$\boxed{x^2 + 2x + 1}$", "(x+1)^2"),
 (r"$\boxed{x^2 + 2x}$", "(x+1)^2"), (r"\boxed{p - q}", "p-q"), (r"\boxed{q - p}", "p-q"), (r"\boxed{288\pi}", r"288 \pi"),
 (r"\boxed{6-5i}", "6 - 5i"), (r"\boxed{6+5i}", "6 - 5i"),
 # dfrac, units, k=, thousands, percent, negatives, degrees
 (r"$\boxed{\dfrac{17}{50}}$", "0.34"), (r"$\boxed{\tfrac{3}{4}}$", r"\frac34"), (r"The length is $\boxed{5 \text{ meters}}$.", "5"),
 (r"$\boxed{12\text{ cm}^2}$", "12"), (r"$k = \boxed{4}$", "4"), (r"$\boxed{k=4}$", "4"), (r"$\boxed{x = 7}$", "7"),
 (r"$\boxed{10{,}000}$", "10000"), (r"$\boxed{10,\!000}$", "10000"), (r"$\boxed{1,000,000}$", "1000000"),
 (r"$\boxed{25\%}$", "25"), (r"$\boxed{0.25}$", r"25\%"), (r"The answer is $25\%$.", "0.25"), (r"\boxed{-7}", "-7"),
 (r"\boxed{7}", "-7"), (r"$\boxed{-\frac{3}{4}}$", r"-\frac34"), (r"$\boxed{\frac{-3}{4}}$", r"-\frac{3}{4}"),
 (r"$\boxed{30^\circ}$", "30"), (r"$\boxed{30^{\circ}}$", r"30^\circ"), (r"$\boxed{60^\circ}$", "30"), (r"$\boxed{\$18.50}$", "18.50"),
 # traps: a number inside a larger answer
 (r"$\boxed{2\sqrt{3}}$", "2"), (r"$\boxed{2\sqrt{3}}$", "3"), (r"$\boxed{x^{2}}$", "2"), (r"$\boxed{2x}$", "2"), (r"$\boxed{3!}$", "3"),
 (r"$\boxed{\frac{5}{2}}$", "5"), (r"$\boxed{(3, 4)}$", "4"), (r"$\boxed{3 \text{ or } 4}$", "4"), (r"$\boxed{10^{3}}$", "10"),
 (r"The answer is $2^{10}$.", "2"), (r"The sum is $12 + 5$, so 17.", "12"), (r"$\boxed{5\pi}$", "5"), (r"$\boxed{\log_2 8}$", "2"),
 (r"We get $x = 4$ or $x = -4$.", "4"), (r"$\boxed{4, -4}$", "4"), (r"$\boxed{-4}$", "4"), (r"\boxed{12}x", "12"),
 (r"The answer is $\frac{7}{3}$.", "7"), (r"The answer is $\frac{7}{3}$.", "3"), (r"So $n = 15$ and the area is $15\sqrt{2}$.", "15"),
 # phrasing
 ("The answer is 42.", "42"), ("Therefore, the final answer is: $\\boxed{42}$. I hope it is correct.", "42"),
 ("**Final Answer**\n\\[\n\\boxed{\\frac{\\sqrt{21}}{5}}\n\\]", r"\frac{\sqrt{21}}{5}"), ("Final answer: 17", "17"),
 ("Final answer: $\\frac{1}{8}$", r"\frac{1}{8}"), ("The final answer is $\\frac{1}{8}$. I hope it is correct.", r"\frac{1}{16}"),
 ("I think the answer is 12, wait, no: it is $\\boxed{13}$.", "13"), ("First \\boxed{3}, then correcting, \\boxed{5}", "5"),
 ("Answer: $\\sqrt{51}$", r"\sqrt{51}"), ("Answer: \\(\\sqrt{66}\\)", r"\sqrt{66}"), ("So we have \\[x = \\frac{3}{56}\\]", r"\frac{3}{56}"),
 ("$$\\frac{639}{40}$$", r"\frac{639}{40}"), ("<answer>\\frac{5}{13}</answer>", r"\frac{5}{13}"), ("<answer>$(6,31,-1)$</answer>", "(6,31,-1)"),
 ("The answer is $\\boxed{9/256}$<|endoftext|>", r"\frac{9}{256}"), ("The value is $\\boxed{.35625}$</s>", ".35625"),
 ("$\\boxed{0.0000672}$<|eot_id|>", ".0000672"), ("<|im_start|>assistant\nThe answer is \\boxed{81}<|im_end|>", "81"),
 # units, scientific notation, mixed numbers, several boxes, decimal commas, forms math-verify misses or gets wrong
 (r"\boxed{10}", "10 cm^2"), (r"\boxed{10}", "10weeks"), (r"\boxed{10\text{ cm}}", "10"), (r"\boxed{12 cm}", "10"), (r"\boxed{10x}", "10"),
 (r"\boxed{3.54e-07}", r"3.54 \times 10^{-7}"), (r"\boxed{\frac{1}{432}}", r"2.314814814815 \times 10^{-3}"), (r"\boxed{1\frac{1}{2}}", "1.5"),
 ("The answer is 1 1/2.", "3/2"), (r"\boxed{2, 1}", r"\boxed{1} and \boxed{2}"), (r"\boxed{(2, 1)}", "(1, 2)"), (r"\boxed{1,5}", "1.5"),
 (r"\boxed{1,500}", "1.5"), ("$y = 2x + 3$", "f(x) = 2x + 3"), (r"\boxed{i(2-i)}", "1+2i"), (r"\boxed{\sin(90^\circ - x)}", r"\cos x"),
 (r"$1 + \frac{1}{\mathrm{e}}$", r"1 - \frac{1}{\mathrm{e}}"), ("So, 20 +", "20"), ("x = 20 -", "20"),
]

# ... and built from MATH-500 gold answers: an equivalent rewrite or a wrong answer, in one of STYLES.
def equivalents(g, rng):
    out = [g]
    if "\\frac" in g: out += [g.replace("\\frac", "\\dfrac")]
    m = re.fullmatch(r"(-?)\\frac\{(\d+)\}\{(\d+)\}", g)
    if m: out += [f"{m[1]}{m[2]}/{m[3]}", f"{m[1]}\\frac{m[2]}{m[3]}" if len(m[2]) == len(m[3]) == 1 else g]
    if re.fullmatch(r"-?\d+", g): out += [g + ".0", f"{int(g):,}" if abs(int(g)) >= 1000 else g, f"x = {g}"]
    if g.startswith("("): out += [g.replace(",", ", "), "\\left" + g[:1] + g[1:-1] + "\\right" + g[-1:]]
    if "\\sqrt{" in g: out += [re.sub(r"\\sqrt\{(\d)\}", r"\\sqrt\1", g)]
    return out

def wrongs(g, rng):
    out = []
    if re.fullmatch(r"-?\d+", g):
        n = int(g); out += [str(n + 1), str(-n) if n else "1", f"{n}x", f"\\sqrt{{{n}}}", f"\\frac{{1}}{{{n}}}" if n else "2",
                            f"{n}^2", f"[0, {n})", f"{n}\\pi", f"x^{{{n}}}"]
    m = re.fullmatch(r"\\frac\{(\d+)\}\{(\d+)\}", g)
    if m: out += [f"\\frac{{{int(m[1]) + 1}}}{{{m[2]}}}", m[1], m[2], f"\\frac{{{m[2]}}}{{{m[1]}}}"]
    numbers = re.findall(r"\d+", g)
    if numbers and not re.fullmatch(r"-?\d+", g): out += [rng.choice(numbers)]
    if not out: out = ["-(" + g + ")", g + " + 1"]
    return out

STYLES = [
 lambda a: f"Therefore, the answer is $\\boxed{{{a}}}$.",
 lambda a: f"Putting everything together:\n\\[\n\\boxed{{{a}}}\n\\]",
 lambda a: f"Final Answer: The final answer is ${a}$. I hope it is correct.",
 lambda a: f"Combining the cases, we find ${a}$.",
 lambda a: f"Hence the result is \\({a}\\).",
 lambda a: f"The answer is $\\boxed{{{a}}}$.<|im_end|>",
 lambda a: f"So the value is ${a}$.<|endoftext|>",
 lambda a: f"**Final Answer**\n\\[ \\boxed{{{a}}} \\]</s>",
 lambda a: f"The answer is ${a}$",
 lambda a: f"We conclude that\n$$\n{a}\n$$",
 lambda a: f"<answer>{a}</answer>",
 lambda a: f"Therefore, the final answer is: $\\boxed{{{a}}}$<|eot_id|>",
]

def generated(golds, n, seed=0):
    rng = random.Random(seed)
    rows = []
    while len(rows) < n:
        g = rng.choice(golds)
        a = rng.choice(equivalents(g, rng)) if rng.random() < 0.5 else rng.choice(wrongs(g, rng))
        rows.append((rng.choice(STYLES)(a), g))
    return rows


def latex_pairs(n: int, seed: int) -> tuple[list[tuple[str, str]], str]:
    "HAND plus `n` pairs built from MATH-500's gold answers (when the file is there)."
    data = real_data_dir()
    path = None if data is None else data / "benchmarks" / "math500.parquet"
    if path is None or not path.exists() or n == 0: return list(HAND), "hand-written pairs only (no MATH-500 file)"
    import pandas as pd
    golds = [row["ground_truth"] for row in pd.read_parquet(path)["reward_model"]]
    return list(HAND) + generated(golds, n, seed), f"{len(HAND)} hand-written + {n} from MATH-500 golds ({path})"


def latex_part(n: int, seed: int) -> dict:
    from math_verify import parse, verify
    pairs, source = latex_pairs(n, seed)
    warm_up_grader()
    ours, theirs, bare, slowest = [], [], [], 0.0
    for completion, reference in pairs:
        start = time.perf_counter(); ours.append(check_answer(completion, reference))
        slowest = max(slowest, time.perf_counter() - start)
        theirs.append(bool(verify(parse("\\boxed{" + reference + "}"), parse(completion))))
        bare.append(bool(verify(parse(reference), parse(completion))))
    agree = sum(a == b for a, b in zip(ours, theirs)) / len(pairs)
    agree_bare = sum(a == b for a, b in zip(ours, bare)) / len(pairs)
    print(f"\nLaTeX-style predictions: {source}")
    print(f"{len(pairs)} pairs; check_answer accepts {sum(ours)}, math-verify {sum(theirs)}; agreement {agree:.3f} "
          f"(with math-verify on the bare reference: {agree_bare:.3f}); slowest check_answer call {slowest:.2f} s")
    for (completion, reference), a, b in zip(pairs, ours, theirs):
        if a != b: print(f"  disagreement: check_answer={a} math-verify={b}  {completion[-70:]!r}  vs  {reference!r}")
    return {"latex_agreement": round(agree, 4), "latex_n": len(pairs)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=400, help="problems to use (0 = all)")
    parser.add_argument("--batch", type=int, default=64, help="completions per reward call, as in a TRL step")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--latex", type=int, default=170, help="LaTeX pairs built from MATH-500 golds (0: hand-written only)")
    parser.add_argument("--out", default=None, help="also write the results (with the machine's load) to this JSON file")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # math-verify logs every unparsable string
    from math_verify import parse, verify

    problems, source = load_problems(args.problems, args.seed)
    rng = random.Random(args.seed)
    rows = [(name, build(reasoning, answer, rng), answer)
            for reasoning, answer in problems for name, build in VARIANTS.items()]
    completions, references = [r[1] for r in rows], [r[2] for r in rows]

    def grade_check(idx): return [float(check_answer(completions[j], references[j])) for j in idx]

    def batched(reward):
        def grade(idx):
            out = []
            for i in range(0, len(idx), args.batch):
                chunk = idx[i:i + args.batch]
                out += reward(completions=[completions[j] for j in chunk], answer=[references[j] for j in chunk])
            return out
        return grade

    warm_up_grader()  # a completion the fast path cannot decide goes to the math-verify worker: start it first
    by_variant = {name: [i for i, r in enumerate(rows) if r[0] == name] for name in VARIANTS}
    graders = {"check_answer": grade_check, "oneshot": batched(oneshot_correctness), "oneshot-lenient": batched(oneshot_lenient_correctness)}
    verdicts, seconds = {g: [0.0] * len(rows) for g in graders}, {g: {} for g in graders}
    for g, grade in graders.items():
        for name, idx in by_variant.items():
            best = float("inf")
            for _ in range(5):  # best of five (the machine is shared), each with a cold number cache
                answers._parse_number_text.cache_clear()
                start = time.perf_counter(); out = grade(idx); best = min(best, time.perf_counter() - start)
            seconds[g][name] = best
            for i, v in zip(idx, out): verdicts[g][i] = v
    theirs, their_seconds = [], []
    for completion, reference in zip(completions, references):
        start = time.perf_counter()
        theirs.append(float(verify(parse(reference), parse(completion))))
        their_seconds.append(time.perf_counter() - start)

    print(f"source: {source}; {len(problems)} problems x {len(VARIANTS)} variants = {len(rows)} completions")
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}\n")
    print(f"{'variant':18s} {'n':>5s} {'check acc':>9s} {'oneshot acc':>11s} {'lenient acc':>11s} {'math-verify acc':>15s} "
          f"{'agree':>6s} {'agree os':>8s} {'agree len':>9s} {'check us/c':>10s} {'oneshot us/c':>12s} {'lenient us/c':>12s} "
          f"{'math-verify us/c':>16s}")
    ours, preset, lenient = verdicts["check_answer"], verdicts["oneshot"], verdicts["oneshot-lenient"]
    for name, idx in by_variant.items():
        mean = lambda v: sum(v[i] for i in idx) / len(idx)
        agree = lambda v: sum(v[i] == theirs[i] for i in idx) / len(idx)
        print(f"{name:18s} {len(idx):5d} {mean(ours):9.3f} {mean(preset):11.3f} {mean(lenient):11.3f} {mean(theirs):15.3f} "
              f"{agree(ours):6.3f} {agree(preset):8.3f} {agree(lenient):9.3f} "
              f"{seconds['check_answer'][name] / len(idx) * 1e6:10.1f} {seconds['oneshot'][name] / len(idx) * 1e6:12.1f} "
              f"{seconds['oneshot-lenient'][name] / len(idx) * 1e6:12.1f} {sum(their_seconds[i] for i in idx) / len(idx) * 1e6:16.1f}")
    total_theirs, n = sum(their_seconds), len(rows)
    result = {}
    for g, key in (("check_answer", ""), ("oneshot", "oneshot_"), ("oneshot-lenient", "oneshot_lenient_")):
        total = sum(seconds[g].values())
        agreement = sum(a == b for a, b in zip(verdicts[g], theirs)) / n
        print(f"{g}: {n / total:,.0f} completions/s, math-verify {n / total_theirs:,.0f}/s: speedup {total_theirs / total:.0f}x; "
              f"agreement {agreement:.4f}")
        for i in [i for i in range(n) if verdicts[g][i] != theirs[i]][:5]:
            print("  disagreement:", (rows[i][0], rows[i][1][-60:], rows[i][2], verdicts[g][i], theirs[i]))
        result[key + "speedup_vs_math_verify"] = round(total_theirs / total, 1)
        result[key + "agreement"] = round(agreement, 4)
    result.update(latex_part(args.latex, args.seed))
    if args.out:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        with open(args.out, "w") as f:
            json.dump({"command": "python bench/rewards.py " + " ".join(sys.argv[1:]), "source": source.split(",")[0],
                       "machine": f"{platform.machine()}, {os.cpu_count()} cores, load average {load:.1f} while it ran"
                       if load is not None else platform.machine(), **result}, f, indent=1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
