"""LUFFY's premise at CPU scale: plain GRPO vs LUFFY from a weak `tiny` checkpoint, held-out accuracy over steps.

    python bench/luffy_vs_grpo.py [--seeds 0 1 2] [--steps 120] [--eval-every 20] [--lr 1e-4] [--parallel 2]

The weak checkpoint is the embedded model's recipe with more hasty solutions: `build_tiny_model(seed=0, steps=1000,
hasty=0.9)`, 90% of its warm-start solutions stop one arithmetic step short. It follows the xml format, but on
problems that need two steps it nearly always stops after the first, so its own samples rarely earn a reward there.
It is built once and cached under outputs/luffy_vs_grpo/. From it, for each seed, plain GRPO (`algo="grpo"`) and
LUFFY (`algo="luffy"`, the synthetic problems' worked solutions in the `demonstration` column as the off-policy
traces) train on two-step synthetic problems for the same steps, with the same batch shape (the `cpu-demo` preset:
8 prompts x G=8 completions per step), the same constant learning rate, the same data order and the same reward
(correctness only: 1 when the `<answer>` equals the reference). Every --eval-every steps a callback measures greedy
accuracy on the same held-out two-step problems, plus the share of greedy completions that write every step and the
share that start from the question's first number. Runs go to `--parallel` processes of one thread each.

Writes bench/results/luffy_vs_grpo.json (settings, the weak checkpoint's numbers, per method and seed the
(step, accuracy) curve, the (step, all_steps, first_number) curve, per-step training statistics and wall times),
prints a side-by-side table and, last, one JSON line with the final means.
"""
import argparse, json, re, shutil, statistics, time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METHODS = ("grpo", "luffy")

def problems(n: int, seed: int, split: str, steps: int):
    "`n` synthetic xml problems of `split` needing `steps` arithmetic steps (0: any number)."
    from oneshot_reason.data import synthetic_problems
    if not steps: return synthetic_problems(n, seed=seed, split=split, format="xml")
    pool = synthetic_problems(4 * n, seed=seed, split=split, format="xml").filter(lambda r: r["steps"] == steps)
    if len(pool) < n: raise SystemExit(f"only {len(pool)} {split} problems with {steps} steps; ask for fewer")
    return pool.select(range(n))

def held_out(n: int, steps: int):
    return problems(n, 0, "test", steps) # the same problems for every run

def greedy_eval(model, tokenizer, dataset) -> dict:
    """Greedy held-out completions (as `quick_eval` decodes them): accuracy, the share that write every arithmetic step
    the problem needs (at least `steps` '=' signs: the demonstrations always do), and the share that start from the
    question's first number."""
    import torch
    from oneshot_reason.models import final_answer
    model.eval(); texts = []
    prompts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in dataset["prompt"]]
    with torch.no_grad():
        for i in range(0, len(prompts), 128):
            enc = tokenizer(prompts[i:i + 128], return_tensors="pt", padding=True, add_special_tokens=False)
            out = model.generate(**enc, max_new_tokens=64, do_sample=False, pad_token_id=tokenizer.pad_token_id,
                                 eos_token_id=tokenizer.eos_token_id)
            texts += tokenizer.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
    right = [final_answer(t, "xml") == str(a).strip() for t, a in zip(texts, dataset["answer"])]
    steps = [t.split("</reasoning>")[0].count("=") >= n for t, n in zip(texts, dataset["steps"])]
    first = [re.search(r"\d+", q).group() for q in dataset["question"]]
    copied = [(m := re.search(r"\d+", t)) is not None and m.group() == f for t, f in zip(texts, first)]
    mean = lambda xs: round(sum(xs) / len(xs), 4)
    return {"accuracy": mean(right), "all_steps": mean(steps), "first_number": mean(copied)}

