"""Does PyTorch's `THP_MEM_ALLOC_ENABLE=1` (transparent huge pages for its large CPU allocations) speed up a LoRA training pass?

    OMP_NUM_THREADS=1 python bench/thp.py [--model qwen2.5-coder-0.5b] [--rounds 2] [--batch 2] [--tokens 256]

Each round runs two fresh processes one after the other, one without the variable and one with it (the order
alternates between rounds), each loading the model with LoRA 16 in float32 and timing `--reps` forward and backward
passes over the same random tokens after one warm-up. Ratios come from one run on the same machine, with its load
noted; they say nothing about another CPU. Results: `bench/results/thp.json`.
"""
import argparse, json, os, statistics, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from engine import machine # the CPU, its instruction sets, torch: what every bench result records


def child(a) -> None:
    "One process: load, warm up, time the passes, print one JSON line."
    import torch
    from oneshot_reason.models import load_policy
    torch.manual_seed(0)
    model, _ = load_policy(a.model, lora=16, dtype="float32", device="cpu")
    ids = torch.randint(100, 20000, (a.batch, a.tokens))
    times = []
    for i in range(a.reps + 1):
        t0 = time.perf_counter()
        model(input_ids=ids, labels=ids).loss.backward()
        model.zero_grad(set_to_none=True)
        if i: times.append(time.perf_counter() - t0) # the first pass warms up
    print(json.dumps({"thp": os.environ.get("THP_MEM_ALLOC_ENABLE") == "1", "seconds": times}), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="qwen2.5-coder-0.5b")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--tokens", type=int, default=256)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "thp.json"))
    a = p.parse_args()
    if a.child: return child(a)
    runs = []
    for r in range(a.rounds):
        for thp in ((False, True) if r % 2 == 0 else (True, False)):
            env = {k: v for k, v in os.environ.items() if k != "THP_MEM_ALLOC_ENABLE"} | ({"THP_MEM_ALLOC_ENABLE": "1"} if thp else {})
            load = os.getloadavg()[0]
            out = subprocess.run([sys.executable, __file__, "--child", "--model", a.model, "--reps", str(a.reps), "--batch", str(a.batch),
                                  "--tokens", str(a.tokens)], env=env, capture_output=True, text=True, check=True).stdout
            row = json.loads(out.strip().splitlines()[-1]) | {"round": r, "load": round(load, 2)}
            runs.append(row)
            print(f"round {r}, THP {'on ' if thp else 'off'}: {', '.join(f'{s:.1f}' for s in row['seconds'])} s a pass (load {load:.1f})", flush=True)
    median = {thp: statistics.median(s for row in runs if row["thp"] == thp for s in row["seconds"]) for thp in (False, True)}
    result = {"model": a.model, "lora": 16, "dtype": "float32", "batch": a.batch, "tokens": a.tokens, "reps": a.reps,
              "machine": machine(), "thp_mode": Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().strip(),
              "runs": runs, "median_seconds_off": round(median[False], 2), "median_seconds_on": round(median[True], 2),
              "speedup_on": round(median[False] / median[True], 3)}
    Path(a.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"median pass: {median[False]:.2f} s without, {median[True]:.2f} s with THP_MEM_ALLOC_ENABLE=1: x{result['speedup_on']:.3f}")


if __name__ == "__main__": main()
