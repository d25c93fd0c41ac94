"""Dynamic sampling (DAPO) against plain GRPO where most groups carry no signal: held-out accuracy against wall time.

    python bench/dynamic_sampling.py [--out bench/results/dynamic_sampling.json] [--seeds 0 1 2] [--parallel N]
                                     [--arms grpo dynamic] [--steps-grpo N] [--steps-dynamic N] [--max-rounds N]

The setting: the embedded `tiny` model on synthetic problems that need two arithmetic steps, rewarded for the right
answer only (`oneshot_correctness`). The model stops its reasoning one step short more often than not, so few of its
samples are right (about 7% at the start) and most groups of 8 have no right completion at all: no signal (the
table gives the share among the groups generated, and among those trained on). Same model, data, batch shape (2 prompts x 8 completions of at most
64 tokens a step), learning rate and held-out problems as the `weak`/two-step side of bench/methods.py, whose helpers
this script uses:

* `grpo`: TRL's GRPO as the offline demo runs it (dynamic sampling off);
* `dynamic`: the same with `dynamic_sampling=True` (at most `--max-rounds` generation rounds a step).

Each step of `dynamic` costs more generation, so the two are compared against wall time: `grpo` runs more steps
(`--steps-grpo`) than `dynamic` (`--steps-dynamic`), and every `eval_every` steps a callback records the greedy
held-out accuracy with the training seconds so far (the evaluations' own time left out). The table gives each arm's
final accuracy (mean over seeds, 95% t-interval), and `grpo`'s accuracy at the time `dynamic` finished (its last
evaluation at or before that time, per seed) and at the same step count.

Writes bench/results/dynamic_sampling.json after every finished run (a rerun skips the runs already there). Times
are measured with `--parallel` runs at once, one thread each, under `nice`, on whatever else the machine runs: the
load average is recorded with each run, and the times compare only within one results file.
"""
import argparse, json, os, shutil, statistics, sys, time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from methods import eval_sets, greedy_accuracy, interval, problems  # the side-by-side's data, evaluation and intervals

CONFIG = dict(model="tiny", problem_steps=2, n_train=2000, n_val=64, n_eval=128, learning_rate=6e-5, prompts_per_step=2,
              num_generations=8, max_completion_length=64, eval_every=10)

def train_one(job: dict) -> dict:
    "One run in its own process: held-out accuracy against training seconds, and the dynamic-sampling metrics per step."
    import torch
    torch.set_num_threads(1)
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from oneshot_reason.models import load_policy
    from oneshot_reason.rewards import RewardStack, oneshot_correctness
    from oneshot_reason.trainer import OneShotTrainer
    from oneshot_reason.config import config_preset
    cfg, arm, seed, steps = job["cfg"], job["arm"], job["seed"], job["steps"]
    load_before = os.getloadavg()[0]
    start, eval_seconds = time.time(), [0.0]
    model, tokenizer = load_policy(cfg["model"], device="cpu")
    _, held = eval_sets(cfg, cfg)
    train = problems(cfg["n_train"], seed, "train", cfg["problem_steps"])
    out = ROOT / "outputs" / "dynamic_sampling" / f"{arm}-seed{seed}"
    shutil.rmtree(out, ignore_errors=True)
    G = cfg["num_generations"]
    config = config_preset("cpu-demo", output_dir=str(out), seed=seed, data_seed=seed, max_steps=steps,
                           learning_rate=cfg["learning_rate"], num_generations=G, per_device_train_batch_size=cfg["prompts_per_step"] * G,
                           gradient_accumulation_steps=1, max_completion_length=cfg["max_completion_length"], logging_steps=1,
                           report_to=[], save_strategy="no", save_final_model=False, log_completions_jsonl=False,
                           dynamic_sampling=arm == "dynamic", dynamic_sampling_max_rounds=cfg["max_rounds"])
    curve = [[0, 0.0, job["at_0"]]]
    train_start = [None]
    class Evaluate(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs): train_start[0] = time.time()
        def on_step_end(self, args, state, control, model=None, **kwargs):
            if state.global_step % cfg["eval_every"] and state.global_step != state.max_steps: return
            t = time.time()
            curve.append([state.global_step, round(t - train_start[0] - eval_seconds[0], 2), greedy_accuracy(model, tokenizer, held)])
            model.train(); eval_seconds[0] += time.time() - t
            print(f"{arm} seed {seed} step {state.global_step}: held-out {curve[-1][2]:.3f} after {curve[-1][1]:.0f} s of training", flush=True)
    reward = RewardStack([oneshot_correctness], [1.0], "correctness")
    trainer = OneShotTrainer(model, reward, args=config, train_dataset=train, processing_class=tokenizer, callbacks=[Evaluate()])
    for cb in (PrinterCallback, ProgressCallback): trainer.remove_callback(cb)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "reward" in h]
    pick = lambda key: [round(h[key], 4) if h.get(key) is not None else None for h in logs]
    return {"arm": arm, "seed": seed, "steps": steps, "heldout_curve": curve, "final_heldout": curve[-1][2],
            "train_seconds": curve[-1][1], "wall_seconds": round(time.time() - start, 1),
            "seconds_per_step": round(curve[-1][1] / steps, 3), "train_reward": pick("reward"),
            "frac_reward_zero_std": pick("frac_reward_zero_std"), "rounds": pick("dynamic_sampling/rounds"),
            "no_signal_share": pick("dynamic_sampling/no_signal_share"), "filler_groups": pick("dynamic_sampling/filler_groups"),
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}

