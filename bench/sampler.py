"""Throughput of the cross-path sampler (blend on, blend off) against `model.generate`.

Same prompts, same batch, same sampling settings (temperature 1, no top-k/top-p), every completion forced to its full
length (no EOS), on two randomly initialised Qwen2 models: a 'tiny'-sized one and one of Qwen2.5-0.5B's shape (built
from its config, nothing downloaded). On a GPU the shapes are 8 prompts x G=8 x 64 new tokens; on a CPU the 0.5B run
is cut to 2 prompts x G=8 x 32 new tokens so it finishes in a few minutes on two cores.

    python bench/sampler.py                 # prints a side-by-side table; the last line is JSON for the 0.5B model
    python bench/sampler.py --device cuda --repeats 5
    python bench/sampler.py --trainer-shape --threads 2   # SmolLM2 on 4 GSM8K chat prompts x G=8 x 160 new tokens

`blend_overhead` = time(blend on) / time(blend off); `loop_vs_generate` = tokens/s(blend off) / tokens/s(generate).
On a CPU the times are the process's CPU seconds with one torch thread (so that other work on a shared machine does
not distort the ratios; wall seconds are printed beside them); on a GPU they are wall seconds after a synchronize.
"""
from __future__ import annotations

import argparse
import json
import time

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM
from transformers.utils import logging

from oneshot_reason.crosspath import sample_paths


def small_config() -> Qwen2Config:
    "A 4-layer, 192-wide random Qwen2 (not the embedded tiny model): the sampler's overhead dominates at this size."
    return Qwen2Config(vocab_size=600, hidden_size=192, num_hidden_layers=4, num_attention_heads=4,
                       num_key_value_heads=2, intermediate_size=512, max_position_embeddings=2048,
                       tie_word_embeddings=True)


def qwen25_05b_config() -> Qwen2Config:
    "Qwen/Qwen2.5-0.5B's config.json, written out (random weights; no download)."
    return Qwen2Config(vocab_size=151936, hidden_size=896, num_hidden_layers=24, num_attention_heads=14,
                       num_key_value_heads=2, intermediate_size=4864, max_position_embeddings=32768,
                       rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True, hidden_act="silu")


