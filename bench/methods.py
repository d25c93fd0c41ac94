"""GRPO, M3PO, LUFFY and BuPO side by side on the offline default, each at its own best learning rate.

    python bench/methods.py [--config configs/methods.yaml] [--out bench/results/methods.json] [--settings warm weak]
                            [--methods grpo m3po luffy bupo] [--steps N] [--parallel N]

One YAML file (configs/methods.yaml) fixes what every method shares: the model of each setting, the data, the batch
shape (2 prompts x G=8 completions per step, 64 new tokens: the cpu-demo preset with a quarter of its prompts), the
number of steps, the seeds and the learning-rate grid. Each method otherwise runs with its reference settings (the `methods` block: M3PO's
lambda, T, KL and sampling temperature; LUFFY's own loss reduction, entropy bonus and shaping; BuPO's clip range and
internal-layer phase over the first 10% of the steps, as its script's 30 of 300).

Two settings: `warm`, the demo's start (the embedded tiny model on synthetic problems of any length, the demo's
reward stack), asks whether each method teaches the last step; `weak`, a checkpoint built with 90% hasty warm-start
solutions, on two-step problems where its own samples rarely earn a reward (LUFFY's premise), asks whether
demonstrations rescue it.

Learning rate: for every method, each rate of the grid is trained on the `select_seeds` (seed 0) of the `select_on`
setting (or of every setting when it is null) and the one with the best final greedy accuracy on the validation
problems is kept (ties: the smaller rate); every seed of every setting then runs at that rate. Validation and held-out problems are disjoint draws of the synthetic test split; the
table reports the held-out ones. Every `eval_every` steps a callback records both curves.

Writes bench/results/methods.json after every finished run (a rerun skips the runs already there): the settings,
per run the curves, training reward and wall time, the chosen rates, and the table (mean held-out accuracy over the
seeds with a 95% t-interval, mean wall time). Wall times are taken with `--parallel` runs sharing the machine.
"""
import argparse, json, math, shutil, statistics, time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262} # t quantiles

def problems(n: int, seed: int, split: str, steps: int, skip: int = 0):
    "`n` synthetic xml problems of `split` needing `steps` arithmetic steps (0: any), after the first `skip`."
    from oneshot_reason.data import synthetic_problems
    pool = synthetic_problems(4 * (n + skip) if steps else n + skip, seed=seed, split=split, format="xml")
    if steps: pool = pool.filter(lambda r: r["steps"] == steps)
    if len(pool) < n + skip: raise SystemExit(f"only {len(pool)} {split} problems with {steps} steps; ask for fewer")
    return pool.select(range(skip, skip + n))

def eval_sets(cfg: dict, setting: dict):
    "(validation, held-out): disjoint draws of the test split, the same for every run of a setting."
    steps = setting["problem_steps"]
    return problems(cfg["n_val"], 1000, "test", steps), problems(cfg["n_eval"], 1000, "test", steps, skip=cfg["n_val"])

def greedy_accuracy(model, tokenizer, dataset) -> float:
    "Share of problems whose greedy completion (64 new tokens) has the right <answer>."
    import torch
    from oneshot_reason.answers import final_answer
    model.eval(); texts = []
    prompts = [tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True) for p in dataset["prompt"]]
    with torch.no_grad():
        for i in range(0, len(prompts), 128):
            enc = tokenizer(prompts[i:i + 128], return_tensors="pt", padding=True, add_special_tokens=False)
            out = model.generate(**enc, max_new_tokens=64, do_sample=False, pad_token_id=tokenizer.pad_token_id,
                                 eos_token_id=tokenizer.eos_token_id)
            texts += tokenizer.batch_decode(out[:, enc["input_ids"].shape[1]:], skip_special_tokens=True)
    return round(sum(final_answer(t, "xml") == str(a).strip() for t, a in zip(texts, dataset["answer"])) / len(texts), 4)

