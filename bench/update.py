"""The update phase of a GRPO step alone: one generation batch, its loss and backward with and without length bucketing
and gradient checkpointing, repeated with the variants alternating, on the same batch.

    python bench/update.py [--model smollm2-135m] [--prompts 4] [--generations 8] [--max-completion 160] [--lora 16]
                           [--repeats 2] [--threads 2] [--out bench/results/update.json]

One OneShotTrainer (LoRA `--lora`, GSM8K training questions, `oneshot-lenient` rewards) samples and scores one
generation batch; then, for each variant, the micro-batches are cut as the trainer cuts them (TRL's shuffle, then
sorted by length when bucketing) and each one's loss is computed and back-propagated, as `training_step` does. The
variants' summed losses must agree; the table gives each one's CPU and wall seconds and the tokens it scored.
"""
import argparse, json, os, platform, statistics, sys, time
from pathlib import Path

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))


def main():
    from step import shape_arguments, train_dataset
    p = shape_arguments(argparse.ArgumentParser(description=__doc__.splitlines()[0]), "update")
    p.add_argument("--repeats", type=int, default=2)
    a = p.parse_args()
    import tempfile
    import torch
    from trl.trainer.utils import shuffle_sequence_dict, split_tensor_dict
    from oneshot_reason.config import OneShotConfig
    from oneshot_reason.models import load_policy, lora_config
    from oneshot_reason.rewards import reward_preset
    from oneshot_reason.testing import quiet
    from oneshot_reason.trainer import OneShotTrainer, padding_span, sort_by_length
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model, tok = load_policy(a.model, dtype="float32")
    source, ds = train_dataset(a.prompts)
    args = OneShotConfig(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=a.generations,
                         gradient_accumulation_steps=a.prompts, num_generations=a.generations,
                         max_completion_length=a.max_completion, learning_rate=1e-4, temperature=0.7,
                         gradient_checkpointing=True, use_cpu=True, bf16=False, report_to=[], save_strategy="no",
                         seed=0, format="hash", save_final_model=False, log_completions_jsonl=False)
    t = quiet(OneShotTrainer(model=model, reward_funcs=reward_preset("oneshot-lenient"), args=args, train_dataset=ds,
                             processing_class=tok, peft_config=lora_config(a.lora)))
    t.model.train(); t.current_gradient_accumulation_steps = a.prompts # as inside `train`
    rows = [ds[i] for i in range(len(ds)) for _ in range(a.generations)]
    started = time.perf_counter()
    batch = t._generate_and_score_completions(rows)
    print(f"generated and scored in {time.perf_counter() - started:.1f} s; completion lengths "
          f"{sorted(batch['completion_mask'].sum(1).tolist())}", flush=True)
    torch.manual_seed(1)
    shuffled = shuffle_sequence_dict(batch)
    cuts = {True: split_tensor_dict(sort_by_length(shuffled), a.prompts), False: split_tensor_dict(shuffled, a.prompts)}

    def scored_tokens(micro_batches, bucketing):
        total = 0
        for mb in micro_batches:
            am = torch.cat([mb["prompt_mask"], mb["completion_mask"]], 1)
            left, right = padding_span(am, mb["completion_mask"].size(1)) if bucketing else (0, 0)
            total += am.size(0) * (am.size(1) - left - right)
        return total

    variants = [(b, gc) for gc in (True, False) for b in (True, False)]
    result = {"model": a.model, "lora": a.lora, "shape": f"{a.prompts} x {a.generations} x {a.max_completion}",
              "data": source, "threads": a.threads, "command": "python " + " ".join(sys.argv),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
              "completion_lengths": batch["completion_mask"].sum(1).tolist(), "rows": []}
    times = {v: [] for v in variants}
    losses = {}
    for r in range(a.repeats):
        for bucketing, gc in (variants if r % 2 == 0 else variants[::-1]):
            if gc: t.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            else: t.model.gradient_checkpointing_disable()
            t.args.length_bucketing = bucketing
            t.model.zero_grad(set_to_none=True)
            w, c = time.perf_counter(), time.process_time()
            total = 0.0
            for mb in cuts[bucketing]:
                loss = t.compute_loss(t.model, mb)
                loss.backward(); total += loss.item()
            times[(bucketing, gc)].append((time.perf_counter() - w, time.process_time() - c))
            losses[(bucketing, gc)] = total
            print(f"  bucketing {bucketing}, checkpointing {gc}: {times[(bucketing, gc)][-1][0]:.1f} s, loss {total:.6f}", flush=True)
    base = statistics.median(c for _, c in times[(False, True)])
    for (bucketing, gc), ts in times.items():
        cpu = statistics.median(c for _, c in ts)
        result["rows"].append({"length_bucketing": bucketing, "gradient_checkpointing": gc,
                               "scored_tokens": scored_tokens(cuts[bucketing], bucketing),
                               "wall_seconds": [round(w, 1) for w, _ in ts], "cpu_seconds": [round(c, 1) for _, c in ts],
                               "speedup_vs_trl_shape": round(base / cpu, 3), "loss": losses[(bucketing, gc)]})
    result["load_average"] = os.getloadavg()
    Path(a.out).write_text(json.dumps(result, indent=1))
    print(f"\n{a.model}, LoRA {a.lora}, {result['shape']}, {a.threads} threads; CPU seconds, median of {a.repeats}")
    print(f"{'bucketing':<11}{'checkpointing':<15}{'tokens':>8}{'CPU s':>8}{'speed-up':>10}{'loss':>12}")
    for row in result["rows"]:
        print(f"{str(row['length_bucketing']):<11}{str(row['gradient_checkpointing']):<15}{row['scored_tokens']:>8}"
              f"{statistics.median(row['cpu_seconds']):>8.1f}{row['speedup_vs_trl_shape']:>9.2f}x{row['loss']:>12.6f}")


if __name__ == "__main__":
    main()
