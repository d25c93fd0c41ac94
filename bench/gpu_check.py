"""One check of the package on a CUDA GPU: the engine `auto` picks, evaluation and a short GRPO run of the embedded
model, and the package's decoding loop (`fast_generate`) against `generate` on a random model of Qwen2.5-0.5B's shape
in bfloat16 (160-token prompts, 256 sampled tokens; each loop twice, the first run warming CUDA up).

    python bench/gpu_check.py          # writes $OUT/gpu_check.json (or /tmp); committed as bench/results/gpu_check.json
"""
import json, os, sys, tempfile, time, traceback
import torch
OUT = os.environ.get("OUT", "/tmp")
res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__}
def save(): open(f"{OUT}/gpu_check.json", "w").write(json.dumps(res, indent=1))
def step(name, fn):
    t = time.time()
    try: res[name] = fn()
    except Exception as e: res[name] = {"error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-1500:]}
    res.setdefault("seconds", {})[name] = round(time.time() - t, 1); save(); print(name, res[name], flush=True)
from oneshot_reason.inference import choose_engine, vllm_available, generate_completions
def engines():
    out = {"auto tiny": choose_engine("auto", "tiny"), "auto saved": choose_engine("auto", "some/folder"), "vllm_available": vllm_available()}
    try: choose_engine("vllm", "some/model")
    except Exception as e: out["vllm refusal"] = str(e)
    return out
step("engines", engines)
def eval_tiny():
    from oneshot_reason.evaluate import evaluate
    r = evaluate("tiny", "synthetic", limit=64, max_new_tokens=64, progress=False)
    return {**r.metrics, "engine": r.engine, "dtype": r.dtype, "tokens_per_second": round(r.tokens_per_second, 1), "device": str(torch.cuda.current_device())}
step("evaluate tiny (auto)", eval_tiny)
def train_tiny():
    from oneshot_reason.runs import train
    from oneshot_reason.console import Console
    s = train(max_steps=4, n_eval=32, output_dir=tempfile.mkdtemp() + "/r", console=Console("quiet"))
    return {k: s.get(k) for k in ("dtype", "compute_dtype", "steps", "accuracy_lenient_before", "accuracy_lenient_after", "wall_seconds")}
step("train tiny 4 steps", train_tiny)
def loops():
    from oneshot_reason.testing import random_lm
    from oneshot_reason.fastgen import fast_generate
    model = random_lm(vocab_size=151936, layers=24, hidden_size=896, intermediate_size=4864, num_attention_heads=14,
                      num_key_value_heads=2, max_position_embeddings=4096, eos_token_id=151645).to("cuda", torch.bfloat16)
    rows = []
    for batch in (32, 128):
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(10, 150000, (batch, 160), generator=g).cuda(); mask = torch.ones_like(ids)
        for name in ("generate", "fast_generate", "generate", "fast_generate"):
            torch.manual_seed(0); torch.cuda.synchronize(); t = time.perf_counter()
            kw = dict(max_new_tokens=256, do_sample=True, temperature=0.7, top_k=0, top_p=1.0, pad_token_id=0, eos_token_id=151645)
            with torch.no_grad():
                out = model.generate(input_ids=ids, attention_mask=mask, **kw) if name == "generate" else fast_generate(model, input_ids=ids, attention_mask=mask, **kw)
            torch.cuda.synchronize(); s = time.perf_counter() - t
            rows.append({"loop": name, "batch": batch, "new_tokens": int((out[:, 160:] != 0).sum()), "seconds": round(s, 2),
                         "tokens_per_second": round(int((out[:, 160:] != 0).sum()) / s, 1)})
            print(rows[-1], flush=True)
    return {"model": "random weights of Qwen2.5-0.5B's shape, bfloat16", "prompt": 160, "max_new_tokens": 256, "rows": rows}
step("decoding loops on CUDA", loops)
