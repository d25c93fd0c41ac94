"""Rollout tokens per second: `fastgen.fast_generate` against `model.generate`, same prompts, side by side.

    python bench/rollout.py [--model smollm2-135m] [--lora 16] [--batch-sizes 32 64] [--groups 8 1]
                            [--max-new-tokens 160] [--temperature 0.7] [--repeats 2] [--dtypes float32 bfloat16]
                            [--threads 2] [--out bench/results/rollout.json]

Each batch is `batch / group` GSM8K test questions as chat prompts (the `hash` format, synthetic problems without a
local copy), each repeated `group` times as a GRPO batch repeats them (`--groups 8`: the trainer's rollouts; 1: all
different, as evaluation batches them), left padded, sampled as the trainer samples them (`--temperature`, top_k 0,
top_p 1; `--temperature 0` is greedy) from the same seed, by the policy the trainer samples from (`--lora` adapters
of that rank on every projection, as initialised; 0: none). New tokens are counted per completion up to and including its end token. The two sides
alternate (generate first on even repeats); times are the process's CPU seconds over `--threads` torch threads (wall
time on a machine shared with other jobs says more about the neighbours than about the code); best of `--repeats`.
`ratio` = fast_generate tokens/s / generate tokens/s. Variants of fast_generate: `fast` (its defaults: each prompt
prefilled once, the cache filled in place, ended rows dropped), `static` (transformers' StaticCache), `dynamic`
(DynamicCache), `no-share` (every row prefilled), `no-compact` (every row computed to the end, as generate does).

bfloat16: on a CPU without AVX512-BF16/AMX, `generate` on a bfloat16 model runs emulated bfloat16 matmuls (about
40x slower than float32 here), so a full rollout cannot be timed in minutes; the bfloat16 rows cut the prompts to
their last `--bf16-prompt-tokens` tokens and decode `--bf16-new-tokens` tokens (greedy, so both sides decode the
same tokens), and say so. fast_generate runs such a model in float32 (`upcast`).
"""
import argparse, json, os, platform, sys, time

clock = time.process_time  # CPU seconds of this process: with one torch thread, what the work costs, whatever the neighbours do
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))


def new_tokens(seqs, prompt_len: int, eos: set) -> int:
    "New tokens per row up to and including the first end token, summed."
    total = 0
    for row in seqs[:, prompt_len:].tolist():
        ends = [i for i, t in enumerate(row) if t in eos]
        total += ends[0] + 1 if ends else len(row)
    return total


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--lora", type=int, default=16, help="LoRA rank of the sampled policy, as the trainer's; 0: none")
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 64])
    p.add_argument("--groups", type=int, nargs="+", default=[8, 1], help="completions per prompt in a batch")
    p.add_argument("--max-new-tokens", type=int, default=160)
    p.add_argument("--temperature", type=float, default=0.7, help="configs/real_model.yaml's; 0 is greedy")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    p.add_argument("--variants", nargs="+", default=["fast"])
    p.add_argument("--bf16-prompt-tokens", type=int, default=8)
    p.add_argument("--bf16-new-tokens", type=int, default=4)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "rollout.json"))
    a = p.parse_args()
    import torch
    torch.set_num_threads(a.threads)
    from generation import prompts_for
    from oneshot_reason.fastgen import cpu_has_native_bf16, fast_generate
    from oneshot_reason.models import load_policy
    variants = {"fast": {}, "static": dict(cache="static"), "dynamic": dict(cache="dynamic"),
                "no-share": dict(share_prompts=False), "no-compact": dict(compact_every=2.0)}
    rows = []
    write = lambda rows: write_result(a, source, rows)
    for dtype in a.dtypes:
        model, tok = load_policy(a.model, dtype=dtype, lora=a.lora or False)
        model.eval()
        eos = model.generation_config.eos_token_id
        eos = set([eos] if isinstance(eos, int) else eos)
        short = dtype != "float32" and not cpu_has_native_bf16()
        T = a.bf16_new_tokens if short else a.max_new_tokens
        temp = 0.0 if short else a.temperature
        sample = dict(do_sample=True, temperature=temp, top_k=0, top_p=1.0) if temp > 0 else dict(do_sample=False)
        source, prompts = prompts_for(max(a.batch_sizes))
        texts = [tok.apply_chat_template(q, tokenize=False, add_generation_prompt=True) for q in prompts]
        tok.padding_side = "left"
        with torch.no_grad():  # warm-up
            enc = tok(texts[:2], return_tensors="pt", padding=True, add_special_tokens=False)
            model.generate(**enc, max_new_tokens=2, pad_token_id=tok.pad_token_id); fast_generate(model, **enc, max_new_tokens=2)
        for bs, group in [(bs, g) for bs in a.batch_sizes for g in a.groups]:
            enc = tok([t for t in texts[:bs // group] for _ in range(group)], return_tensors="pt", padding=True,
                      add_special_tokens=False)
            if short: enc = {k: v[:, -a.bf16_prompt_tokens:] for k, v in enc.items()}
            P = enc["input_ids"].shape[1]
            sides = {"generate": lambda: model.generate(**enc, max_new_tokens=T, pad_token_id=tok.pad_token_id, **sample)}
            for v in a.variants:
                sides[v] = (lambda kw: lambda: fast_generate(model, **enc, max_new_tokens=T, pad_token_id=tok.pad_token_id,
                                                             **sample, **kw))(variants[v])
            best, count = {k: 0.0 for k in sides}, {}
            for r in range(a.repeats):
                order = list(sides) if r % 2 == 0 else list(sides)[::-1]
                for k in order:
                    torch.manual_seed(r)
                    t = clock()
                    with torch.no_grad(): seqs = sides[k]()
                    s = clock() - t
                    n = new_tokens(seqs, P, eos)
                    best[k], count[k] = max(best[k], n / s), n
                    print(f"  {dtype} batch {bs} group {group} {k}: {n} new tokens in {s:.1f}s", flush=True)
            row = {"dtype": dtype, "batch_size": bs, "group": group, "prompt_tokens": P, "max_new_tokens": T, "temperature": temp,
                   "shortened_for_emulated_bf16": short, "load_average": os.getloadavg()[0],
                   "tokens_per_second": {k: round(v, 1) for k, v in best.items()}, "new_tokens": count,
                   "ratio_vs_generate": {k: round(best[k] / best["generate"], 3) for k in sides if k != "generate"}}
            rows.append(row)
            print(json.dumps(row), flush=True)
            write(rows)
        del model
    print(f"\n{'dtype':<9}{'batch':>6}{'group':>6}{'generate tok/s':>16}" + "".join(f"{v + ' tok/s':>18}{'ratio':>7}" for v in a.variants))
    for r in rows:
        print(f"{r['dtype']:<9}{r['batch_size']:>6}{r['group']:>6}{r['tokens_per_second']['generate']:>16.1f}"
              + "".join(f"{r['tokens_per_second'][v]:>18.1f}{r['ratio_vs_generate'][v]:>7.2f}" for v in a.variants))


def write_result(a, source, rows):
    "The results so far, rewritten after every row (a long run that stops keeps what it measured)."
    import torch
    from oneshot_reason.fastgen import cpu_has_native_bf16
    result = {"model": a.model, "lora": a.lora, "prompts": source, "threads": a.threads, "repeats": a.repeats,
              "command": "python " + " ".join(sys.argv),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, native bf16: {cpu_has_native_bf16()}, torch {torch.__version__}",
              "rows": rows}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True); Path(a.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__": main()