def at_time(curve: list, seconds: float) -> float:
    "The accuracy of the last evaluation at or before `seconds` of training."
    return [acc for _, t, acc in curve if t <= seconds][-1]

def at_step(curve: list, step: int) -> float:
    "The accuracy of the last evaluation at or before `step`."
    return [acc for s, _, acc in curve if s <= step][-1]

def summarise(cfg: dict, runs: list[dict]) -> list[dict]:
    "Per arm: final held-out accuracy over the seeds, time, rounds; grpo also at dynamic's time and step count."
    table, by = [], {a: sorted((r for r in runs if r["arm"] == a), key=lambda r: r["seed"]) for a in ("grpo", "dynamic")}
    for arm, done in by.items():
        if not done: continue
        mean, low, high = interval([r["final_heldout"] for r in done])
        row = {"arm": arm, "seeds": [r["seed"] for r in done], "steps": done[0]["steps"], "heldout": [r["final_heldout"] for r in done],
               "mean": round(mean, 4), "ci95_low": round(low, 4), "ci95_high": round(high, 4), "start": cfg["start"],
               "train_seconds_mean": round(statistics.mean(r["train_seconds"] for r in done), 1),
               "seconds_per_step_mean": round(statistics.mean(r["seconds_per_step"] for r in done), 2),
               "generated_no_signal_share_mean": round(statistics.mean(statistics.mean(r["frac_reward_zero_std" if arm == "grpo" else "no_signal_share"]) for r in done), 3),
               "trained_no_signal_share_mean": round(statistics.mean(statistics.mean(r["frac_reward_zero_std"]) for r in done), 3)}
        if arm == "dynamic": row["rounds_mean"] = round(statistics.mean(statistics.mean(r["rounds"]) for r in done), 2)
        table.append(row)
    if by["grpo"] and by["dynamic"]:
        pairs = [(g, d) for g in by["grpo"] for d in by["dynamic"] if g["seed"] == d["seed"]]
        for name, pick in (("grpo_at_dynamic_time", lambda g, d: at_time(g["heldout_curve"], d["train_seconds"])),
                           ("grpo_at_dynamic_steps", lambda g, d: at_step(g["heldout_curve"], d["steps"]))):
            values = [pick(g, d) for g, d in pairs]
            mean, low, high = interval(values)
            table.append({"arm": name, "seeds": [g["seed"] for g, _ in pairs], "heldout": values, "mean": round(mean, 4),
                          "ci95_low": round(low, 4), "ci95_high": round(high, 4), "start": cfg["start"]})
    return table