def checkpoint(name: str, setting: dict) -> str:
    "'tiny', or the folder of the weak checkpoint (built once, cached under outputs/methods/)."
    if setting["model"] == "tiny": return "tiny"
    import torch
    from oneshot_reason.models import save_policy
    from oneshot_reason.tiny import build_tiny_model
    folder = ROOT / "outputs" / "methods" / f"weak-steps{setting['weak_steps']}-hasty{setting['hasty']}"
    if not (folder / "build.json").exists():
        torch.set_num_threads(1)
        start = time.time()
        model, tokenizer = build_tiny_model(seed=0, steps=setting["weak_steps"], hasty=setting["hasty"])
        save_policy(model, tokenizer, folder)
        (folder / "build.json").write_text(json.dumps({"build_steps": setting["weak_steps"], "hasty": setting["hasty"],
                                                       "build_seconds": round(time.time() - start, 1)}))
    return str(folder)

def start_accuracy(cfg: dict, name: str, setting: dict) -> dict:
    "Validation and held-out accuracy of a setting's starting model (step 0 of every curve), cached under outputs/methods/."
    from oneshot_reason.models import load_policy
    cache = ROOT / "outputs" / "methods" / f"start-{name}-{setting['model']}-steps{setting['problem_steps']}-{cfg['n_val']}-{cfg['n_eval']}.json"
    if cache.exists(): return json.loads(cache.read_text())
    model, tokenizer = load_policy(setting["checkpoint"], device="cpu")
    val, held = eval_sets(cfg, setting)
    result = {"val": greedy_accuracy(model, tokenizer, val), "heldout": greedy_accuracy(model, tokenizer, held)}
    cache.parent.mkdir(parents=True, exist_ok=True); cache.write_text(json.dumps(result))
    return result

def train_one(job: dict) -> dict:
    "One training run in its own process: its validation and held-out curves, training reward and wall time."
    import torch
    torch.set_num_threads(1)
    from transformers import TrainerCallback
    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from oneshot_reason.models import load_policy
    from oneshot_reason.rewards import RewardStack, oneshot_correctness, reward_preset
    from oneshot_reason.trainer import OneShotTrainer
    from oneshot_reason.config import config_preset
    cfg, setting, method, lr, seed = job["cfg"], job["setting"], job["method"], job["lr"], job["seed"]
    start, eval_seconds = time.time(), [0.0]
    model, tokenizer = load_policy(setting["checkpoint"], device="cpu")
    val, held = eval_sets(cfg, setting)
    train = problems(cfg["n_train"], seed, "train", setting["problem_steps"]) # has `demonstration`
    out = ROOT / "outputs" / "methods" / f"{job['setting_name']}-{method}-lr{lr:g}-seed{seed}"
    shutil.rmtree(out, ignore_errors=True)
    extra = dict(cfg["methods"][method])
    if "iterative_fraction" in extra: extra["iterative_steps"] = max(1, round(extra.pop("iterative_fraction") * cfg["steps"]))
    b = cfg["batch"]
    config = config_preset("cpu-demo", output_dir=str(out), seed=seed, data_seed=seed, max_steps=cfg["steps"], learning_rate=lr,
                           num_generations=b["num_generations"], per_device_train_batch_size=b["prompts_per_step"] * b["num_generations"],
                           gradient_accumulation_steps=1, max_completion_length=b["max_completion_length"], logging_steps=1,
                           report_to=[], save_strategy="no", save_final_model=False, log_completions_jsonl=False, **extra)
    curves = {"val": [[0, job["at_0"]["val"]]], "heldout": [[0, job["at_0"]["heldout"]]]}
    class Evaluate(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            if state.global_step % cfg["eval_every"] and state.global_step != state.max_steps: return
            t = time.time()
            for key, data in (("val", val), ("heldout", held)): curves[key].append([state.global_step, greedy_accuracy(model, tokenizer, data)])
            model.train(); eval_seconds[0] += time.time() - t
            print(f"{job['setting_name']} {method} lr {lr:g} seed {seed} step {state.global_step}: val {curves['val'][-1][1]:.3f} "
                  f"held-out {curves['heldout'][-1][1]:.3f} ({time.time() - start:.0f}s)", flush=True)
    reward = reward_preset("oneshot") if setting["reward"] == "oneshot" else RewardStack([oneshot_correctness], [1.0], "correctness")
    trainer = OneShotTrainer(model, reward, args=config, train_dataset=train, processing_class=tokenizer, callbacks=[Evaluate()])
    for cb in (PrinterCallback, ProgressCallback): trainer.remove_callback(cb)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "reward" in h]
    own = "luffy/on_policy_reward" if method == "luffy" else "reward" # the policy's own samples
    wall = time.time() - start
    return {"setting": job["setting_name"], "method": method, "lr": lr, "seed": seed, "val_curve": curves["val"],
            "heldout_curve": curves["heldout"], "final_val": curves["val"][-1][1], "final_heldout": curves["heldout"][-1][1],
            "train_reward": [round(h.get(own, float("nan")), 4) for h in logs],
            "wall_seconds": round(wall, 1), "train_seconds": round(wall - eval_seconds[0], 1)}