def weak_checkpoint(args) -> tuple[Path, dict]:
    "Build (or reuse) the weak checkpoint; returns its folder and its info (build time, held-out accuracy)."
    import torch
    from oneshot_reason.models import build_tiny_model, save_policy, load_policy, quick_eval
    torch.set_num_threads(max(1, args.parallel))
    folder = ROOT / "outputs" / "luffy_vs_grpo" / f"weak-steps{args.weak_steps}-hasty{args.hasty}"
    build_file = folder / "build.json"
    if not build_file.exists():
        start = time.time()
        model, tokenizer = build_tiny_model(seed=0, steps=args.weak_steps, hasty=args.hasty)
        save_policy(model, tokenizer, folder)
        build_file.write_text(json.dumps({"build_steps": args.weak_steps, "hasty": args.hasty,
                                          "build_seconds": round(time.time() - start, 1), "threads": max(1, args.parallel)}))
    info_file = folder / f"heldout-steps{args.problem_steps}-n{args.n_eval}.json"
    if not info_file.exists():
        model, tokenizer = load_policy(folder, device="cpu")
        heldout = held_out(args.n_eval, args.problem_steps)
        sampled = quick_eval(model, tokenizer, heldout, format="xml", num_samples=8, temperature=1.0, max_new_tokens=64)
        info_file.write_text(json.dumps({
            **{f"greedy_{k}": v for k, v in greedy_eval(model, tokenizer, heldout).items()},
            "sampled_accuracy_t1": float(sampled.mean()), # one completion at temperature 1, as GRPO samples
            "any_of_8_t1": float(sampled.any(1).mean())})) # share of problems where a group of 8 has a right answer
    return folder, {**json.loads(build_file.read_text()), **json.loads(info_file.read_text())}

