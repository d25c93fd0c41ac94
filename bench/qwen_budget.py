"""What one GRPO step of Qwen2.5-Coder-0.5B-Instruct costs on this CPU, by shape and thread count: the budget table.

    python bench/qwen_budget.py --data-dir ../shared/data --shapes 4x8x384 2x8x384 4x8x256 --threads 1 2
    python bench/qwen_budget.py --shapes 4x8x384 --threads 1 --rollout-engines torch ctranslate2

Each (shape, threads) is one `oneshot-reason train` run of one step (LoRA 16, GSM8K train, the `boxed` format and
reward, the package's defaults on a CPU: fast rollouts, length bucketing, activations kept where they fit) into a
scratch folder, timed from outside: wall seconds of the whole command and of the step, CPU seconds of the process
(user + system, its threads together), peak resident memory, the completions' mean length and cut share, and the
machine's load before and after. A shape is prompts x completions x max completion tokens. Results go to
`bench/results/qwen_budget.json` (a rerun skips the rows already there). `--rollout-engines` also times each shape with
the rollouts sampled by CTranslate2 (`ctranslate2` for int8, `ctranslate2-float32`; `rollout_engine` in the run's YAML:
the policy converted at the step, its samples corrected by TRL's importance sampling), with the step's importance-ratio
metrics. The engines of a shape run one after the other, so their ratio is measured under the same load.
"""
import argparse, json, os, platform, resource, shutil, subprocess, sys, tempfile, time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "results" / "qwen_budget.json"


def peak_rss_kb(pid: int) -> int:
    "The peak resident memory of a running process so far (its VmHWM), 0 once it is gone."
    try: return next(int(l.split()[1]) for l in Path(f"/proc/{pid}/status").read_text().splitlines() if l.startswith("VmHWM:"))
    except (OSError, StopIteration, ValueError): return 0


def one_step(data_dir: Path, prompts: int, completions: int, tokens: int, threads: int, lr: float, temperature: float,
             engine: str = "torch") -> dict:
    "One step in a scratch folder; what it cost."
    work = Path(tempfile.mkdtemp(prefix="qwen-budget-"))
    try:
        trainer = {"per_device_train_batch_size": prompts * completions, "num_generations": completions,
                   "gradient_accumulation_steps": 1, "generation_batch_size": None, "steps_per_generation": None,
                   "max_completion_length": tokens, "learning_rate": lr, "lr_scheduler_type": "constant", "warmup_steps": 0,
                   "temperature": temperature, "logging_steps": 1, "save_steps": 1}
        if engine != "torch": # ctranslate2 (int8) or ctranslate2-float32
            name, _, dtype = engine.partition("-")
            trainer |= {"rollout_engine": name, "rollout_dtype": dtype or "int8"}
        (work / "shape.yaml").write_text(yaml.safe_dump({"trainer": trainer}))
        args = ["oneshot-reason", "train", "--model", "qwen2.5-coder-0.5b", "--lora", "16", "--algo", "grpo", "--format", "boxed",
                "--reward-preset", "boxed", "--data-path", str(data_dir / "gsm8k" / "train.jsonl"), "--max-steps", "1",
                "--seed", "0", "--n-eval", "0", "--output-dir", str(work / "run"), "--config", str(work / "shape.yaml"), "--quiet"]
        load0, start = os.getloadavg()[0], time.time()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with tempfile.TemporaryFile("w+") as err:
            proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, text=True, env={**os.environ, "OMP_NUM_THREADS": str(threads)})
            peak_kb = 0
            while proc.poll() is None: # the process's own peak (RUSAGE_CHILDREN's is the largest child's so far)
                peak_kb = max(peak_kb, peak_rss_kb(proc.pid)); time.sleep(1)
            err.seek(0); stderr = err.read()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall = time.time() - start
        if proc.returncode: raise SystemExit(f"exit {proc.returncode}:\n{stderr[-3000:]}")
        state = json.loads(next((work / "run").glob("checkpoint-*/trainer_state.json")).read_text())
        logged = next(h for h in state["log_history"] if "reward" in h)
        summary = json.loads((work / "run" / "summary.json").read_text())
        sampling = {k.removeprefix("sampling/"): round(v, 4) for k, v in logged.items() if k.startswith("sampling/")}
        return {"shape": f"{prompts}x{completions}x{tokens}", "threads": threads, "rollout_engine": engine, "wall_seconds": round(wall, 1),
                "train_seconds": round(summary.get("wall_seconds") or wall, 1), # the run as the package times it (loading excluded)
                "cpu_seconds": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1),
                "peak_rss_gb": round(peak_kb / 2**20, 2), "load_before": round(load0, 2), "load_after": round(os.getloadavg()[0], 2),
                "completion_tokens_mean": round(logged.get("completions/mean_length", 0), 1),
                "clipped_ratio": round(logged.get("completions/clipped_ratio", 0), 3), "reward_mean": round(logged["reward"], 4),
                "dtype": summary.get("dtype"), **({"importance_sampling": sampling} if sampling else {}), "command": " ".join(args)}
    finally: shutil.rmtree(work, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-dir", type=Path, default=Path(os.environ.get("ONESHOT_DATA_DIR", ROOT.parent / "shared" / "data")))
    p.add_argument("--shapes", nargs="*", default=["4x8x384", "2x8x384", "4x8x256"])
    p.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    p.add_argument("--learning-rate", type=float, default=5e-5)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--rollout-engines", nargs="*", default=["torch"], help="torch, ctranslate2 (int8) and/or ctranslate2-float32")
    a = p.parse_args()
    results = json.loads(OUT.read_text()) if OUT.exists() else {"rows": []}
    for shape in a.shapes:
        prompts, completions, tokens = map(int, shape.split("x"))
        for threads, engine in [(t, e) for t in a.threads for e in a.rollout_engines]:
            if any(r["shape"] == shape and r["threads"] == threads and r.get("rollout_engine", "torch") == engine
                   for r in results["rows"]): continue
            row = one_step(a.data_dir, prompts, completions, tokens, threads, a.learning_rate, a.temperature, engine)
            results["rows"].append(row)
            results["machine"] = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()}
            OUT.write_text(json.dumps(results, indent=1) + "\n")
            print(json.dumps({k: v for k, v in row.items() if k != "command"}), flush=True)


if __name__ == "__main__": main()
