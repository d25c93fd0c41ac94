"""A GRPO step of a real model: OneShotTrainer against trl.GRPOTrainer, same model, data and settings, side by side.

    python bench/step.py [--model smollm2-135m] [--prompts 4] [--generations 8] [--max-completion 160] [--lora 16]
                         [--steps 2] [--rounds 1] [--threads 2] [--variants trl oneshot oneshot-unbucketed]
                         [--out bench/results/step.json]

Each variant is a fresh trainer on a fresh copy of the model, LoRA `--lora`, trained `--steps` optimizer steps from the
same seed on the first GSM8K training questions (hash format; synthetic problems without a local copy), rewarded by the
package's `oneshot-lenient` stack; gradient checkpointing on for all (TRL's default), float32 on a CPU without bfloat16
units. Variants: `trl` (trl.GRPOTrainer), `oneshot` (OneShotTrainer with its defaults: `length_bucketing` and
`fast_rollouts` on here), `oneshot-unbucketed` (`length_bucketing=False`), `oneshot-generate` (`fast_rollouts=False`:
rollouts by `generate`, as TRL samples them), `oneshot-no-checkpointing` (its defaults without gradient checkpointing,
where memory allows: activations are kept instead of recomputed). Rounds alternate the order. A step's time is the wall time between
`on_step_begin` and `on_step_end` (generation, scoring, forward, backward, optimizer); the first step of each run
samples the same completions in every variant (same seed and weights), so its loss must agree: the table prints it.
Results are written after every run, so a long run can be stopped and what it measured is kept.
"""
import argparse, json, os, platform, statistics, sys, tempfile, time
from pathlib import Path

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
ROOT = Path(__file__).resolve().parent.parent


def train_dataset(n: int):
    "The first n GSM8K training questions (hash format) when a local copy exists, else n synthetic problems."
    from oneshot_reason.data import load_math_file, synthetic_problems
    from oneshot_reason.testing import real_data_dir
    folder = real_data_dir()
    if folder is not None and (folder / "gsm8k" / "train.jsonl").exists():
        return "gsm8k train", load_math_file(folder / "gsm8k" / "train.jsonl", format="hash").select(range(n))
    return "synthetic", synthetic_problems(n, seed=0, format="hash")


def run(variant: str, a, out: Path) -> dict:
    "Train one variant; its step times (wall and CPU seconds) and logged values."
    import torch
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer
    from oneshot_reason.config import OneShotConfig
    from oneshot_reason.models import load_policy, lora_config
    from oneshot_reason.rewards import reward_preset
    from oneshot_reason.testing import quiet
    from oneshot_reason.trainer import OneShotTrainer

    class Timer(TrainerCallback):
        def __init__(self): self.wall, self.cpu = [], []
        def on_step_begin(self, args, state, control, **kw): self._t = (time.perf_counter(), time.process_time())
        def on_step_end(self, args, state, control, **kw):
            self.wall.append(time.perf_counter() - self._t[0]); self.cpu.append(time.process_time() - self._t[1])
            print(f"  {variant} step {state.global_step}: {self.wall[-1]:.1f} s", flush=True)

    torch.manual_seed(0)
    model, tok = load_policy(a.model, dtype="float32")
    source, ds = train_dataset(a.prompts * a.steps)
    stack, timer = reward_preset("oneshot-lenient"), Timer()
    common = dict(output_dir=str(out), per_device_train_batch_size=a.generations, gradient_accumulation_steps=a.prompts,
                  num_generations=a.generations, max_completion_length=a.max_completion, max_steps=a.steps,
                  learning_rate=1e-4, temperature=0.7, gradient_checkpointing=True, use_cpu=True, bf16=False,
                  report_to=[], save_strategy="no", logging_steps=1, seed=0)
    kw = dict(model=model, train_dataset=ds, processing_class=tok, peft_config=lora_config(a.lora), callbacks=[timer])
    if variant == "oneshot-no-checkpointing": common["gradient_checkpointing"] = False
    if variant == "trl":
        t = GRPOTrainer(reward_funcs=list(stack.funcs), args=GRPOConfig(**common, reward_weights=list(stack.weights)), **kw)
    else:
        bucketing = False if variant == "oneshot-unbucketed" else None
        fast = False if variant == "oneshot-generate" else None
        t = OneShotTrainer(reward_funcs=stack, args=OneShotConfig(**common, format="hash", save_final_model=False,
                                                                  length_bucketing=bucketing, fast_rollouts=fast), **kw)
    quiet(t).train()
    logs = [h for h in t.state.log_history if "loss" in h]
    return {"source": source, "wall": timer.wall, "cpu": timer.cpu,
            "length_bucketing": getattr(t, "length_bucketing", False), "fast_rollouts": getattr(t, "fast_rollouts", False),
            "loss": [h["loss"] for h in logs], "mean_length": [h.get("completions/mean_length") for h in logs],
            "reward": [h.get("reward") for h in logs], "load_average": os.getloadavg()[0]}


