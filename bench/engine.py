"""Inference engines side by side on Qwen2.5-Coder-0.5B-Instruct: speed, and how far their answers agree.

    python bench/engine.py --speed [--problems 32] [--max-new-tokens 256] [--batches 1 8 32]
    python bench/engine.py --agreement [--n 104] [--scores 32]
    python bench/engine.py --rollout [--prompts 4] [--group 8] [--max-new-tokens 384]

`--speed`: greedy completions of the first GSM8K test problems in the `boxed` format (the package's chat prompts),
through every engine in one process, the engines' order rotated at each batch size so that a change in the machine's
load falls on all of them: transformers' `generate` and the package's own loop (`fast_generate`), both in the dtype
`auto` gives on this CPU (bfloat16 where it computes it natively, else float32) and in float32, and CTranslate2 in
int8 and float32. New tokens per second of generation (each completion counted up to its end token), the load
average before and after, and per batch size the ratio of CTranslate2 int8 to the fastest torch path.

`--agreement`: the first `--n` problems with 512 new tokens, greedy, evaluated by `evaluate` with torch in float32
(the reference) and with CTranslate2 in int8 and in float32: strict and lenient accuracy of each, the share of
problems with the same final answer and the same text, and the change in accuracy with a 95% paired bootstrap
interval; then, on the reference's first `--scores` completions, the per-token log-probabilities that CTranslate2
int8 gives the same tokens (`score_batch`) against torch float32's.

`--rollout`: what CTranslate2 would cost as the rollout engine of a LoRA run, per step: the rollout shape (GSM8K
training prompts x a group of completions, temperature 0.7) sampled by the package's loop in the `auto` dtype (what
the trainer samples with) and by CTranslate2 int8, and the price of handing it the policy every step: the LoRA
adapters merged into a copy of the model, saved, converted and loaded (`models.ctranslate2_folder` on an adapter
folder, then `ctranslate2.Generator`), timed on adapters with random weights.

Results go to `bench/results/engine.json` (each part under its own key, rewritten as it finishes).
"""
import argparse, json, os, platform, sys, time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_model import paired_bootstrap

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "engine.json"
MODEL = "qwen2.5-coder-0.5b"


def save(key: str, value) -> None:
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    results[key] = value
    OUT.write_text(json.dumps(results, indent=1) + "\n")


def machine() -> dict:
    import ctranslate2, torch
    from oneshot_reason.core import cpu_has_bf16
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return {"cpu": next((l.split(":", 1)[1].strip() for l in flags.splitlines() if l.startswith("model name")), platform.machine()),
            "cores": os.cpu_count(), "avx512_bf16": "avx512_bf16" in flags, "avx512_vnni": "avx512_vnni" in flags,
            "native_bfloat16": cpu_has_bf16(), "threads": torch.get_num_threads(), "torch": torch.__version__,
            "ctranslate2": ctranslate2.__version__}


def prompts(data_dir: Path, n: int) -> list:
    from oneshot_reason.data import load_math_file
    return list(load_math_file(data_dir / "gsm8k" / "test.jsonl", format="boxed", limit=n)["prompt"])