def readme_table(table: list[dict]) -> str:
    "The README's table (markdown) from the summary rows."
    rows = {r["arm"]: r for r in table}
    pct = lambda r: f"{r['mean']:.1%} [{r['ci95_low']:.1%}, {r['ci95_high']:.1%}]"
    lines = ["| run | steps | held-out accuracy | train s | s/step | groups without signal: generated, trained on |", "| --- | --- | --- | --- | --- | --- |"]
    for arm, label in (("grpo", "GRPO"), ("dynamic", "GRPO + dynamic sampling")):
        if arm in rows:
            r = rows[arm]
            lines.append(f"| {label} | {r['steps']} | {pct(r)} | {r['train_seconds_mean']:.0f} | {r['seconds_per_step_mean']:.1f} | "
                         f"{r['generated_no_signal_share_mean']:.0%}, {r['trained_no_signal_share_mean']:.0%} |")
    for arm, label in (("grpo_at_dynamic_time", "GRPO at the time dynamic sampling finished"), ("grpo_at_dynamic_steps", "GRPO at the same step count")):
        if arm in rows: lines.append(f"| {label} | | {pct(rows[arm])} | | | |")
    return "\n".join(lines)

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "dynamic_sampling.json")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--arms", nargs="+", default=["grpo", "dynamic"])
    p.add_argument("--steps-grpo", type=int, default=60)
    p.add_argument("--steps-dynamic", type=int, default=30)
    p.add_argument("--max-rounds", type=int, default=4)
    p.add_argument("--parallel", type=int, default=2)
    args = p.parse_args()
    cfg = dict(CONFIG, max_rounds=args.max_rounds, steps={"grpo": args.steps_grpo, "dynamic": args.steps_dynamic}, seeds=args.seeds)
    old = json.loads(args.out.read_text()) if args.out.exists() else {}
    same = all(old.get("config", {}).get(k) == v for k, v in cfg.items() if k != "seeds")
    runs = [r for r in old.get("runs", []) if same]
    if same and "start" in old.get("config", {}): cfg["start"] = old["config"]["start"]
    else:
        from oneshot_reason.models import load_policy
        model, tokenizer = load_policy(cfg["model"], device="cpu")
        cfg["start"] = greedy_accuracy(model, tokenizer, eval_sets(cfg, cfg)[1])
    print(f"start: held-out {cfg['start']:.3f}", flush=True)
    began = time.time()
    def save():
        result = {"config": cfg, "runs": sorted(runs, key=lambda r: (r["arm"], r["seed"])), "table": summarise(cfg, runs),
                  "load": f"{args.parallel} runs at once, one thread each, under nice, on a 2-core machine shared with other jobs "
                          "(each run's 1-minute load average before and after is in its record)",
                  "total_wall_seconds": round(time.time() - began + (old.get("total_wall_seconds", 0) if same else 0), 1)}
        result["readme_table"] = readme_table(result["table"])
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
        return result
    done = {(r["arm"], r["seed"]) for r in runs}
    jobs = [dict(cfg=cfg, arm=a, seed=s, steps=cfg["steps"][a], at_0=cfg["start"]) for s in args.seeds for a in args.arms if (a, s) not in done]
    with ProcessPoolExecutor(args.parallel, mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(train_one, j) for j in jobs}
        while futures:
            finished, futures = wait(futures, return_when=FIRST_COMPLETED)
            for f in finished:
                r = f.result(); runs.append(r)
                print(f"done {r['arm']} seed {r['seed']}: held-out {r['final_heldout']:.3f} after {r['train_seconds']:.0f} s "
                      f"({r['seconds_per_step']:.2f} s/step)", flush=True)
                save()
    result = save()
    print(result["readme_table"])

if __name__ == "__main__":
    main()