def shape_arguments(p: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    "The model and step shape every step benchmark takes, and its results file `bench/results/<name>.json`."
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--prompts", type=int, default=4)
    p.add_argument("--generations", type=int, default=8)
    p.add_argument("--max-completion", type=int, default=160)
    p.add_argument("--lora", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / f"{name}.json"))
    return p


def main():
    p = shape_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]), "step")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--variants", nargs="+", default=["trl", "oneshot", "oneshot-unbucketed"])
    p.add_argument("--append", action="store_true", help="add these runs to the ones already in --out (same settings)")
    a = p.parse_args()
    import torch
    torch.set_num_threads(a.threads)
    result = {"model": a.model, "lora": a.lora, "prompts": a.prompts, "generations": a.generations,
              "max_completion_length": a.max_completion, "steps": a.steps, "threads": a.threads,
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
              "command": "python " + " ".join(sys.argv), "runs": {v: [] for v in a.variants}}
    if a.append and Path(a.out).exists():
        before = json.loads(Path(a.out).read_text())
        result["command"] = [*([before["command"]] if isinstance(before["command"], str) else before["command"]), result["command"]]
        result["runs"] = {**before["runs"], **{v: before["runs"].get(v, []) for v in a.variants}}
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.rounds):
            for v in (a.variants if r % 2 == 0 else a.variants[::-1]):
                print(f"round {r + 1}: {v}", flush=True)
                result["runs"][v].append(run(v, a, Path(d) / f"{v}{r}"))
                summarise(result)
                Path(a.out).write_text(json.dumps(result, indent=1))
    print_table(result)


def summarise(result: dict):
    "Median step time of each variant and its ratio to TRL's, the first step's loss of each."
    steps = {v: [s for run in runs for s in run["wall"]] for v, runs in result["runs"].items() if runs}
    result["median_step_seconds"] = {v: round(statistics.median(s), 2) for v, s in steps.items()}
    if "trl" in steps:
        result["speedup_vs_trl"] = {v: round(result["median_step_seconds"]["trl"] / m, 3)
                                    for v, m in result["median_step_seconds"].items() if v != "trl"}
    result["first_step_loss"] = {v: runs[0]["loss"][0] for v, runs in result["runs"].items() if runs and runs[0]["loss"]}
    result["first_step_mean_length"] = {v: runs[0]["mean_length"][0] for v, runs in result["runs"].items() if runs and runs[0]["mean_length"]}


def print_table(result: dict):
    print(f"\n{result['model']}, LoRA {result['lora']}, {result['prompts']} x {result['generations']} x "
          f"{result['max_completion_length']}, {result['threads']} threads ({result['machine']})")
    print(f"{'variant':<22}{'median step (s)':>16}{'vs TRL':>8}{'step-1 loss':>14}{'step-1 length':>15}")
    for v, m in result["median_step_seconds"].items():
        speed = result.get("speedup_vs_trl", {}).get(v, 1.0)
        print(f"{v:<22}{m:>16.1f}{speed:>7.2f}x{result['first_step_loss'].get(v, float('nan')):>14.5f}"
              f"{result['first_step_mean_length'].get(v, float('nan')):>15.1f}")


if __name__ == "__main__":
    main()
