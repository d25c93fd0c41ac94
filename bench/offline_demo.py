"""The offline demo over several seeds: held-out accuracy before and after `oneshot-reason train`, and wall time.

    python bench/offline_demo.py [--seeds 0 1 2] [--algo grpo] [--out bench/results/offline_demo.json] [-- extra train flags]

Each seed runs the README's first command (`oneshot-reason train`, the embedded tiny model on synthetic problems) in a
fresh process into `outputs/demo-<algo>-seed<N>`, then the held-out accuracy curve (from the run's TensorBoard reward
scalars) and the summary are gathered into one small JSON file that the docs plot. Last line: JSON of the means.
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
        try:
            scalars = read_scalars(out)
            reward = scalars[scalars.tag.str.endswith("train/reward")]
            summary["reward_curve"] = [[int(s), float(v)] for s, v in zip(reward.step, reward.value)]
        except Exception as e: # the curve is a nicety; the summary is what counts
            summary["reward_curve"] = []; print(f"no reward curve for seed {seed}: {e}")
        runs.append(summary)
        print(json.dumps({k: v for k, v in summary.items() if k != "reward_curve"}), flush=True)
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