def speed(a) -> None:
    "New tokens per second of every engine at each batch size, the engines' order rotated."
    import torch
    from oneshot_reason.inference import generate_completions
    from oneshot_reason.models import load_policy
    auto, tok = load_policy(MODEL) # the dtype `auto` gives here
    f32, _ = load_policy(MODEL, dtype="float32")
    auto_name = str(auto.dtype).removeprefix("torch.")
    engines = {f"torch generate {auto_name}": lambda ps, b: generate_completions(auto, tok, ps, batch_size=b, max_new_tokens=a.max_new_tokens, fast=False, details=True, progress=False),
               f"torch fast_generate {auto_name}": lambda ps, b: generate_completions(auto, tok, ps, batch_size=b, max_new_tokens=a.max_new_tokens, fast=True, details=True, progress=False),
               "torch fast_generate float32": lambda ps, b: generate_completions(f32, tok, ps, batch_size=b, max_new_tokens=a.max_new_tokens, fast=True, details=True, progress=False),
               "ctranslate2 int8": lambda ps, b: generate_completions(MODEL, None, ps, batch_size=b, max_new_tokens=a.max_new_tokens, engine="ctranslate2", compute_type="int8", details=True, progress=False),
               "ctranslate2 float32": lambda ps, b: generate_completions(MODEL, None, ps, batch_size=b, max_new_tokens=a.max_new_tokens, engine="ctranslate2", compute_type="float32", details=True, progress=False)}
    if auto_name == "float32": engines.pop("torch fast_generate float32")
    names = list(engines)
    rows = []
    engines["ctranslate2 int8"](prompts(Path(a.data_dir), 1), 1); engines["ctranslate2 float32"](prompts(Path(a.data_dir), 1), 1) # converted and loaded before timing
    for k, b in enumerate(a.batches):
        ps = prompts(Path(a.data_dir), max(a.problems if b > 1 else a.problems_batch1, b))
        order = names[k % len(names):] + names[:k % len(names)]
        for name in order:
            load0, start = os.getloadavg()[0], time.perf_counter()
            g = engines[name](ps, b)
            rows.append({"engine": name, "batch": b, "problems": len(ps), "new_tokens": g.new_tokens,
                         "seconds": round(g.seconds, 2), "tokens_per_second": round(g.tokens_per_second, 2),
                         "wall_seconds": round(time.perf_counter() - start, 2), "load_before": round(load0, 2),
                         "load_after": round(os.getloadavg()[0], 2)})
            print(f"batch {b:>2} {name:<32} {g.tokens_per_second:7.1f} tokens/s ({g.new_tokens} tokens, load {load0:.1f})", flush=True)
    ratios = {}
    for b in a.batches:
        at = {r["engine"]: r["tokens_per_second"] for r in rows if r["batch"] == b}
        fastest = max((v, n) for n, v in at.items() if n.startswith("torch"))
        ratios[str(b)] = {"fastest_torch": fastest[1], "ctranslate2_int8_over_fastest_torch": round(at["ctranslate2 int8"] / fastest[0], 2),
                          "ctranslate2_int8_over_torch_float32": round(at["ctranslate2 int8"] / at.get("torch fast_generate float32", at[f"torch fast_generate {auto_name}"]), 2)}
    save("speed", {"what": "new tokens/s of greedy generation, GSM8K test problems, boxed chat prompts", "max_new_tokens": a.max_new_tokens,
                   "machine": machine(), "rows": rows, "ratios": ratios, "command": " ".join(sys.argv)})
    print(json.dumps(ratios, indent=1))


