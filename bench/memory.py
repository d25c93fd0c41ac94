"""Where the memory of a GRPO step goes, on the real model: peak resident memory per phase, and the full-logits
scoring that the fused log-prob head avoids.

    python bench/memory.py [--model smollm2-135m] [--prompts 4] [--generations 8] [--tokens 128] [--lora 16]
                           [--out bench/results/memory.json]

A thread samples the process's resident set size (RSS) every 5 ms; each phase reports the RSS when it starts and
its peak. The phases: loading the model (LoRA, the precision `--dtype auto` picks); generating prompts x
generations completions; scoring them with gradients (forward and backward) through the package's fused head, which
computes the log-probabilities chunk by chunk without keeping the (tokens x vocabulary) logits, and the same through
full logits (`model(...).logits`, then `log_softmax` and a gather: what a plain implementation does); then one whole
`OneShotTrainer` step at the same size. Run it on an otherwise idle machine: RSS is the whole process's.
"""
import argparse, json, os, platform, threading, time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
GB = 1024 ** 3

class Peak:
    "The RSS when the block starts and its peak inside it (sampled every 5 ms), in GiB."
    def __init__(self, name: str, phases: list): self.name, self.phases, self.proc = name, phases, psutil.Process()
    def _watch(self):
        while not self.done.is_set():
            self.peak = max(self.peak, self.proc.memory_info().rss); time.sleep(0.005)
    def __enter__(self):
        import gc; gc.collect()
        self.start = self.peak = self.proc.memory_info().rss
        self.done, self.t0 = threading.Event(), time.time()
        self.thread = threading.Thread(target=self._watch, daemon=True); self.thread.start()
        return self
    def __exit__(self, *exc):
        self.done.set(); self.thread.join()
        row = {"phase": self.name, "rss_start_gb": round(self.start / GB, 2), "rss_peak_gb": round(self.peak / GB, 2),
               "added_gb": round((self.peak - self.start) / GB, 2), "seconds": round(time.time() - self.t0, 1)}
        self.phases.append(row)
        print(f"{row['phase']:44s} start {row['rss_start_gb']:6.2f} GiB  peak {row['rss_peak_gb']:6.2f} GiB  "
              f"(+{row['added_gb']:.2f})  {row['seconds']:.0f} s", flush=True)

PHASES = ("generate", "body", "fused", "plain", "step", "step+checkpointing") # each measured in a fresh process

