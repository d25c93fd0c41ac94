"""What RL does to a real pretrained chat model: GRPO, LUFFY, M3PO and BuPO on SmolLM2-135M-Instruct, through the CLI.

    python bench/real_model.py [--config configs/real_model.yaml] [--out bench/results/real_model.json]
                               [--only NAME ...] [--parallel N] [--data-dir DIR] [--baseline] [--resume]
    python bench/real_model.py --config configs/qwen_gsm8k.yaml --data-dir ../shared/data --resume

(`--out` and `--workdir` default to bench/results/<config name>.json and outputs/<config name>/.)

Every run is one `oneshot-reason train` command built from configs/real_model.yaml: the model with LoRA, each
method's own preset (its loss, clipping, shaping and format), and the shape every run shares (prompts, group size,
completion length, learning rate, steps) under `trainer:`. Each run evaluates its held-out problems greedily before,
every `eval_steps` steps and after, strict (the answer where the format puts it) and lenient (the final answer
anywhere). `--baseline` also evaluates the untrained model on the full benchmarks (`oneshot-reason eval`).

Writes the results file after every finished run (a rerun skips runs already there): per run the command, the
held-out curves, the training reward and health numbers from the trainer's log, the completions of the first
held-out problems before and after, and the wall time; then per experiment the mean change with a 95% t-interval over seeds, and, per run, the change with a 95% paired
bootstrap interval over the held-out problems (the same problems before and after; the interval to read when one
seed is all the machine allows), and each method against the first experiment on the same problems after training.
Wall times are taken with `--parallel` runs sharing the machine, which the file records.
"""
import argparse, json, math, os, platform, shlex, statistics, subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import yaml

from methods import T_975 # bench/methods.py's t quantiles

ROOT = Path(__file__).resolve().parent.parent
LOGGED = ("reward", "frac_reward_zero_std", "completions/mean_length", "completions/clipped_ratio", "entropy",
          "luffy/on_policy_reward", "luffy/off_policy_reward") # per-step numbers kept from the trainer's log

def interval(values: list[float]) -> list[float]:
    "Mean and 95% t-interval of `values` (degenerate for one value)."
    m = statistics.mean(values)
    if len(values) < 2: return [m, m, m]
    half = T_975.get(len(values) - 1, 1.96) * statistics.stdev(values) / math.sqrt(len(values))
    return [m, m - half, m + half]

def clip(bounds: list[float]) -> list[float]:
    "An accuracy's interval kept within [0, 1]."
    return [bounds[0], max(0.0, bounds[1]), min(1.0, bounds[2])]

def paired_bootstrap(before: list[bool], after: list[bool], n: int = 10000, seed: int = 0) -> list[float]:
    "Mean of after - before over paired problems, and its 95% percentile interval from `n` resamples of the problems."
    import numpy as np
    if len(before) != len(after) or not before: raise ValueError(f"paired_bootstrap needs two equal, non-empty lists, got {len(before)} and {len(after)}")
    diff = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    means = diff[np.random.default_rng(seed).integers(0, len(diff), size=(n, len(diff)))].mean(axis=1)
    return [float(diff.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]

def verdicts(folder: Path) -> dict[str, list[bool]]:
    "Per held-out problem, in order: strict and lenient verdicts of the greedy completion in an evaluation folder."
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    if not files: return {}
    rows = [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]
    return {"strict": [bool(r["strict"][0]) for r in rows], "lenient": [bool(r["correct"][0]) for r in rows]}

def data_file(cfg: dict, relative: str | None, data_dir: Path | None) -> str | None:
    "A data file of the config, found under --data-dir (GSM8K's train.jsonl, test.jsonl)."
    if relative is None or relative in ("synthetic", "gsm8k", "math500"): return relative
    path = (data_dir or Path(".")) / relative
    if not path.exists(): raise SystemExit(f"{relative}: not found under --data-dir {data_dir}; pass the folder holding gsm8k/")
    return str(path)

def trainer_shape(cfg: dict, exp: dict, out: Path) -> Path:
    "The run's trainer settings (the config's, then the experiment's own) in a YAML file beside its folder, for `--config`."
    config = out.parent / f"{out.name}.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(yaml.safe_dump({"trainer": {**cfg["trainer"], **exp.get("trainer", {})}}))
    return config

def command(cfg: dict, name: str, seed: int, out: Path, data_dir: Path | None, resume: bool = False) -> list[str]:
    "The `oneshot-reason train` command of one run (its trainer shape in a YAML file beside its folder)."
    exp = cfg["experiments"][name]
    config = trainer_shape(cfg, exp, out)
    args = ["oneshot-reason", "train", "--model", cfg["model"], "--lora", str(cfg["lora"]), "--algo", exp["algo"],
            "--format", exp.get("format", cfg["format"]), "--reward-preset", exp.get("reward", cfg["reward"]),
            "--max-steps", str(exp.get("max_steps", cfg["max_steps"])), "--seed", str(seed), "--output-dir", str(out),
            "--resume" if resume else "--overwrite", "--config", str(config), "--quiet",
            "--eval-benchmark", data_file(cfg, exp["eval"], data_dir), "--n-eval", str(cfg["n_eval"]),
            "--eval-steps", str(cfg["eval_steps"])]
    if exp.get("data") == "synthetic": args += ["--dataset", "synthetic"]
    elif exp.get("data"): args += ["--data-path", data_file(cfg, exp["data"], data_dir)]
    for key, flag in (("demo_column", "--demo-column"), ("internal_layer", "--internal-layer"), ("iterative_steps", "--iterative-steps")):
        if key in exp: args += [flag, str(exp[key])]
    return args

def trainer_log(out: Path) -> list[dict]:
    "The per-step numbers of the newest checkpoint's trainer state (reward, zero-std groups, lengths, entropy)."
    states = sorted(out.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.split("-")[1]))
    if not states: return []
    history = json.loads(states[-1].read_text())["log_history"]
    return [{"step": h["step"], **{k: round(h[k], 4) for k in LOGGED if k in h}} for h in history if "reward" in h]

