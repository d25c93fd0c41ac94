"""A roofline for one GRPO step: the FLOPs and bytes of each phase, this machine's limits, and how close each phase gets.

    python bench/roofline.py [--model smollm2-135m] [--prompts 4] [--generations 8] [--max-new-tokens 160]
                             [--lora 16] [--dtype float32] [--micro-batch 8] [--no-gradient-checkpointing]
                             [--threads 1] [--out bench/results/roofline.json]
    python bench/roofline.py --prompts 1 --generations 4 --max-new-tokens 16   # a quick look

In one process: (1) the machine's limits: `torch.matmul` throughput in float32 and bfloat16 on the model's shapes
(decode: batch rows x hidden @ hidden x intermediate; prefill/training: thousands of rows; the vocabulary head) and
memory bandwidth (a 256 MB tensor copy, bytes read + written); (2) one GRPO step of the model with LoRA, phase by
phase, on the first GSM8K test questions (chat prompts; synthetic problems without a local copy):

* generation, with `model.generate` (before) and with `fastgen.fast_generate` (after), sampled at `--temperature`
  (the FLOPs counted are those each computes: `fast_generate` prefills each prompt once and skips ended rows);
* forward for the old (and with `--ref`, the reference) log-probs, no gradient, micro-batches of `--micro-batch` rows;
* loss and backward: forward with gradient, clipped GRPO loss, backward (gradient checkpointing recomputes the forward);
* optimizer: AdamW over the LoRA weights.

FLOPs are counted from the model's config: 2 x (weights of the matmuls) per token through the layers, the vocabulary
head only where logits are needed, attention 4 x heads x head_dim x keys per token and layer (causal: half the square
in a prefill); backward with frozen base weights = 1 forward (input gradients) + the LoRA weight gradients, + 1 forward
recomputed under gradient checkpointing. Bytes: the weights read once per forward call (per decoding step), the KV
cache read once per decoding step. Each phase's achieved FLOP/s is divided by the best measured matmul throughput of
the phase's dtype and shape, its bytes/s by the measured bandwidth. All times are the process's CPU seconds with one
torch thread (`--threads 1`), limits and phases alike, so that a shared machine's load does not skew the fractions. The table prints both; the JSON keeps everything.
"""
import argparse, json, os, platform, sys, time

clock = time.process_time  # CPU seconds of this process: with one torch thread, what the work costs, whatever the neighbours do
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))


def matmul_flops(m: int, k: int, n: int, dtype, seconds: float = 1.0) -> float:
    "Achieved FLOP/s of (m x k) @ (k x n) in `dtype`, repeated for about `seconds`."
    import torch
    a, b = torch.randn(m, k).to(dtype), torch.randn(k, n).to(dtype)
    a @ b
    t, reps = clock(), 0
    while clock() - t < seconds:
        a @ b; reps += 1
    return 2 * m * k * n * reps / (clock() - t)


