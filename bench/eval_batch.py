"""Generation throughput of `oneshot-reason eval` by batch size: new tokens per second, side by side with the default.

    python bench/eval_batch.py [--model tiny] [--benchmark synthetic] [--limit 64] [--max-new-tokens 64]
                               [--sizes 1 4 8 16 32 64] [--repeats 1] [--out bench/results/eval_batch_<model>.json]

The same greedy evaluation (`evaluate.generate_completions` on the benchmark's first `--limit` problems, asked in the
benchmark's prompt format) is run once per batch size, in one process with the model loaded once and a warm-up
batch first. Each row says the new tokens generated (each completion up to and including its end-of-sequence token),
the seconds spent in `generate`, the tokens per second, that rate as a ratio of the default batch size's
(`options.EVAL_BATCH_SIZE`), and how many completions hit `--max-new-tokens`. Greedy completions do not depend on the
batch size, so every size generates the same tokens, and the ratio is the speed-up alone.

On a CPU the rate depends on the cores the process gets: the script records `os.cpu_count()`, torch's thread count
and the 1-minute load average before and after; numbers measured on a shared machine are slower than on an idle one.
"""
import argparse, json, os, time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="tiny", help="'tiny', a Hub id or a local folder")
    p.add_argument("--benchmark", default="synthetic", help="a benchmark name or a data file (see `evaluate`)")
    p.add_argument("--limit", type=int, default=64, help="problems evaluated (a multiple of the largest size wastes no batch)")
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 8, 16, 32, 64])
    p.add_argument("--repeats", type=int, default=1, help="runs per size; the fastest is kept")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    from oneshot_reason.options import EVAL_BATCH_SIZE
    from oneshot_reason.evaluate import _benchmark_rows, generate_completions
    from oneshot_reason.models import model_name
    from oneshot_reason.models import load_policy
    model, tokenizer = load_policy(args.model)
    model.eval()
    name, data = _benchmark_rows(args.benchmark, args.limit, None, None)
    prompts = list(data["prompt"])
    generate_completions(model, tokenizer, prompts[:2], max_new_tokens=8, batch_size=2, progress=False) # warm-up
    load_before, rows, texts = os.getloadavg(), [], None
    for size in args.sizes:
        best = None
        for _ in range(args.repeats):
            g = generate_completions(model, tokenizer, prompts, max_new_tokens=args.max_new_tokens, batch_size=size,
                                     progress=False, details=True)
            if best is None or g.seconds < best.seconds: best = g
        if texts is None: texts = best.completions
        rows.append({"batch_size": size, "new_tokens": best.new_tokens, "seconds": round(best.seconds, 2),
                     "tokens_per_second": round(best.tokens_per_second, 1),
                     "truncated": sum(t for row in best.truncated for t in row),
                     "same_completions": best.completions == texts, "loadavg_1min": round(os.getloadavg()[0], 2)})
        print(json.dumps(rows[-1]), flush=True)
    base = next((r for r in rows if r["batch_size"] == EVAL_BATCH_SIZE), rows[0])
    for r in rows: r["speed_vs_default"] = round(r["tokens_per_second"] / base["tokens_per_second"], 2)
    result = {"model": model_name(model) or type(model).__name__, "benchmark": name, "problems": len(prompts), "max_new_tokens": args.max_new_tokens,
              "dtype": str(next(model.parameters()).dtype).removeprefix("torch."), "default_batch_size": EVAL_BATCH_SIZE,
              "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
              "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in os.getloadavg()],
              "rows": rows}
    out = args.out or ROOT / "bench" / "results" / f"eval_batch_{Path(str(args.model)).name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\n{result['model']} on {name}: {len(prompts)} problems, at most {args.max_new_tokens} new tokens, {result['dtype']}, "
          f"{os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads, 1-minute load {load_before[0]:.1f} -> {os.getloadavg()[0]:.1f}\n")
    print(f"| batch size | new tokens | seconds | tokens/s | vs batch {base['batch_size']} | truncated |\n| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['batch_size']} | {r['new_tokens']} | {r['seconds']} | {r['tokens_per_second']} | {r['speed_vs_default']:.2f}x | {r['truncated']} |")

if __name__ == "__main__":
    main()