def agreement(a) -> None:
    "Accuracy and answer agreement of CTranslate2 (int8, float32) against torch float32 on the same problems, and the log-prob gap."
    import numpy as np, torch
    from oneshot_reason.evaluate import answer_key, evaluate
    data = str(Path(a.data_dir) / "gsm8k" / "test.jsonl")
    runs = {}
    for name, engine, dtype in (("torch float32", "torch", "float32"), ("ctranslate2 int8", "ctranslate2", "int8"),
                                ("ctranslate2 float32", "ctranslate2", "float32")):
        start = time.perf_counter()
        r = evaluate(MODEL, "gsm8k", data_path=data, limit=a.n, format="boxed", max_new_tokens=512, batch_size=32,
                     engine=engine, dtype=dtype, progress=False)
        runs[name] = r
        print(f"{name}: strict {r.metrics['strict_pass@1']:.3f}, lenient {r.metrics['pass@1']:.3f}, {r.tokens_per_second:.1f} tokens/s, "
              f"{time.perf_counter() - start:.0f} s", flush=True)
    ref = runs["torch float32"]
    out = {"n": a.n, "max_new_tokens": 512, "batch_size": 32, "machine": machine(), "engines": {}}
    for name, r in runs.items():
        row = {"strict": r.metrics["strict_pass@1"], "lenient": r.metrics["pass@1"], "truncated": r.n_truncated,
               "tokens_per_second": round(r.tokens_per_second, 1), "new_tokens": r.new_tokens,
               "verdicts_strict": "".join("1" if x["strict"][0] else "0" for x in r.records),
               "verdicts_lenient": "".join("1" if x["correct"][0] else "0" for x in r.records)}
        if r is not ref:
            row["same_final_answer"] = round(np.mean([answer_key(x["answers"][0]) == answer_key(y["answers"][0]) for x, y in zip(r.records, ref.records)]), 4)
            row["same_text"] = round(np.mean([x["completions"][0] == y["completions"][0] for x, y in zip(r.records, ref.records)]), 4)
            for kind, key in (("strict", "strict"), ("lenient", "correct")):
                row[f"{kind}_change_vs_torch_float32"] = [round(v, 4) for v in paired_bootstrap([x[key][0] for x in ref.records], [x[key][0] for x in r.records])]
        out["engines"][name] = row
    out["logprob_gap"] = logprob_gap(ref, a.scores)
    save("agreement", out)
    print(json.dumps({k: {kk: vv for kk, vv in v.items() if not kk.startswith("verdicts")} for k, v in out["engines"].items()}, indent=1))
    print(json.dumps(out["logprob_gap"], indent=1))


def logprob_gap(ref, n: int) -> dict:
    "Per-token log-probabilities of the reference's first `n` completions: CTranslate2 int8 `score_batch` against torch float32."
    import ctranslate2, numpy as np, torch
    from oneshot_reason.inference import render_prompt
    from oneshot_reason.models import load_policy, ctranslate2_folder
    model, tok = load_policy(MODEL, dtype="float32")
    folder = ctranslate2_folder(MODEL)
    ct2 = ctranslate2.Generator(str(folder), compute_type="int8", intra_threads=torch.get_num_threads())
    gaps, firsts = [], []
    for rec in ref.records[:n]:
        prompt = tok(rec["prompt"], add_special_tokens=False)["input_ids"]
        completion = tok(rec["completions"][0], add_special_tokens=False)["input_ids"]
        ids = prompt + completion
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, len(prompt) - 1:-1].float()
        torch_lp = torch.log_softmax(logits, -1).gather(1, torch.tensor(completion)[:, None])[:, 0].numpy()
        scored = ct2.score_batch([tok.convert_ids_to_tokens(ids)])[0].log_probs # log-prob of each token after the first
        ct2_lp = np.array(scored[len(prompt) - 1:])
        gaps.append(ct2_lp - torch_lp)
    d = np.concatenate(gaps)
    return {"completions": len(gaps), "tokens": int(d.size), "mean_difference": round(float(d.mean()), 4),
            "mean_abs_difference": round(float(np.abs(d).mean()), 4), "p99_abs": round(float(np.percentile(np.abs(d), 99)), 4),
            "max_abs": round(float(np.abs(d).max()), 4),
            "per_completion_sum_mean": round(float(np.mean([g.sum() for g in gaps])), 4),
            "what": "CTranslate2 int8 log-prob minus torch float32 log-prob of the same completion tokens"}


