"""Step time of OneShotTrainer (plain GRPO, completion log on) against trl.GRPOTrainer, on one small CPU config.

Both trainers run in this process, interleaved: rounds of A then B (B then A on odd rounds), each a fresh trainer
trained for `--steps` optimizer steps from the same seed and weights; the first `--warmup` steps of every run are
skipped. The step time is the wall time between `on_step_begin` and `on_step_end` (generation, scoring, forward,
backward, optimizer step, completion log). Prints a side-by-side table; the last line is JSON:
`{"step_time_ratio_vs_trl": median(OneShot) / median(TRL)}` (target <= 1.05).

    python bench/trainer.py [--rounds 6] [--steps 6] [--warmup 2] [--threads 1]
"""
import argparse, json, logging, os, statistics, tempfile, time
from pathlib import Path

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
import torch
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from oneshot_reason.data import synthetic_problems
from oneshot_reason.models import load_policy
from oneshot_reason.testing import digit_reward, quiet
from oneshot_reason.config import OneShotConfig
from oneshot_reason.trainer import OneShotTrainer  # also installs the CPU log-prob fallback

logging.getLogger("transformers").setLevel(logging.ERROR)


class StepTimer(TrainerCallback):
    "Wall time of each optimizer step."
    def __init__(self): self.times, self._t = [], None
    def on_step_begin(self, args, state, control, **kw): self._t = time.perf_counter()
    def on_step_end(self, args, state, control, **kw): self.times.append(time.perf_counter() - self._t)


def run(kind: str, out: Path, steps: int, seed: int = 0) -> list[float]:
    torch.manual_seed(seed)
    model, tok = load_policy("tiny")
    ds = synthetic_problems(64)
    common = dict(output_dir=str(out), per_device_train_batch_size=8, num_generations=8, max_completion_length=32,
                  max_steps=steps, logging_steps=1, use_cpu=True, bf16=False, report_to=[], save_strategy="no",
                  gradient_checkpointing=False, learning_rate=1e-4, seed=seed)
    timer = StepTimer()
    if kind == "trl":
        t = GRPOTrainer(model=model, reward_funcs=digit_reward, args=GRPOConfig(**common), train_dataset=ds,
                        processing_class=tok, callbacks=[timer])
    else:
        t = OneShotTrainer(model=model, reward_funcs=digit_reward, args=OneShotConfig(**common, save_final_model=False),
                           train_dataset=ds, processing_class=tok, callbacks=[timer])
    quiet(t).train()
    return timer.times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    times = {"trl": [], "oneshot": []}
    with tempfile.TemporaryDirectory() as d:
        for r in range(a.rounds):
            order = ("trl", "oneshot") if r % 2 == 0 else ("oneshot", "trl")
            for kind in order:
                times[kind] += run(kind, Path(d) / f"{kind}{r}", a.steps)[a.warmup:]
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["oneshot"] / med["trl"]
    print(f"model: load_policy('tiny'); 8 completions x 32 tokens per step; {a.rounds} rounds x {a.steps} steps "
          f"(first {a.warmup} skipped), {a.threads} thread(s)")
    print(f"{'trainer':<26}{'median step (ms)':>18}{'min (ms)':>10}{'max (ms)':>10}{'steps':>7}")
    for k, label in (("trl", "trl.GRPOTrainer"), ("oneshot", "OneShotTrainer (grpo)")):
        v = times[k]
        print(f"{label:<26}{med[k] * 1e3:>18.1f}{min(v) * 1e3:>10.1f}{max(v) * 1e3:>10.1f}{len(v):>7}")
    print(f"{'ratio OneShot / TRL':<26}{ratio:>18.3f}")
    print(json.dumps({"step_time_ratio_vs_trl": round(ratio, 4)}))


if __name__ == "__main__":
    main()