def bandwidth(megabytes: int = 256, repeats: int = 5) -> float:
    "Bytes/s of copying a large float32 tensor (read + write), best of `repeats`."
    import torch
    src = torch.randn(megabytes * 2 ** 20 // 4); dst = torch.empty_like(src)
    dst.copy_(src); best = 0.0
    for _ in range(repeats):
        t = clock(); dst.copy_(src); best = max(best, 2 * src.numel() * 4 / (clock() - t))
    return best


def shapes(config) -> dict:
    "The model's sizes from its config."
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    kv = getattr(config, "num_key_value_heads", heads)
    d, inter, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    per_layer = d * heads * head_dim * 2 + 2 * d * kv * head_dim + 3 * d * inter  # q, o, k, v, gate/up/down
    return dict(layers=layers, hidden=d, heads=heads, kv_heads=kv, head_dim=head_dim, intermediate=inter,
                vocab=config.vocab_size, layer_weights=layers * per_layer, head_weights=d * config.vocab_size)


def forward_flops(s: dict, tokens: int, logit_tokens: int, attention_pairs: int, lora_params: int = 0) -> float:
    "FLOPs of a forward pass: `tokens` through the layers, `logit_tokens` through the head, `attention_pairs` query-key pairs."
    return (2 * (s["layer_weights"] + lora_params) * tokens + 2 * s["head_weights"] * logit_tokens
            + 4 * s["heads"] * s["head_dim"] * attention_pairs * s["layers"])


def generation_cost(s: dict, rows: int, prompt: int, steps_rows: list[int], weight_bytes: int, kv_bytes_per_token: int,
                    lora_params: int) -> tuple[float, float]:
    "(FLOPs, bytes) of a prefill of rows x prompt tokens then one step per entry of steps_rows (the rows computed)."
    flops = forward_flops(s, rows * prompt, rows, rows * prompt * (prompt + 1) // 2, lora_params)
    nbytes = weight_bytes + rows * prompt * kv_bytes_per_token
    for t, n in enumerate(steps_rows):
        keys = prompt + t + 1
        flops += forward_flops(s, n, n, n * keys, lora_params)
        nbytes += weight_bytes + n * keys * kv_bytes_per_token
    return flops, nbytes


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--prompts", type=int, default=4)
    p.add_argument("--generations", type=int, default=8)
    p.add_argument("--max-new-tokens", type=int, default=160)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--lora", type=int, default=16)
    p.add_argument("--dtype", default="float32", help="the policy's dtype (bfloat16 is emulated, ~40x slower, on CPUs without AVX512-BF16/AMX)")
    p.add_argument("--micro-batch", type=int, default=8)
    p.add_argument("--ref", action="store_true", help="also a reference-model forward (beta > 0)")
    p.add_argument("--no-gradient-checkpointing", action="store_true")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "roofline.json"))
    a = p.parse_args()
    import torch
    torch.set_num_threads(a.threads)
    from generation import prompts_for
    from oneshot_reason.fastgen import cpu_has_native_bf16, fast_generate
    from oneshot_reason.models import load_policy
    load0 = os.getloadavg()[0]

    model, tok = load_policy(a.model, lora=a.lora, dtype=a.dtype)
    s = shapes(model.config)
    B = a.prompts * a.generations
    dtype = next(model.parameters()).dtype
    elem = torch.finfo(dtype).bits // 8
    lora_params = sum(q.numel() for n, q in model.named_parameters() if "lora_" in n)
    weight_bytes = (s["layer_weights"] + s["head_weights"]) * elem
    kv_bytes_per_token = 2 * s["layers"] * s["kv_heads"] * s["head_dim"] * elem

    # (1) the machine's limits
    limits = {}
    for name in ("float32", "bfloat16"):
        dt = getattr(torch, name)
        limits[name] = {"decode": matmul_flops(B, s["hidden"], s["intermediate"], dt),
                        "head": matmul_flops(B, s["hidden"], s["vocab"], dt, 0.5),
                        "prefill": matmul_flops(2048, s["hidden"], s["intermediate"], dt, 1.0 if name == "float32" else 0.3)}
        print(f"matmul {name}: " + ", ".join(f"{k} {v / 1e9:.1f} GFLOP/s" for k, v in limits[name].items()), flush=True)
    bw = bandwidth()
    print(f"memory bandwidth (copy): {bw / 1e9:.1f} GB/s", flush=True)
    peak_small = max(limits[str(dtype).removeprefix("torch.")][k] for k in ("decode", "head"))
    peak_large = limits[str(dtype).removeprefix("torch.")]["prefill"]

    # (2) one step, phase by phase
    source, questions = prompts_for(a.prompts)
    texts = [tok.apply_chat_template(q, tokenize=False, add_generation_prompt=True) for q in questions]
    tok.padding_side = "left"
    enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    enc = {k: v.repeat_interleave(a.generations, 0) for k, v in enc.items()}
    P = enc["input_ids"].shape[1]
    eos = model.generation_config.eos_token_id
    eos = [eos] if isinstance(eos, int) else list(eos)
    sample = dict(do_sample=True, temperature=a.temperature, top_k=0, top_p=1.0) if a.temperature > 0 else dict(do_sample=False)
    phases = {}

    def completion_lengths(seqs):
        new = seqs[:, P:]
        is_end = torch.isin(new, torch.tensor(eos))
        return torch.where(is_end.any(1), is_end.long().argmax(1) + 1, torch.full((len(new),), new.shape[1])).tolist()

    model.eval()
    for name, fn in (("generation (generate)", lambda: model.generate(**enc, max_new_tokens=a.max_new_tokens,
                                                                        pad_token_id=tok.pad_token_id, **sample)),
                     ("generation (fast_generate)", lambda: fast_generate(model, **enc, max_new_tokens=a.max_new_tokens,
                                                                           pad_token_id=tok.pad_token_id, **sample))):
        torch.manual_seed(0)
        t = clock()
        with torch.no_grad(): seqs = fn()
        sec = clock() - t
        lengths = completion_lengths(seqs)
        steps = seqs.shape[1] - P
        if "fast" in name:  # each prompt prefilled once; rows dropped once an eighth of the batch has ended
            prefilled, computed = a.prompts, [sum(1 for n in lengths if n > t) for t in range(steps - 1)]
        else:
            prefilled, computed = B, [B] * (steps - 1)
        flops, nbytes = generation_cost(s, prefilled, P, computed, weight_bytes, kv_bytes_per_token, lora_params)
        phases[name] = dict(seconds=sec, flops=flops, bytes=nbytes, limit=peak_small, new_tokens=sum(lengths), steps=steps)
        print(f"{name}: {sec:.1f}s, {sum(lengths)} new tokens ({sum(lengths) / sec:.1f}/s), {steps} steps", flush=True)
    C = seqs.shape[1] - P  # training pads the completions to the longest one
    ids = seqs
    mask = torch.cat([enc["attention_mask"], (torch.arange(C)[None] < torch.tensor(lengths)[:, None]).long()], 1)
    pairs = B * (P + C) * (P + C + 1) // 2
    fwd = forward_flops(s, B * (P + C), B * C, pairs, lora_params)
    fwd_bytes = weight_bytes * ((B + a.micro_batch - 1) // a.micro_batch)

    def logps(rows):
        out = model(input_ids=ids[rows], attention_mask=mask[rows], logits_to_keep=C + 1).logits[:, :-1].float()
        return torch.log_softmax(out, -1).gather(-1, ids[rows, P:, None]).squeeze(-1)  # (b, C)

    chunks = [slice(i, i + a.micro_batch) for i in range(0, B, a.micro_batch)]
    t = clock()
    with torch.no_grad(): old = torch.cat([logps(r) for r in chunks])
    passes = 2 if a.ref else 1
    if a.ref:
        with torch.no_grad(), model.disable_adapter(): [logps(r) for r in chunks]
    phases["forward (old/ref log-probs)"] = dict(seconds=clock() - t, flops=passes * fwd, bytes=passes * fwd_bytes,
                                                 limit=peak_large)
    print(f"forward: {phases['forward (old/ref log-probs)']['seconds']:.1f}s", flush=True)

    gc = not a.no_gradient_checkpointing
    model.train()
    if gc: model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    advantages = torch.randn(B, generator=torch.Generator().manual_seed(0))
    comp_mask = mask[:, P:].float()
    optim = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=1e-5)
    t = clock()
    for r in chunks:
        new = logps(r)
        ratio = torch.exp(new - old[r])
        loss = -torch.min(ratio * advantages[r, None], ratio.clamp(0.8, 1.28) * advantages[r, None])
        loss = (loss * comp_mask[r]).sum() / comp_mask.sum()
        loss.backward()
    back = fwd * (1 + 1 + (1 if gc else 0)) + 2 * 2 * lora_params * B * (P + C) / 2  # fwd + input grads (+ recompute) + LoRA weight grads
    phases["loss + backward"] = dict(seconds=clock() - t, flops=back, bytes=fwd_bytes * (3 if gc else 2), limit=peak_large)
    print(f"loss + backward: {phases['loss + backward']['seconds']:.1f}s", flush=True)
    t = clock()
    optim.step(); optim.zero_grad(set_to_none=True)
    phases["optimizer"] = dict(seconds=clock() - t, flops=10 * lora_params, bytes=lora_params * 4 * 4 * 2,
                               limit=peak_large)

    for ph in phases.values():
        ph["flop_per_s"] = ph["flops"] / ph["seconds"]
        ph["compute_fraction"] = ph["flop_per_s"] / ph["limit"]
        ph["bytes_per_s"] = ph["bytes"] / ph["seconds"]
        ph["bandwidth_fraction"] = ph["bytes_per_s"] / bw
    step = {"before": sum(v["seconds"] for k, v in phases.items() if k != "generation (fast_generate)"),
            "after": sum(v["seconds"] for k, v in phases.items() if k != "generation (generate)")}
    print(f"\n{a.model} ({str(dtype).removeprefix('torch.')}), LoRA {a.lora} ({lora_params / 1e6:.2f}M), {a.prompts} x {a.generations}"
          f" completions, <= {a.max_new_tokens} new tokens (prompt {P}, longest completion {C}), {a.threads} thread(s), "
          f"gradient checkpointing {'on' if gc else 'off'}; load average {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"{'phase':<30}{'seconds':>9}{'GFLOP':>9}{'GFLOP/s':>9}{'of compute':>12}{'GB/s':>8}{'of bandwidth':>14}")
    for k, v in phases.items():
        print(f"{k:<30}{v['seconds']:>9.1f}{v['flops'] / 1e9:>9.0f}{v['flop_per_s'] / 1e9:>9.1f}{v['compute_fraction']:>11.0%}"
              f"{v['bytes_per_s'] / 1e9:>8.2f}{v['bandwidth_fraction']:>13.1%}")
    print(f"step: {step['before']:.1f}s with generate, {step['after']:.1f}s with fast_generate ({step['before'] / step['after']:.2f}x)")
    result = {"model": a.model, "dtype": str(dtype).removeprefix("torch."), "lora": a.lora, "lora_params": lora_params,
              "prompts": a.prompts, "generations": a.generations, "max_new_tokens": a.max_new_tokens, "prompt_tokens": P,
              "longest_completion": C, "temperature": a.temperature, "gradient_checkpointing": gc, "threads": a.threads,
              "micro_batch": a.micro_batch, "data": source, "shapes": s, "load_average": [load0, os.getloadavg()[0]],
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, native bf16: {cpu_has_native_bf16()}, torch {torch.__version__}",
              "matmul_flop_per_s": limits, "bandwidth_bytes_per_s": bw, "phases": phases, "step_seconds": step}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True); Path(a.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__": main()
