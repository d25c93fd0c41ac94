"""Do a newcomer's first GRPO groups on SmolLM2-135M-Instruct and GSM8K train carry signal, under which defaults?

What `oneshot-reason train --model smollm2-135m --data-path gsm8k/train.jsonl` sees in its first steps, measured
without training: at step 0 the LoRA adapters are zero (B = 0), so the policy is the base model, and a group is the
base model's completions of one prompt. For each (format, temperature) this script samples groups of `--n-gen`
completions of `--max-tokens` tokens for the same `--n-prompts` GSM8K train prompts, built the way the trainer builds
them (`data.load_math_file(path, format)` -> chat messages -> the tokenizer's chat template with the generation
prompt, as TRL's GRPOTrainer does), sampled as TRL samples (temperature, top_p 1, top_k 0, the model's end tokens).
Shorter budgets and smaller groups are read from the same samples: a completion's first 160 tokens are what a
160-token budget would have produced under the same random draws, and completions 1-8 and 9-16 are two groups of 8.

Each completion is scored by every reward stack in `rewards.REWARD_PRESETS` (but `think`, which needs math-verify),
as TRL passes it (one assistant message), and graded by `check_answer` (the grader behind the package's accuracy,
told when the completion was cut). A group has *signal* when its total rewards are not all equal (TRL's advantages are
then not all zero); it has *correctness signal* when `check_answer` is right for some completions and wrong for
others; signal without correctness signal is format-only.

Resumable: samples go to `bench/results/newcomer_signal/<format>_t<temperature>.jsonl` as they are made (one line a
group) and the summary `bench/results/newcomer_signal.json` is rewritten after each group from all of them; a rerun
skips the groups already there. Several processes may run at once on different `--configs`.

    OMP_NUM_THREADS=1 nice python bench/newcomer_signal.py --configs hash:0.7 xml:0.7 [--n-prompts 12]
    python bench/newcomer_signal.py --summary-only

Another model (`--model qwen2.5-coder-0.5b`) writes `newcomer_signal_<model>/` and `newcomer_signal_<model>.json`.
With `--engine ctranslate2` the groups are sampled by CTranslate2 (int8 weights, `--prompts-per-call` prompts x
`--n-gen` completions in one batch, its own seeded random draws) instead of torch's `generate`: the same prompts,
temperature, end tokens and budget, from weights that differ from the policy's by int8 rounding (per-token log-probs
0.015 nats apart on Qwen2.5-Coder-0.5B, ENGINES.md), so the shares are the policy's up to that rounding; its
seconds are CTranslate2's, so compare them only between the configs of one file.

    python bench/newcomer_signal.py --model qwen2.5-coder-0.5b --engine ctranslate2 --n-gen 8 --n-prompts 16 \
        --budgets 256 384 --configs boxed:0.7 boxed:1.0 xml:0.7 xml:1.0 hash:0.7 hash:1.0
"""
import argparse, json, os, platform, random, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SAMPLES = RESULTS / "newcomer_signal"
OUT = RESULTS / "newcomer_signal.json"
MODEL, ENGINE = "smollm2-135m", "torch"
DATA = next((d / "shared" / "data" / "gsm8k" / "train.jsonl" for d in (ROOT.parent, ROOT.parent.parent)
             if (d / "shared" / "data" / "gsm8k" / "train.jsonl").is_file()), Path("../shared/data/gsm8k/train.jsonl"))
BUDGETS, GROUPS = (160, 256), (8, 16)


def use_model(model: str, engine: str, budgets: list[int] | None):
    "Point the samples, the summary and the budgets at `model` (smollm2-135m keeps the original file names)."
    global SAMPLES, OUT, MODEL, ENGINE, BUDGETS
    MODEL, ENGINE = model, engine
    if budgets: BUDGETS = tuple(sorted(budgets))
    if model != "smollm2-135m":
        SAMPLES, OUT = RESULTS / f"newcomer_signal_{model}", RESULTS / f"newcomer_signal_{model}.json"


def prompt_rows(n_pool: int = 64, seed: int = 0) -> list[int]:
    "Row numbers of GSM8K train drawn at random once; the first `--n-prompts` are used, the same for every config."
    return random.Random(seed).sample(range(7473), n_pool)


def cut(ids: list[int], eos: set[int], limit: int) -> tuple[list[int], bool]:
    "The completion a `limit`-token budget gives: its tokens up to the end token, and whether it was cut."
    for i, t in enumerate(ids[:limit]):
        if t in eos: return ids[:i], False
    return ids[:limit], True


