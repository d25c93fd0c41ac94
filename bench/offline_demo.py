"""The offline demo over several seeds: held-out accuracy before and after `oneshot-reason train`, and wall time.

    python bench/offline_demo.py [--seeds 0 1 2] [--algo grpo] [--out bench/results/offline_demo.json] [-- extra train flags]

Each seed runs the README's first command (`oneshot-reason train`, the embedded tiny model on synthetic problems) in a
fresh process into `outputs/demo-<algo>-seed<N>`, then the held-out accuracy curve (`heldout.jsonl`, every `--eval-steps`), the
sampled correctness from the TensorBoard logs and the summary are gathered into one small JSON file that the docs plot. Last line: JSON of the means.
"""
import argparse, json, statistics, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--algo", default="grpo")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "offline_demo.json")
    p.add_argument("extra", nargs="*", help="more `oneshot-reason train` flags (after --)")
    args = p.parse_args()
    from oneshot_reason.core import read_jsonl
    from oneshot_reason.viz import read_scalars
    runs = []
    for seed in args.seeds:
        out = ROOT / "outputs" / f"demo-{args.algo}-seed{seed}"
        cmd = [sys.executable, "-m", "oneshot_reason.cli", "train", "--algo", args.algo, "--seed", str(seed), "--output-dir", str(out), *args.extra]
        print("$", " ".join(cmd), flush=True)
        start = time.time()
        subprocess.run(cmd, check=True)
        summary = json.loads((out / "summary.json").read_text())
        summary["process_seconds"] = round(time.time() - start, 1)
        heldout = [[int(r["step"]), float(r["accuracy"])] for r in read_jsonl(out / "heldout.jsonl")] if (out / "heldout.jsonl").exists() else []
        heldout = [h for h in heldout if 0 < h[0] < summary["steps"]] # the summary holds both ends
        summary["heldout_curve"] = [[0, summary["accuracy_before"]], *heldout, [summary["steps"], summary["accuracy_after"]]]
        scalars = read_scalars(out)
        reward = scalars[scalars.tag.str.endswith("rewards/oneshot_correctness/mean")]
        summary["correctness_curve"] = [[int(s), round(float(v), 4)] for s, v in zip(reward.step, reward.value)]
        runs.append(summary)
        print(json.dumps({k: v for k, v in summary.items() if k not in ("heldout_curve", "correctness_curve")}), flush=True)
    gain = [r["accuracy_after"] - r["accuracy_before"] for r in runs]
    result = {"algo": args.algo, "seeds": args.seeds, "runs": runs,
              "mean_accuracy_before": statistics.mean(r["accuracy_before"] for r in runs),
              "mean_accuracy_after": statistics.mean(r["accuracy_after"] for r in runs),
              "mean_gain_points": 100 * statistics.mean(gain),
              "mean_wall_seconds": statistics.mean(r["wall_seconds"] for r in runs)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"{'seed':>5} {'before':>8} {'after':>8} {'gain':>7} {'wall s':>8}")
    for s, r in zip(args.seeds, runs):
        print(f"{s:>5} {r['accuracy_before']:>8.3f} {r['accuracy_after']:>8.3f} {100*(r['accuracy_after']-r['accuracy_before']):>6.1f}p {r['wall_seconds']:>8.1f}")
    print(json.dumps({k: v for k, v in result.items() if k.startswith("mean")}))

if __name__ == "__main__":
    main()