def phase(a, name: str) -> list:
    "Measure one phase in this process (a fresh one): load, then the phase; returns the rows."
    import torch
    from oneshot_reason.data import synthetic_problems
    from oneshot_reason.models import load_policy
    from oneshot_reason.rewards import reward_preset
    from oneshot_reason.config import OneShotConfig
    from oneshot_reason.trainer import OneShotTrainer, logps_from_hidden
    phases = []
    with Peak("load the model (LoRA)", phases):
        model, tok = load_policy(a.model, lora=a.lora, device="cpu")
    seqs_file = Path(a.workdir) / "seqs.pt"
    if name == "generate":
        problems = synthetic_problems(a.prompts, seed=0, split="train", format="hash")
        chats = [tok.apply_chat_template(q, tokenize=False, add_generation_prompt=True) for q in problems["prompt"]]
        enc = tok(chats, return_tensors="pt", padding=True, add_special_tokens=False)
        torch.manual_seed(0)
        with Peak(f"generate {a.prompts}x{a.generations} completions of {a.tokens} tokens", phases), torch.no_grad():
            seqs = model.generate(**enc, do_sample=True, temperature=1.0, max_new_tokens=a.tokens, min_new_tokens=a.tokens,
                                  num_return_sequences=a.generations, pad_token_id=tok.pad_token_id)
        torch.save({"seqs": seqs, "K": seqs.shape[1] - enc["input_ids"].shape[1]}, seqs_file)
        phases[-1]["vocab_size"] = model.config.vocab_size # for the size of the full logits
        return phases
    if name.endswith("+checkpointing"): # recompute each layer's activations in the backward pass instead of keeping them
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        name = name.split("+")[0]
    if name == "step":
        config = OneShotConfig(output_dir=str(Path(a.workdir) / "run"), num_generations=a.generations,
                               per_device_train_batch_size=a.prompts * a.generations, gradient_accumulation_steps=1,
                               max_completion_length=a.tokens, max_steps=1, learning_rate=1e-4, beta=0.0, format="hash",
                               use_cpu=True, bf16=False, report_to=[], save_strategy="no", save_final_model=False,
                               log_completions_jsonl=False, logging_steps=1, disable_tqdm=True,
                               gradient_checkpointing=model.is_gradient_checkpointing)
        trainer = OneShotTrainer(model, reward_preset("hash"), args=config, train_dataset=synthetic_problems(64, seed=0, split="train", format="hash"),
                                 processing_class=tok)
        with Peak("one OneShotTrainer step (generate, score, update)" + (", checkpointing" if model.is_gradient_checkpointing else ""), phases):
            trainer.train()
        return phases
    saved = torch.load(seqs_file); seqs, K = saved["seqs"], saved["K"]
    mask = torch.ones_like(seqs)
    body = model.get_base_model().model if hasattr(model, "get_base_model") else model.model
    head = model.get_output_embeddings()
    if name == "body":
        with Peak("forward + backward of the 30 layers (no head)", phases):
            body(input_ids=seqs, attention_mask=mask).last_hidden_state[:, -K - 1:-1].float().square().mean().backward()
    elif name == "fused":
        with Peak("layers + fused log-prob head (package), with grad", phases):
            h = body(input_ids=seqs, attention_mask=mask).last_hidden_state
            logps, _ = logps_from_hidden(h, head, seqs, mask, K)
            logps.sum().backward()
        torch.save(logps.detach(), Path(a.workdir) / "fused.pt")
    elif name == "plain":
        with Peak("layers + full logits and log_softmax, with grad", phases):
            logits = model(input_ids=seqs, attention_mask=mask).logits[:, -K - 1:-1].float()
            plain = torch.log_softmax(logits, -1).gather(-1, seqs[:, -K:, None]).squeeze(-1)
            plain.sum().backward()
        fused = torch.load(Path(a.workdir) / "fused.pt")
        phases[-1]["fused_vs_plain_max_abs"] = (fused - plain.detach()).abs().max().item()
        print(f"largest |fused - plain| log-prob: {phases[-1]['fused_vs_plain_max_abs']:.2e}", flush=True)
    return phases

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--prompts", type=int, default=4)
    p.add_argument("--generations", type=int, default=8)
    p.add_argument("--tokens", type=int, default=128, help="max_completion_length")
    p.add_argument("--lora", type=int, default=16)
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "memory.json"))
    p.add_argument("--workdir", default="/tmp/oneshot-memory-bench")
    p.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS) # internal: one phase in this process
    a = p.parse_args()
    Path(a.workdir).mkdir(parents=True, exist_ok=True)
    if a.phase:
        (Path(a.workdir) / f"{a.phase}.json").write_text(json.dumps(phase(a, a.phase))); return
    import subprocess, sys, torch
    rows = []
    for name in PHASES:
        subprocess.run([sys.executable, __file__, "--phase", name, *sys.argv[1:]], check=True)
        rows += json.loads((Path(a.workdir) / f"{name}.json").read_text())[1:] # the load row is the same each time
    V = next(r["vocab_size"] for r in rows if "vocab_size" in r)
    result = {"model": a.model, "lora": a.lora, "prompts": a.prompts, "generations": a.generations,
              "max_completion_length": a.tokens, "vocab_size": V,
              "full_logits_float32_gb": round(a.prompts * a.generations * a.tokens * V * 4 / GB, 2),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}", "phases": rows}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True); Path(a.out).write_text(json.dumps(result, indent=1))

if __name__ == "__main__": main()