def score(text: str, truncated: bool, answer: str, fmt: str) -> dict:
    "Every reward stack's total, the grader's verdict and whether the format's answer is there, for one completion."
    from oneshot_reason.rewards import reward_preset, REWARD_PRESETS
    from oneshot_reason.grading import check_answer
    from oneshot_reason.models import final_answer
    msg = [[{"role": "assistant", "content": text}]]
    out = {p: reward_preset(p).total(msg, answer=[answer])[0] for p in REWARD_PRESETS if p != "think"}
    return {"rewards": out, "correct": bool(check_answer(msg[0], answer, truncated=truncated)),
            "formatted": final_answer(text, fmt) is not None, "truncated": truncated}


def record(ids_list, eos, ex, fmt, temp, row, n_gen, max_tokens, seconds, cpu, steps, load0, tok) -> dict:
    "One group's line: each completion cut at every budget, decoded and scored."
    comps = []
    for ids in ids_list:
        c = {}
        for b in BUDGETS:
            kept, truncated = cut(ids, eos, b)
            t = tok.decode(kept, skip_special_tokens=True)
            c[str(b)] = {"text": t, "tokens": len(kept), **score(t, truncated, ex["answer"], fmt)}
        comps.append(c)
    return {"row": row, "format": fmt, "temperature": temp, "answer": ex["answer"], "n_gen": n_gen, "max_tokens": max_tokens,
            "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2), "generate_steps": steps, "load": round(load0, 2),
            "engine": ENGINE, "completions": comps}


def generate_ct2(configs: list[tuple[str, float]], n_prompts: int, n_gen: int, max_tokens: int, seed: int, per_call: int):
    "The groups sampled by CTranslate2 (int8), `per_call` prompts x `n_gen` completions a batch."
    import ctranslate2, torch
    from transformers import AutoTokenizer
    from oneshot_reason.data import load_math_file
    from oneshot_reason.models import CT2_TOKENIZER, ctranslate2_folder, prepare_tokenizer
    from oneshot_reason.inference import stop_token_ids
    from transformers import GenerationConfig
    threads = int(os.environ.get("OMP_NUM_THREADS", "1"))
    folder = ctranslate2_folder(MODEL)
    tok = prepare_tokenizer(AutoTokenizer.from_pretrained(folder / CT2_TOKENIZER))
    eos = stop_token_ids(GenerationConfig.from_pretrained(folder / CT2_TOKENIZER), tok)
    rows = prompt_rows(seed=seed)[:n_prompts]
    SAMPLES.mkdir(parents=True, exist_ok=True)
    for fmt, temp in configs:
        path = SAMPLES / f"{fmt}_t{temp}.jsonl"
        done = {json.loads(l)["row"] for l in path.read_text().splitlines()} if path.exists() else set()
        todo = [r for r in rows if r not in done]
        if not todo: continue
        data = load_math_file(DATA, format=fmt)
        ctranslate2.set_random_seed(seed * 100_000 + todo[0])  # before the load: its threads seed themselves as they start
        gen = ctranslate2.Generator(str(folder), device="cpu", compute_type="int8", intra_threads=threads)
        for s in range(0, len(todo), per_call):
            chunk = todo[s:s + per_call]
            exs = [data[r] for r in chunk]
            starts = [tok.convert_ids_to_tokens(tok(tok.apply_chat_template(ex["prompt"], tokenize=False, add_generation_prompt=True),
                                                    add_special_tokens=False)["input_ids"]) for ex in exs]
            load0, t0, c0 = os.getloadavg()[0], time.perf_counter(), time.process_time()
            res = gen.generate_batch([st for st in starts for _ in range(n_gen)], max_length=max_tokens, include_prompt_in_result=False,
                                     end_token=eos, return_end_token=True, sampling_topk=0, sampling_temperature=temp, sampling_topp=1.0)
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
            ids = [r.sequences_ids[0] for r in res]
            steps = max(len(i) for i in ids)
            for k, (row, ex) in enumerate(zip(chunk, exs)):
                group = ids[k * n_gen:(k + 1) * n_gen]
                rec = record(group, set(eos), ex, fmt, temp, row, n_gen, max_tokens, seconds / len(chunk), cpu / len(chunk),
                             steps, load0, tok)
                with path.open("a") as f: f.write(json.dumps(rec) + "\n")
                print(f"{fmt} t={temp} row {row}: correct@{BUDGETS[-1]} {sum(c[str(BUDGETS[-1])]['correct'] for c in rec['completions'])}/{n_gen}, "
                      f"cut@{BUDGETS[0]} {sum(c[str(BUDGETS[0])]['truncated'] for c in rec['completions'])}", flush=True)
            print(f"  {len(chunk)} groups in {seconds:.0f} s ({sum(map(len, ids)) / seconds:.1f} tokens/s), load {load0:.1f}", flush=True)
            summarize()
        del gen


