"""What `torch.compile` buys a decoding step: compile time against the time it saves, side by side with eager steps.

    python bench/compile.py [--model smollm2-135m] [--batch 32] [--prompt-tokens 150] [--steps 24] [--threads 2]
                            [--out bench/results/compile.json]

One batch of `--batch` random prompts of `--prompt-tokens` tokens is prefilled eagerly, then `--steps` single-token
decoding steps are timed (median of the steps after the first two) in four forms: eager with transformers'
`DynamicCache` (what `generate` uses), eager with `fastgen`'s preallocated cache (what `fast_generate` uses), eager
with transformers' `StaticCache`, and `torch.compile(model.forward)` over the `StaticCache` (fixed shapes, so it
compiles once; the first call's time is the compile time). Greedy tokens, so every form decodes the same tokens. Wall
seconds with `--threads` torch threads, the machine otherwise idle; the last line is the JSON written to `--out`.
`pays_after_tokens`: new tokens per row after which the compile time is won back against the fastest eager form.
"""
import argparse, json, os, platform, statistics, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def decode(model, cache, ids, steps: int, forward=None):
    "Prefill `ids` into `cache`, then `steps` greedy single-token steps; the wall time of each step and the tokens."
    import torch
    forward = forward or model
    B, P = ids.shape
    with torch.no_grad():
        logits = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits[:, -1]
        token, times, tokens = logits.argmax(-1), [], []
        for l in range(steps):
            start = time.perf_counter()
            position = torch.full((B, 1), P + l)
            logits = forward(input_ids=token[:, None], position_ids=position, cache_position=torch.tensor([P + l]),
                             past_key_values=cache, use_cache=True).logits[:, -1]
            token = logits.argmax(-1)
            times.append(time.perf_counter() - start); tokens.append(token)
    return times, torch.stack(tokens, 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--prompt-tokens", type=int, default=150)
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "compile.json"))
    a = p.parse_args()
    import torch
    from transformers import DynamicCache, StaticCache
    from oneshot_reason.fastgen import preallocated_cache
    from oneshot_reason.models import load_policy
    torch.set_num_threads(a.threads)
    model, _ = load_policy(a.model, dtype="float32")
    model.eval()
    ids = torch.randint(100, model.config.vocab_size - 100, (a.batch, a.prompt_tokens), generator=torch.Generator().manual_seed(0))
    capacity = a.prompt_tokens + a.steps + 1
    static = lambda: StaticCache(config=model.config, max_cache_len=capacity)
    rows, reference = {}, None
    forms = [("eager, DynamicCache (generate's)", lambda: DynamicCache(config=model.config), None),
             ("eager, preallocated (fast_generate's)", lambda: preallocated_cache(model, capacity), None),
             ("eager, StaticCache", static, None),
             ("compiled, StaticCache", static, torch.compile(model.forward, dynamic=False))]
    for name, cache, forward in forms:
        times, tokens = decode(model, cache(), ids, a.steps, forward)
        rows[name] = {"first_step_s": round(times[0], 3), "median_step_ms": round(1000 * statistics.median(times[2:]), 1),
                      "same_tokens_as_generate_cache": reference is None or bool(torch.equal(tokens, reference))}
        reference = tokens if reference is None else reference
        print(f"{name:<40} first step {times[0]:8.2f} s   median step {rows[name]['median_step_ms']:8.1f} ms", flush=True)
    compiled = rows["compiled, StaticCache"]
    eager = min(r["median_step_ms"] for n, r in rows.items() if n.startswith("eager"))
    saving_ms = eager - compiled["median_step_ms"]
    result = {"model": a.model, "batch": a.batch, "prompt_tokens": a.prompt_tokens, "steps": a.steps, "threads": a.threads,
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
              "load_average": os.getloadavg()[0], "command": "python " + " ".join(sys.argv), "forms": rows,
              "compile_s": round(compiled["first_step_s"], 1),
              "compiled_vs_fastest_eager": round(eager / compiled["median_step_ms"], 3),
              "pays_after_tokens": round(1000 * compiled["first_step_s"] / saving_ms) if saving_ms > 0 else None}
    Path(a.out).write_text(json.dumps(result, indent=1))
    print(json.dumps(result))


if __name__ == "__main__": main()
