"""Tokens per second of the package's evaluation generation against a plain `model.generate` loop, same prompts.

    python bench/generation.py [--model smollm2-135m] [--n 64] [--batch-sizes 16 32 64] [--max-new-tokens 128]
                               [--repeats 2] [--out bench/results/generation.json]

Both sides decode greedily the same chat prompts (the first `--n` GSM8K test questions in the `hash` format when
a local copy is found, else synthetic problems) with the same batch size and `max_new_tokens`, and count the same
new tokens (each completion up to and including its end-of-sequence token). The plain loop tokenizes the prompts in
their order, left-padded, and calls `model.generate` per batch; the package's `generate_completions` (what
`evaluate` and `oneshot-reason eval` use) batches them by length. Wall time of the whole call, tokenizing and
decoding included; the two sides alternate, best of `--repeats`. `ratio` = package tokens/s / plain tokens/s.
"""
import argparse, json, os, platform, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def prompts_for(n: int):
    "The first n GSM8K test questions (hash format) when a local copy exists, else n synthetic problems."
    from oneshot_reason.data import load_math_file, synthetic_problems
    from oneshot_reason.testing import real_data_dir
    folder = real_data_dir()
    if folder is not None and (folder / "gsm8k" / "test.jsonl").exists():
        return "gsm8k test", list(load_math_file(folder / "gsm8k" / "test.jsonl", format="hash").select(range(n))["prompt"])
    return "synthetic", list(synthetic_problems(n, seed=0, split="test", format="hash")["prompt"])

def plain_loop(model, tok, prompts, batch_size: int, max_new_tokens: int) -> int:
    "A plain `model.generate` loop over the prompts in order; returns the new tokens (up to and including EOS)."
    import torch
    texts = [tok.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in prompts]
    eos = model.generation_config.eos_token_id
    eos = set([eos] if isinstance(eos, int) else eos)
    tok.padding_side, new = "left", 0
    for s in range(0, len(texts), batch_size):
        enc = tok(texts[s:s + batch_size], return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.no_grad():
            out = model.generate(**enc, do_sample=False, max_new_tokens=max_new_tokens, pad_token_id=tok.pad_token_id)
        for row in out[:, enc["input_ids"].shape[1]:].tolist():
            ends = [i for i, t in enumerate(row) if t in eos]
            new += ends[0] + 1 if ends else len(row)
        tok.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
    return new

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--n", type=int, default=64)
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 32, 64])
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "generation.json"))
    a = p.parse_args()
    import torch
    from oneshot_reason.inference import generate_completions
    from oneshot_reason.models import load_policy
    model, tok = load_policy(a.model)
    model.eval()
    source, prompts = prompts_for(a.n)
    dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
    print(f"{a.model} ({dtype}), {len(prompts)} {source} prompts, greedy, at most {a.max_new_tokens} new tokens, best of {a.repeats}")
    plain_loop(model, tok, prompts[:2], 2, 4) # warm-up: the first generate call pays one-off setup costs
    print(f"{'batch':>6}{'plain tok/s':>14}{'package tok/s':>16}{'ratio':>8}")
    rows = []
    for bs in a.batch_sizes:
        best = {"plain": 0.0, "package": 0.0}
        tokens = {}
        for _ in range(a.repeats):
            t = time.perf_counter(); n = plain_loop(model, tok, prompts, bs, a.max_new_tokens)
            best["plain"] = max(best["plain"], n / (time.perf_counter() - t)); tokens["plain"] = n
            t = time.perf_counter()
            g = generate_completions(model, tok, prompts, max_new_tokens=a.max_new_tokens, batch_size=bs, progress=False, details=True)
            best["package"] = max(best["package"], g.new_tokens / (time.perf_counter() - t)); tokens["package"] = g.new_tokens
        row = {"batch_size": bs, "plain_tokens_per_second": round(best["plain"], 1), "package_tokens_per_second": round(best["package"], 1),
               "ratio": round(best["package"] / best["plain"], 3), "new_tokens_plain": tokens["plain"], "new_tokens_package": tokens["package"]}
        rows.append(row)
        print(f"{bs:>6}{row['plain_tokens_per_second']:>14.1f}{row['package_tokens_per_second']:>16.1f}{row['ratio']:>8.2f}", flush=True)
    result = {"model": a.model, "dtype": dtype, "prompts": source, "n": len(prompts), "max_new_tokens": a.max_new_tokens,
              "repeats": a.repeats, "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}", "rows": rows}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True); Path(a.out).write_text(json.dumps(result, indent=1))

if __name__ == "__main__": main()