def key(run: dict) -> tuple: return (run["setting"], run["method"], float(run["lr"]), int(run["seed"]))

def choose_lr(runs: list[dict], setting: str, method: str, grid: list[float], seeds: list[int]) -> float | None:
    "The grid rate with the best mean final validation accuracy over `seeds` (ties: the smaller); None until all ran."
    scores = {}
    for lr in grid:
        vals = [r["final_val"] for r in runs if key(r)[:3] == (setting, method, float(lr)) and r["seed"] in seeds]
        if len(vals) < len(seeds): return None
        scores[lr] = statistics.mean(vals)
    return max(sorted(grid), key=lambda lr: scores[lr]) # max keeps the first (smallest) of equal scores

def interval(values: list[float]) -> tuple[float, float, float]:
    "Mean and 95% t-interval of `values` (degenerate for one value)."
    m = statistics.mean(values)
    if len(values) < 2: return m, m, m
    half = T_975.get(len(values) - 1, 1.96) * statistics.stdev(values) / math.sqrt(len(values))
    return m, max(0.0, m - half), min(1.0, m + half) # accuracies: clipped to [0, 1]

def summarise(cfg: dict, runs: list[dict], starts: dict) -> dict:
    "The chosen rates and the table (held-out accuracy over the seeds at the chosen rate, wall time)."
    chosen, table = {}, []
    for s in cfg["settings"]:
        chosen[s] = {}
        for m in cfg["methods"]:
            lr = choose_lr(runs, cfg.get("select_on") or s, m, cfg["lr_grid"], cfg["select_seeds"])
            chosen[s][m] = lr
            if lr is None: continue
            done = sorted((r for r in runs if key(r)[:3] == (s, m, float(lr))), key=lambda r: r["seed"])
            if not done: continue
            acc = [r["final_heldout"] for r in done]
            mean, low, high = interval(acc)
            table.append({"setting": s, "method": m, "lr": lr, "seeds": [r["seed"] for r in done], "heldout": acc,
                          "mean": round(mean, 4), "ci95_low": round(low, 4), "ci95_high": round(high, 4),
                          "start": starts[s]["heldout"], "gain_points": round(100 * (mean - starts[s]["heldout"]), 1),
                          "wall_seconds_mean": round(statistics.mean(r["wall_seconds"] for r in done), 1),
                          "train_seconds_mean": round(statistics.mean(r["train_seconds"] for r in done), 1)})
    return {"chosen_lr": chosen, "table": table}

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, default=ROOT / "configs" / "methods.yaml")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "methods.json")
    p.add_argument("--settings", nargs="+", help="only these settings of the config")
    p.add_argument("--methods", nargs="+", help="only these methods of the config")
    p.add_argument("--steps", type=int, help="override the config's steps (a quick look; do not mix into one results file)")
    p.add_argument("--parallel", type=int, help="override the config's parallel runs")
    args = p.parse_args()
    import yaml
    cfg = yaml.safe_load(args.config.read_text())
    if args.steps: cfg["steps"] = args.steps
    if args.parallel: cfg["parallel"] = args.parallel
    if args.settings: cfg["settings"] = {k: v for k, v in cfg["settings"].items() if k in args.settings}
    if args.methods: cfg["methods"] = {k: v for k, v in cfg["methods"].items() if k in args.methods}
    old = json.loads(args.out.read_text()) if args.out.exists() else {}
    same = all(old.get("config", {}).get(k) == cfg[k] for k in ("steps", "lr_grid", "n_val", "n_eval", "batch", "n_train"))
    runs = [r for r in old.get("runs", []) if same and r["setting"] in cfg["settings"] and r["method"] in cfg["methods"]]
    start = time.time()
    starts = {}
    for name, setting in cfg["settings"].items():
        setting["checkpoint"] = checkpoint(name, setting)
        starts[name] = old.get("start", {}).get(name) if same and name in old.get("start", {}) else start_accuracy(cfg, name, setting)
        print(f"{name}: start {json.dumps(starts[name])}", flush=True)

    def save():
        result = {"config": cfg, "start": starts, "runs": sorted(runs, key=key), **summarise(cfg, runs, starts),
                  "selection": f"learning rate chosen per method on the final validation accuracy of seeds {cfg['select_seeds']} "
                               f"of the {cfg.get('select_on') or 'same'} setting, then run on every seed in {cfg['seeds']}",
                  "interval": "mean over seeds and 95% t-interval (t with n-1 degrees of freedom), clipped to [0, 1]",
                  "load": f"{cfg['parallel']} runs at once, one thread each, nice 10, on a 2-core machine shared with other jobs",
                  "total_wall_seconds": round(time.time() - start + old.get("total_wall_seconds", 0) * same, 1)}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
        return result

    done = {key(r) for r in runs}
    def job(s, m, lr, seed):
        return dict(cfg=cfg, setting=cfg["settings"][s], setting_name=s, method=m, lr=float(lr), seed=seed, at_0=starts[s])
    # priority: a setting's sweep, then its other seeds (put in front as soon as a rate is chosen), then the next setting
    sweep_on = [cfg["select_on"]] if cfg.get("select_on") else list(cfg["settings"])
    first = [job(s, m, lr, seed) for s in sweep_on for seed in cfg["select_seeds"] for lr in cfg["lr_grid"] for m in cfg["methods"]]
    pending, submitted = [j for j in first if key(j | {"setting": j["setting_name"]}) not in done], set()
    with ProcessPoolExecutor(cfg["parallel"], mp_context=get_context("spawn")) as pool:
        futures = set()
        while True:
            for s in cfg["settings"]:  # the other seeds as soon as a (setting, method) has its rate
                for m in cfg["methods"]:
                    lr = choose_lr(runs, cfg.get("select_on") or s, m, cfg["lr_grid"], cfg["select_seeds"])
                    if lr is None: continue
                    for seed in cfg["seeds"]:
                        k = (s, m, float(lr), seed)
                        if k not in done and k not in submitted: pending.insert(0, job(s, m, lr, seed)); submitted.add(k)
            while pending and len(futures) < cfg["parallel"]:
                j = pending.pop(0); submitted.add((j["setting_name"], j["method"], j["lr"], j["seed"]))
                futures.add(pool.submit(train_one, j))
            if not futures: break
            finished, futures = wait(futures, return_when=FIRST_COMPLETED)
            for f in finished:
                r = f.result(); runs.append(r); done.add(key(r))
                print(f"done {key(r)}: val {r['final_val']:.3f} held-out {r['final_heldout']:.3f} in {r['wall_seconds']:.0f}s", flush=True)
            save()
    result = save()
    print(f"{'setting':8} {'method':6} {'lr':>8} {'held-out':>9} {'95% interval':>16} {'start':>6} {'wall s':>7}")
    for row in result["table"]:
        print(f"{row['setting']:8} {row['method']:6} {row['lr']:>8g} {row['mean']:>9.3f} "
              f"[{row['ci95_low']:.3f}, {row['ci95_high']:.3f}] {row['start']:>6.3f} {row['wall_seconds_mean']:>7.0f}")
    print(json.dumps({f"{r['setting']}/{r['method']}": r["mean"] for r in result["table"]}))

if __name__ == "__main__":
    main()