def generate(configs: list[tuple[str, float]], n_prompts: int, n_gen: int, max_tokens: int, seed: int):
    import torch
    from oneshot_reason.models import load_policy
    from oneshot_reason.data import load_math_file
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    model, tok = load_policy(MODEL)  # dtype 'auto': what a LoRA run uses on this machine
    model.eval()
    gen_eos = getattr(model.generation_config, "eos_token_id", None)
    eos = {tok.eos_token_id, *(gen_eos if isinstance(gen_eos, list) else [gen_eos])} - {None}
    rows = prompt_rows(seed=seed)[:n_prompts]
    datasets = {}
    SAMPLES.mkdir(parents=True, exist_ok=True)
    for k, row in enumerate(rows):  # prompt-major, so every config grows together
        for fmt, temp in configs:
            path = SAMPLES / f"{fmt}_t{temp}.jsonl"
            done = {json.loads(l)["row"] for l in path.read_text().splitlines()} if path.exists() else set()
            if row in done: continue
            if fmt not in datasets: datasets[fmt] = load_math_file(DATA, format=fmt)
            ex = datasets[fmt][row]
            text = tok.apply_chat_template(ex["prompt"], tokenize=False, add_generation_prompt=True)
            enc = tok([text], return_tensors="pt", add_special_tokens=False)
            torch.manual_seed(seed * 100_000 + row)
            load0, t0, c0 = os.getloadavg()[0], time.perf_counter(), time.process_time()
            with torch.no_grad():
                gen = model.generate(**enc, max_new_tokens=max_tokens, do_sample=True, temperature=temp, top_p=1.0,
                                     top_k=0, num_return_sequences=n_gen, pad_token_id=tok.pad_token_id,
                                     eos_token_id=sorted(eos))
            seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
            new = gen[:, enc["input_ids"].shape[1]:].tolist()
            rec = record(new, eos, ex, fmt, temp, row, n_gen, max_tokens, seconds, cpu, len(new[0]), load0, tok)
            comps = rec["completions"]
            with path.open("a") as f: f.write(json.dumps(rec) + "\n")
            print(f"{k + 1}/{len(rows)} {fmt} t={temp} row {row}: {seconds:.0f} s, load {load0:.1f}, correct@{BUDGETS[-1]} "
                  f"{sum(c[str(BUDGETS[-1])]['correct'] for c in comps)}/{n_gen}, cut@{BUDGETS[0]} {sum(c[str(BUDGETS[0])]['truncated'] for c in comps)}",
                  flush=True)
            summarize()