def train_one(job: dict) -> dict:
    "One training run in its own process: returns its accuracy curve, its per-step training reward and its wall time."
    import torch
    torch.set_num_threads(job["threads"])
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from oneshot_reason.models import load_policy
    from oneshot_reason.rewards import RewardStack, oneshot_correctness
    from oneshot_reason.trainer import OneShotTrainer, config_preset
    method, seed, start = job["method"], job["seed"], time.time()
    model, tokenizer = load_policy(job["checkpoint"], device="cpu")
    heldout = held_out(job["n_eval"], job["problem_steps"])
    train = problems(job["n_train"], seed, "train", job["problem_steps"]) # has `demonstration`
    out = ROOT / "outputs" / "luffy_vs_grpo" / f"{method}-seed{seed}"
    shutil.rmtree(out, ignore_errors=True) # completions.jsonl of this run only
    extra = dict(entropy_coef=0.001) if method == "luffy" else {} # LUFFY's released entropy bonus
    config = config_preset("cpu-demo", algo=method, output_dir=str(out), seed=seed, data_seed=seed, max_steps=job["steps"],
                           learning_rate=job["lr"], logging_steps=1, report_to=[], save_strategy="no",
                           save_final_model=False, **extra)
    curve, extra_curves = [[0, job["at_0"]["greedy_accuracy"]]], [[0, job["at_0"]["greedy_all_steps"], job["at_0"]["greedy_first_number"]]]
    class HeldOut(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            if state.global_step % job["eval_every"] == 0 or state.global_step == state.max_steps:
                ev = greedy_eval(model, tokenizer, heldout)
                curve.append([state.global_step, ev["accuracy"]])
                extra_curves.append([state.global_step, ev["all_steps"], ev["first_number"]])
                model.train()
                print(f"{method} seed {seed} step {state.global_step}: held-out {curve[-1][1]:.3f} "
                      f"({time.time() - start:.0f}s)", flush=True)
    reward = RewardStack([oneshot_correctness], [1.0], "correctness")
    trainer = OneShotTrainer(model, reward, args=config, train_dataset=train, processing_class=tokenizer, callbacks=[HeldOut()])
    for cb in (PrinterCallback, ProgressCallback): trainer.remove_callback(cb)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "reward" in h]
    key = "luffy/on_policy_reward" if method == "luffy" else "reward" # the policy's own samples
    return {"method": method, "seed": seed, "curve": curve, "all_steps_first_number": extra_curves, "wall_seconds": round(time.time() - start, 1),
            "on_policy_reward": [round(h.get(key, float("nan")), 4) for h in logs],
            "only_demo_rewarded": [round(h["luffy/only_demo_rewarded"], 4) for h in logs] if method == "luffy" else None,
            "demo_token_prob": [round(h["luffy/off_policy_prob"], 4) for h in logs] if method == "luffy" else None}

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--steps", type=int, default=120, help="training steps of every run")
    p.add_argument("--eval-every", type=int, default=20, help="held-out evaluation every this many steps")
    p.add_argument("--lr", type=float, default=1e-4, help="learning rate of both methods (constant)")
    p.add_argument("--weak-steps", type=int, default=1000, help="warm-start steps of the weak checkpoint")
    p.add_argument("--hasty", type=float, default=0.9, help="share of hasty warm-start solutions (build_tiny_model)")
    p.add_argument("--problem-steps", type=int, default=2, help="train and evaluate on problems of this many steps (0: all)")
    p.add_argument("--n-train", type=int, default=2000, help="synthetic training problems per seed")
    p.add_argument("--n-eval", type=int, default=100, help="held-out problems (greedy)")
    p.add_argument("--parallel", type=int, default=2, help="runs at once, one process and one thread each")
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "luffy_vs_grpo.json")
    args = p.parse_args()
    start = time.time()
    folder, weak = weak_checkpoint(args)
    print(f"weak checkpoint {folder.relative_to(ROOT)}: {json.dumps(weak)}", flush=True)
    jobs = [dict(method=m, seed=s, checkpoint=str(folder), steps=args.steps, eval_every=args.eval_every, lr=args.lr,
                 n_train=args.n_train, n_eval=args.n_eval, problem_steps=args.problem_steps, threads=1, at_0=weak)
            for s in args.seeds for m in args.methods]
    with ProcessPoolExecutor(args.parallel, mp_context=get_context("spawn")) as pool:
        runs = list(pool.map(train_one, jobs))
    final = {m: [r["curve"][-1][1] for r in runs if r["method"] == m] for m in args.methods}
    result = {"settings": {"steps": args.steps, "eval_every": args.eval_every, "learning_rate": args.lr,
                           "lr_schedule": "constant", "prompts_per_step": 8, "num_generations": 8, "temperature": 1.0,
                           "max_completion_length": 64, "beta": 0.0, "reward": "oneshot_correctness (1 if <answer> is right)",
                           "format": "xml", "problem_steps": args.problem_steps, "n_train": args.n_train, "n_eval": args.n_eval, "eval": "greedy, 64 new tokens",
                           "seeds": args.seeds, "luffy": "entropy_coef 0.001, gamma 0.1, no std scaling, no clipping",
                           "grpo": "TRL defaults (std-scaled group advantages, clip 0.2, loss dapo)",
                           "threads_per_run": 1, "parallel_runs": args.parallel},
              "weak_checkpoint": weak, "runs": runs,
              "final_mean": {m: statistics.mean(v) for m, v in final.items()},
              "final_mean_all_steps": {m: statistics.mean(r["all_steps_first_number"][-1][1] for r in runs if r["method"] == m)
                                       for m in args.methods},
              "total_wall_seconds": round(time.time() - start, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    steps = [s for s, _ in runs[0]["curve"]]
    head = "  ".join(f"{m}/s{s}" for m in args.methods for s in args.seeds)
    print(f"{'step':>5}  {head}  " + "  ".join(f"{m + ' mean':>10}" for m in args.methods))
    for i, step in enumerate(steps):
        vals = {m: [r["curve"][i][1] for s in args.seeds for r in runs if r["method"] == m and r["seed"] == s] for m in args.methods}
        cells = "  ".join(f"{v:>{len(m) + 3 + len(str(s))}.2f}" for m in args.methods for s, v in zip(args.seeds, vals[m]))
        print(f"{step:>5}  {cells}  " + "  ".join(f"{statistics.mean(vals[m]):>10.3f}" for m in args.methods))
    print(f"wall: {result['total_wall_seconds']:.0f}s in all; per run " +
          ", ".join(f"{r['method']}/s{r['seed']} {r['wall_seconds']:.0f}s" for r in runs))
    print(json.dumps({"final_mean_accuracy": result["final_mean"], "start_accuracy": weak["greedy_accuracy"],
                      "final_mean_all_steps": result["final_mean_all_steps"], "start_all_steps": weak["greedy_all_steps"],
                      "steps": args.steps, "seeds": args.seeds, "total_wall_seconds": result["total_wall_seconds"]}))

if __name__ == "__main__":
    main()