def make_prompts(batch: int, length: int, vocab: int, seed: int = 0):
    "Left-padded random prompts of different lengths (between length/2 and length)."
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(10, vocab, (batch, length), generator=g)
    mask = torch.ones_like(ids)
    for b in range(batch):
        pad = int(torch.randint(0, length // 2 + 1, (1,), generator=g))
        mask[b, :pad] = 0
    return ids * mask, mask


def sync(device):
    if device.type == "cuda": torch.cuda.synchronize()


def bench(name, config, batch, paths, new_tokens, prompt_len, repeats, device, dtype, model=None, prompts=None):
    "Time the three samplers on a random model built from `config`, or on `model` with `prompts` = (ids, mask)."
    torch.manual_seed(0)
    t0 = time.perf_counter()
    if model is None: model = Qwen2ForCausalLM(config).to(device=device, dtype=dtype).eval()
    model.generation_config.eos_token_id = None  # forced to the full length
    model.generation_config.pad_token_id = 0
    build_s = time.perf_counter() - t0
    ids, mask = prompts if prompts is not None else make_prompts(batch, prompt_len, config.vocab_size)
    ids, mask = ids.to(device), mask.to(device)
    dtype = next(model.parameters()).dtype

    def run_loop(lam):
        out = sample_paths(model, ids, mask, paths, new_tokens, temperature=1.0, cross_path_lambda=lam,
                           cross_path_temperature=0.1, eos_token_id=[], pad_token_id=0)
        assert out.completion_ids.shape == (batch * paths, new_tokens)
        return out

    def run_generate():
        out = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, num_return_sequences=paths,
                             max_new_tokens=new_tokens, temperature=1.0, top_k=0, top_p=1.0, pad_token_id=0)
        assert out.shape == (batch * paths, prompt_len + new_tokens)
        return out

    runs = {"blend on (lam=0.1)": lambda: run_loop(0.1), "blend off (lam=0)": lambda: run_loop(0.0),
            "model.generate": run_generate}
    clock = time.perf_counter if device.type == "cuda" else time.process_time
    best = {k: float("inf") for k in runs}
    wall = {k: float("inf") for k in runs}
    with torch.no_grad():
        short = dict(ids=ids[:, -4:], mask=mask[:, -4:].clone().fill_(1))
        sample_paths(model, short["ids"], short["mask"], paths, 2, cross_path_lambda=0.1, eos_token_id=[])  # warm-up
        model.generate(input_ids=short["ids"], attention_mask=short["mask"], do_sample=True, max_new_tokens=2,
                       top_k=0, pad_token_id=0)
        for _ in range(repeats):  # interleaved, so a busy neighbour slows all three alike
            for k, f in runs.items():
                sync(device); t, w = clock(), time.perf_counter(); f(); sync(device)
                best[k] = min(best[k], clock() - t); wall[k] = min(wall[k], time.perf_counter() - w)
        peak = None
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(); base = torch.cuda.memory_allocated()
            run_loop(0.0); peak_off = torch.cuda.max_memory_allocated() - base
            torch.cuda.reset_peak_memory_stats(); run_loop(0.1); peak_on = torch.cuda.max_memory_allocated() - base
            peak = peak_on - peak_off
    tokens = batch * paths * new_tokens
    weights_bytes = batch * new_tokens * paths * paths * 4
    print(f"\n{name}: {sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, {dtype}, {device}; "
          f"{batch} prompts x G={paths} x {new_tokens} new tokens (prompts <= {prompt_len}), best of {repeats}; "
          f"built in {build_s:.1f}s")
    unit = "GPU s" if device.type == "cuda" else "CPU s"
    print(f"{'sampler':<22}{unit:>10}{'tokens/s':>12}{'vs generate':>14}{'wall s':>10}")
    for k in runs:
        print(f"{k:<22}{best[k]:>10.3f}{tokens / best[k]:>12.1f}{best['model.generate'] / best[k]:>13.2f}x{wall[k]:>10.3f}")
    print(f"weights buffer (B, T, G, G) float32: {weights_bytes / 1024:.1f} KiB"
          + (f"; measured extra peak memory of blend on vs off: {peak / 1024:.1f} KiB" if peak is not None else ""))
    del model
    return {"blend_overhead": round(best["blend on (lam=0.1)"] / best["blend off (lam=0)"], 3),
            "loop_vs_generate": round(best["model.generate"] / best["blend off (lam=0)"], 3)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats (default: 5; 2 for the large model on a CPU)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1: CPU time measures the work alone)")
    parser.add_argument("--real", action="store_true", help="also SmolLM2-135M-Instruct (smollm2-135m) on real chat prompts")
    parser.add_argument("--trainer-shape", action="store_true", help="only SmolLM2-135M-Instruct at a GRPO batch's shape: "
                        "4 GSM8K chat prompts (hash format) x G=8 x 160 new tokens, one repeat unless --repeats")
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cpu": torch.set_num_threads(args.threads)
    logging.set_verbosity_error()
    gpu = device.type == "cuda"
    dtype = torch.bfloat16 if gpu and torch.cuda.is_bf16_supported() else torch.float32
    if args.trainer_shape:
        import sys
        from pathlib import Path
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from generation import prompts_for
        from oneshot_reason.models import load_policy
        model, tok = load_policy("smollm2-135m", device=str(device))
        source, prompts = prompts_for(4)
        tok.padding_side = "left"
        enc = tok([tok.apply_chat_template(q, tokenize=False, add_generation_prompt=True) for q in prompts],
                  return_tensors="pt", padding=True, add_special_tokens=False)
        result = bench(f"SmolLM2-135M-Instruct ({source} chat prompts)", None, 4, 8, 160, enc["input_ids"].shape[1],
                       args.repeats or 1, device, None, model=model.eval(), prompts=(enc["input_ids"], enc["attention_mask"]))
        print(json.dumps({"smollm2-135m, 4 x 8 x 160": result}))
        return
    bench("tiny (random, Qwen2 shape)", small_config(), 8, 8, 64, 32, args.repeats or 5, device, dtype)
    large = (8, 8, 64, 64) if gpu else (2, 8, 32, 32)
    result = bench("Qwen2.5-0.5B shape (random)", qwen25_05b_config(), *large, args.repeats or (5 if gpu else 2),
                   device, dtype)
    print(json.dumps(result))
    if args.real:
        from oneshot_reason.data import synthetic_problems
        from oneshot_reason.models import load_policy
        model, tok = load_policy("smollm2-135m", device=str(device))
        model.eval()
        batch, paths, new_tokens = (8, 8, 64) if gpu else (2, 8, 64)
        chats = [tok.apply_chat_template(p, tokenize=False, add_generation_prompt=True)
                 for p in synthetic_problems(batch, seed=0, split="test", format="hash")["prompt"]]
        tok.padding_side = "left"
        enc = tok(chats, return_tensors="pt", padding=True, add_special_tokens=False)
        real = bench("SmolLM2-135M-Instruct (real weights, chat prompts)", None, batch, paths, new_tokens, enc["input_ids"].shape[1],
                     args.repeats or (5 if gpu else 2), device, None, model=model, prompts=(enc["input_ids"], enc["attention_mask"]))
        print(json.dumps({"smollm2-135m": real}))


if __name__ == "__main__":
    main()