def rollout(a) -> None:
    "One GRPO rollout by each engine, and the cost of refreshing CTranslate2's copy of a LoRA policy."
    import ctranslate2, shutil, tempfile, torch
    from oneshot_reason.data import load_math_file
    from oneshot_reason.inference import generate_completions
    from oneshot_reason.models import load_policy, ctranslate2_folder, save_policy
    train = load_math_file(Path(a.data_dir) / "gsm8k" / "train.jsonl", format="boxed", limit=a.prompts)
    ps = list(train["prompt"])
    policy, tok = load_policy(MODEL, lora=16)
    for n, p_ in policy.named_parameters(): # adapters as after some training: the merged weights differ from the base
        if "lora_B" in n: torch.nn.init.normal_(p_, std=1e-3)
    rows, load0 = {}, os.getloadavg()[0]
    for name in ("ctranslate2 int8", "torch fast_generate"):
        start = time.perf_counter()
        if name == "torch fast_generate":
            g = generate_completions(policy, tok, ps, n_samples=a.group, temperature=0.7, max_new_tokens=a.max_new_tokens,
                                     batch_size=a.prompts * a.group, fast=True, details=True, progress=False)
        else:
            g = generate_completions(MODEL, None, ps, n_samples=a.group, temperature=0.7, max_new_tokens=a.max_new_tokens,
                                     batch_size=a.prompts * a.group, engine="ctranslate2", details=True, progress=False)
        rows[name] = {"new_tokens": g.new_tokens, "seconds": round(g.seconds, 1), "tokens_per_second": round(g.tokens_per_second, 1),
                      "wall_seconds": round(time.perf_counter() - start, 1)}
        print(name, rows[name], flush=True)
    work = Path(tempfile.mkdtemp(prefix="rollout-engine-"))
    try:
        start = time.perf_counter(); save_policy(policy, tok, work / "adapter"); saved = time.perf_counter() - start
        start = time.perf_counter(); folder = ctranslate2_folder(work / "adapter", cache_dir=work / "cache"); converted = time.perf_counter() - start
        start = time.perf_counter(); ctranslate2.Generator(str(folder), compute_type="int8", intra_threads=torch.get_num_threads()); loaded = time.perf_counter() - start
    finally: shutil.rmtree(work, ignore_errors=True)
    refresh = {"save_adapter_seconds": round(saved, 1), "merge_save_convert_seconds": round(converted, 1), "load_int8_seconds": round(loaded, 1)}
    per_step = refresh["save_adapter_seconds"] + refresh["merge_save_convert_seconds"] + refresh["load_int8_seconds"]
    saved_time = rows["torch fast_generate"]["seconds"] - rows["ctranslate2 int8"]["seconds"]
    save("rollout", {"shape": f"{a.prompts} prompts x {a.group} completions x {a.max_new_tokens} tokens, temperature 0.7",
                     "policy_dtype": str(policy.dtype).removeprefix("torch."), "machine": machine(), "load_before": round(load0, 2),
                     "engines": rows, "refresh": refresh, "refresh_seconds_per_step": round(per_step, 1),
                     "generation_seconds_saved_per_step": round(saved_time, 1), "pays": saved_time > per_step})
    print(refresh, "saved", round(saved_time, 1), "s a step against", round(per_step, 1), "s to refresh", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--speed", action="store_true")
    p.add_argument("--agreement", action="store_true")
    p.add_argument("--rollout", action="store_true")
    p.add_argument("--prompts", type=int, default=4, help="--rollout: prompts a step")
    p.add_argument("--group", type=int, default=8, help="--rollout: completions a prompt")
    p.add_argument("--data-dir", default=os.environ.get("ONESHOT_DATA_DIR", str(ROOT.parent / "shared" / "data")))
    p.add_argument("--problems", type=int, default=32, help="problems at batch sizes above 1")
    p.add_argument("--problems-batch1", type=int, default=4, help="problems at batch size 1")
    p.add_argument("--max-new-tokens", type=int, default=256)
    p.add_argument("--batches", type=int, nargs="*", default=[1, 8, 32])
    p.add_argument("--n", type=int, default=104, help="problems for --agreement")
    p.add_argument("--scores", type=int, default=32, help="completions whose log-probs --agreement compares")
    a = p.parse_args()
    if a.speed: speed(a)
    if a.agreement: agreement(a)
    if a.rollout: rollout(a)


if __name__ == "__main__": main()
