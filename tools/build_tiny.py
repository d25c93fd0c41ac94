"""Rebuild the embedded `tiny` model of oneshot_reason (deterministic by seed) and report how good it is.

    python tools/build_tiny.py [--seed 0] [--steps N] [--out oneshot_reason/assets/tiny]

Trains the byte-level BPE tokenizer and warm-starts the small Qwen2 model on synthetic problems with the recipe
of `oneshot_reason.tiny.build_tiny_model`, saves it (safetensors + config + tokenizer files), then prints its
size and its held-out greedy accuracy and pass@8 on the `test` split of the synthetic problems in the xml format.
"""
import argparse, json, shutil, time
from pathlib import Path

import numpy as np
import torch

from oneshot_reason.data import synthetic_problems
from oneshot_reason.evaluate import evaluate
from oneshot_reason.models import load_policy, save_policy, tiny_path
from oneshot_reason.tiny import TINY_RECIPE, build_tiny_model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of the whole recipe")
    parser.add_argument("--steps", type=int, default=TINY_RECIPE["steps"], help="warm-start steps")
    parser.add_argument("--hasty", type=float, default=TINY_RECIPE["hasty"], help="share of solutions that stop one step short")
    parser.add_argument("--out", type=Path, default=tiny_path(), help="folder to write the model to")
    parser.add_argument("--eval-problems", type=int, default=200, help="held-out problems to evaluate on")
    args = parser.parse_args()

    start = time.time()
    model, tokenizer = build_tiny_model(seed=args.seed, steps=args.steps, hasty=args.hasty, log_every=100)
    build_s = time.time() - start
    if args.out.exists(): shutil.rmtree(args.out)
    save_policy(model, tokenizer, args.out)
    for f in args.out.iterdir(): f.chmod(0o644)  # package data must be readable by everyone
    size = sum(f.stat().st_size for f in args.out.iterdir())

    model, tokenizer = load_policy(args.out, device="cpu")  # what users get
    test = synthetic_problems(args.eval_problems, seed=args.seed, split="test", format="xml",
                              difficulty=TINY_RECIPE["difficulty"])
    def verdicts(**kw): # strict verdicts (the answer in <answer> tags), one row per problem, one column per sample
        result = evaluate(model, tokenizer, test, format="xml", max_new_tokens=64, batch_size=64, use_vllm=False, progress=False, **kw)
        return np.array([r["strict"] for r in result.records])
    greedy = verdicts()
    sampled = verdicts(n_samples=8, temperature=1.0, seed=args.seed)
    prompt_lengths = [len(tokenizer.apply_chat_template(p, add_generation_prompt=True, tokenize=True, return_dict=False))
                      for p in test["prompt"]]
    completion_lengths = [len(tokenizer(s)["input_ids"]) + 1 for s in test["solution"]]
    report = dict(seed=args.seed, steps=args.steps, hasty=args.hasty, difficulty=TINY_RECIPE["difficulty"],
                  parameters=sum(p.numel() for p in model.parameters()), size_bytes=size,
                  build_seconds=round(build_s, 1), heldout_problems=len(test),
                  greedy_accuracy=float(greedy.mean()), sample_accuracy=float(sampled.mean()),
                  pass_at_8=float(sampled.any(1).mean()),
                  prompt_tokens_mean=float(np.mean(prompt_lengths)), completion_tokens_mean=float(np.mean(completion_lengths)),
                  completion_tokens_max=int(np.max(completion_lengths)))
    for k, v in report.items(): print(f"{k:>24}: {v}")
    return report


if __name__ == "__main__":
    torch.set_num_threads(1)  # one thread: the same floating-point sums, hence the same model, on every machine
    main()