def completions(folder: Path, n: int) -> list[dict]:
    "The first `n` held-out records of an evaluation folder (question, completion, verdicts)."
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    if not files: return []
    rows = [json.loads(line) for line in files[0].read_text().splitlines()[:n]]
    keep = ("question", "reference", "completions", "correct", "strict", "truncated")
    return [{k: r[k] for k in keep if k in r} for r in rows]

def run_one(cfg: dict, name: str, seed: int, data_dir: Path | None, workdir: Path, resume: bool = False) -> dict:
    "Train one (experiment, seed) through the CLI (continuing an interrupted one with `resume`) and collect its run folder."
    out = workdir / f"{name}-seed{seed}"
    args = command(cfg, name, seed, out, data_dir, resume and any(out.glob("checkpoint-*")))
    start = time.time()
    proc = subprocess.run(args, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    wall = round(time.time() - start, 1)
    (workdir / f"{name}-seed{seed}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode:
        print(f"{name} seed {seed}: exit {proc.returncode}\n{proc.stderr[-2000:]}", flush=True)
        return {"experiment": name, "seed": seed, "command": shlex.join(args), "exit": proc.returncode, "error": proc.stderr[-2000:]}
    summary = json.loads((out / "summary.json").read_text())
    heldout = [json.loads(line) for line in (out / "heldout.jsonl").read_text().splitlines()]
    run = {"experiment": name, "seed": seed, "command": shlex.join(args), "exit": 0,
           "wall_seconds": summary.get("wall_seconds", wall), # the whole run, resumed parts included
           "dtype": summary.get("dtype"), "preset": summary.get("preset"),
           "strict": [[h["step"], h["accuracy_strict"]] for h in heldout],
           "lenient": [[h["step"], h["accuracy_lenient"]] for h in heldout],
           "truncated": [[h["step"], h.get("truncated")] for h in heldout],
           "log": trainer_log(out), "health": summary.get("health", {}).get("events", []),
           "verdicts_before": verdicts(out / "eval_before"), "verdicts_after": verdicts(out / "eval_after"),
           "before": completions(out / "eval_before", cfg["keep_completions"]),
           "after": completions(out / "eval_after", cfg["keep_completions"])}
    print(f"{name} seed {seed}: strict {run['strict'][0][1]:.3f} -> {run['strict'][-1][1]:.3f}, "
          f"lenient {run['lenient'][0][1]:.3f} -> {run['lenient'][-1][1]:.3f} ({wall:.0f} s)", flush=True)
    return run

def baseline(cfg: dict, data_dir: Path | None, workdir: Path) -> list[dict]:
    "The untrained model on each full benchmark of `baselines`, greedy, with `oneshot-reason eval`."
    rows = []
    for b in cfg["baselines"]:
        out = workdir / f"baseline-{b['name']}"
        args = ["oneshot-reason", "eval", "--model", cfg["model"], "--benchmark", b["benchmark"], "--format", b["format"],
                "--max-new-tokens", str(b["max_new_tokens"]), "--output-dir", str(out), "--batch-size", str(b.get("batch_size", 16))]
        if b.get("data"): args += ["--data-path", data_file(cfg, b["data"], data_dir)]
        if b.get("limit"): args += ["--limit", str(b["limit"])]
        start = time.time()
        proc = subprocess.run(args, capture_output=True, text=True)
        summaries = sorted(out.glob("*_summary.json"))
        if proc.returncode or not summaries:
            rows.append({"name": b["name"], "command": shlex.join(args), "exit": proc.returncode, "error": proc.stderr[-2000:]}); continue
        s = json.loads(summaries[0].read_text())
        rows.append({"name": b["name"], "command": shlex.join(args), "wall_seconds": round(time.time() - start, 1), **s})
        print(f"baseline {b['name']}: {s['metrics']} ({time.time() - start:.0f} s)", flush=True)
    return rows

def summarise(cfg: dict, runs: list[dict]) -> dict:
    "Per experiment: strict and lenient accuracy before and after, and the change, with 95% t-intervals over seeds."
    table = {}
    for name in cfg["experiments"]:
        done = [r for r in runs if r["experiment"] == name and r.get("exit") == 0]
        if not done: continue
        row = {"seeds": len(done), "wall_seconds": round(statistics.mean(r["wall_seconds"] for r in done), 1)}
        for kind in ("strict", "lenient"):
            row[f"{kind}_before"] = clip(interval([r[kind][0][1] for r in done]))
            row[f"{kind}_after"] = clip(interval([r[kind][-1][1] for r in done]))
            row[f"{kind}_change"] = interval([r[kind][-1][1] - r[kind][0][1] for r in done])
        for kind in ("strict", "lenient"): # per seed, paired over the held-out problems
            row[f"{kind}_change_paired"] = [paired_bootstrap(r["verdicts_before"][kind], r["verdicts_after"][kind])
                                            for r in done if r.get("verdicts_before") and r.get("verdicts_after")]
        table[name] = {k: [round(x, 4) for x in v] if isinstance(v, list) and v and not isinstance(v[0], list)
                       else [[round(x, 4) for x in w] for w in v] if isinstance(v, list) else v for k, v in row.items()}
    first = next(iter(table), None) # every other method against the first, after training, paired by seed and problem
    for name in list(table)[1:]:
        for kind in ("strict", "lenient"):
            pairs = [(a["verdicts_after"][kind], b["verdicts_after"][kind]) for a in runs for b in runs
                     if a["experiment"] == first and b["experiment"] == name and a["seed"] == b["seed"] and a.get("exit") == 0
                     and b.get("exit") == 0 and a.get("verdicts_after") and b.get("verdicts_after")]
            if pairs: table[name][f"{kind}_after_vs_{first}"] = [[round(x, 4) for x in paired_bootstrap(a, b)] for a, b in pairs]
    return table

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--config", default=str(ROOT / "configs" / "real_model.yaml"))
    p.add_argument("--out", default=None, help="the results file (default: bench/results/<config name>.json)")
    p.add_argument("--only", nargs="*", help="run only these experiments")
    p.add_argument("--parallel", type=int, default=1, help="runs at once")
    p.add_argument("--seeds", type=int, nargs="*", help="run only these seeds")
    p.add_argument("--data-dir", default=os.environ.get("ONESHOT_DATA_DIR"), help="the folder holding gsm8k/ (default: $ONESHOT_DATA_DIR)")
    p.add_argument("--baseline", action="store_true", help="also evaluate the untrained model on the full benchmarks")
    p.add_argument("--workdir", default=None, help="the run folders (default: outputs/<config name>/)")
    p.add_argument("--resume", action="store_true", help="continue interrupted runs from their newest checkpoint")
    a = p.parse_args()
    cfg = yaml.safe_load(Path(a.config).read_text())
    stem = Path(a.config).stem
    data_dir = Path(a.data_dir) if a.data_dir else None
    workdir = Path(a.workdir) if a.workdir else ROOT / "outputs" / stem
    out = Path(a.out) if a.out else ROOT / "bench" / "results" / f"{stem}.json"
    results = json.loads(out.read_text()) if out.exists() else {"runs": []}
    have = {(r["experiment"], r["seed"]) for r in results["runs"] if r.get("exit") == 0}
    jobs = [(name, seed) for name, exp in cfg["experiments"].items() if not a.only or name in a.only
            for seed in exp.get("seeds", cfg["seeds"]) if (name, seed) not in have and (not a.seeds or seed in a.seeds)]
    import torch
    machine = {"device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"CPU, {os.cpu_count()} cores",
               "parallel": a.parallel, "python": platform.python_version(), "torch": torch.__version__}
    def save():
        results.update(config=cfg, machine=machine, table=summarise(cfg, results["runs"]))
        out.parent.mkdir(parents=True, exist_ok=True); out.write_text(json.dumps(results, indent=1))
    if a.baseline: results["baseline"] = baseline(cfg, data_dir, workdir); save()
    print(f"{len(jobs)} runs: {', '.join(f'{n}/{s}' for n, s in jobs)}", flush=True)
    with ThreadPoolExecutor(a.parallel) as pool:
        for future in as_completed([pool.submit(run_one, cfg, *job, data_dir, workdir, a.resume) for job in jobs]):
            run = future.result()
            results["runs"] = [r for r in results["runs"] if (r["experiment"], r["seed"]) != (run["experiment"], run["seed"])] + [run]
            save()
    save()
    for name, row in results.get("table", {}).items():
        print(f"{name:18s} strict {row['strict_before'][0]:.3f} -> {row['strict_after'][0]:.3f} "
              f"(change {row['strict_change'][0]:+.3f} [{row['strict_change'][1]:+.3f}, {row['strict_change'][2]:+.3f}]), "
              f"lenient {row['lenient_before'][0]:.3f} -> {row['lenient_after'][0]:.3f}, {row['seeds']} seeds, {row['wall_seconds']:.0f} s")

if __name__ == "__main__": main()