def summarize() -> dict:
    "Per candidate (format, temperature, budget, group size, reward stack): the shares the report reads."
    groups = []
    for path in sorted(SAMPLES.glob("*.jsonl")):
        groups += [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
    cands = []
    keys = sorted({(g["format"], g["temperature"]) for g in groups})
    for fmt, temp in keys:
        gs = [g for g in groups if (g["format"], g["temperature"]) == (fmt, temp)]
        presets = list(gs[0]["completions"][0][str(BUDGETS[-1])]["rewards"])
        for b in BUDGETS:
            for n in GROUPS:
                if n > min(g["n_gen"] for g in gs): continue
                # a group of 16 holds two independent groups of 8: every disjoint slice counts as a group
                pairs = [(g, [c[str(b)] for c in g["completions"][j:j + n]]) for g in gs for j in range(0, g["n_gen"] - n + 1, n)]
                gs_n, cs = [g for g, _ in pairs], [grp for _, grp in pairs]
                flat = [c for grp in cs for c in grp]
                corr_signal = sum(len({c["correct"] for c in grp}) > 1 for grp in cs)
                # time: what generating this group alone costs, scaled from the measured 16 x 256 generation by the
                # decoding steps it needs (the longest completion, +1 for its end token) and the group size
                secs = [g["seconds"] * (n / g["n_gen"]) * min(b, max(c["tokens"] + 1 for c in grp)) / g["generate_steps"]
                        for g, grp in zip(gs_n, cs)]
                base = {"format": fmt, "temperature": temp, "max_tokens": b, "n_gen": n, "n_groups": len(cs),
                        "share_cut": round(sum(c["truncated"] for c in flat) / len(flat), 3),
                        "correct_rate": round(sum(c["correct"] for c in flat) / len(flat), 4),
                        "format_rate": round(sum(c["formatted"] for c in flat) / len(flat), 3),
                        "share_groups_correctness_signal": round(corr_signal / len(cs), 3),
                        "seconds_per_group_est": round(sum(secs) / len(secs), 1)}
                for p in presets:
                    sig = [len({round(c["rewards"][p], 6) for c in grp}) > 1 for grp in cs]
                    mean = sum(c["rewards"][p] for c in flat) / len(flat)
                    cands.append({**base, "reward_preset": p, "share_groups_signal": round(sum(sig) / len(sig), 3),
                                  "share_signal_format_only": round(sum(s and len({c["correct"] for c in grp}) == 1
                                                                        for s, grp in zip(sig, cs)) / len(cs), 3),
                                  "mean_reward": round(mean, 4)})
    timing = [{"format": g["format"], "temperature": g["temperature"], "row": g["row"], "seconds": g["seconds"],
               "cpu_seconds": g["cpu_seconds"], "generate_steps": g["generate_steps"], "load": g["load"]} for g in groups]
    engines = sorted({g.get("engine", "torch") for g in groups})
    res = {"what": __doc__.splitlines()[0], "model": MODEL, "engine": engines, "data": "gsm8k/train.jsonl",
           "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared), torch threads = OMP_NUM_THREADS",
           "signal": "total rewards of the group not all equal", "correctness_signal": "check_answer right for some, "
           "wrong for others (truncated completions graded as cut)", "seconds_per_group_est": "the measured 16 x 256 "
           "generation scaled by group size and decoding steps; measured times are in 'generations'",
           "candidates": cands, "generations": timing}
    tmp = OUT.with_suffix(".tmp")
    tmp.write_text(json.dumps(res, indent=1) + "\n"); tmp.replace(OUT)
    return res


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--configs", nargs="*", default=["hash:0.7", "hash:1.0", "xml:0.7", "boxed:0.7", "xml:1.0", "boxed:1.0"],
                   help="format:temperature pairs to sample")
    p.add_argument("--n-prompts", type=int, default=12)
    p.add_argument("--n-gen", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--summary-only", action="store_true")
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--engine", default="torch", choices=["torch", "ctranslate2"])
    p.add_argument("--budgets", type=int, nargs="*", help="completion budgets read from the samples (default 160 256); the largest is sampled")
    p.add_argument("--prompts-per-call", type=int, default=4, help="ctranslate2: prompts per batch (each with --n-gen completions)")
    a = p.parse_args()
    use_model(a.model, a.engine, a.budgets)
    max_tokens = max(BUDGETS) if a.budgets else a.max_tokens
    if not a.summary_only:
        cfgs = [(c.split(":")[0], float(c.split(":")[1])) for c in a.configs]
        if a.engine == "ctranslate2": generate_ct2(cfgs, a.n_prompts, a.n_gen, max_tokens, a.seed, a.prompts_per_call)
        else: generate(cfgs, a.n_prompts, a.n_gen, max_tokens, a.seed)
    res = summarize()
    print(f"{'fmt':>5} {'T':>4} {'tok':>4} {'n':>3} {'preset':>16} {'signal':>6} {'corrsig':>7} {'fmtonly':>7} "
          f"{'cut':>5} {'correct':>7} {'format':>6} {'s/grp':>6} {'groups':>6}")
    for c in res["candidates"]:
        print(f"{c['format']:>5} {c['temperature']:>4} {c['max_tokens']:>4} {c['n_gen']:>3} {c['reward_preset']:>16} "
              f"{c['share_groups_signal']:>6} {c['share_groups_correctness_signal']:>7} {c['share_signal_format_only']:>7} "
              f"{c['share_cut']:>5} {c['correct_rate']:>7} {c['format_rate']:>6} {c['seconds_per_group_est']:>6} {c['n_groups']:>6}")


if __name__ == "__main__":
    main()
