"""The offline demo over several seeds: held-out accuracy before and after `oneshot-reason train`, and its wall time.

    python bench/offline_demo.py [--seeds 0 1 2] [--algo grpo] [--no-curve] [--out bench/results/offline_demo.json] [-- extra train flags]

Each seed runs the README's first command (`oneshot-reason train`: the embedded tiny model on synthetic problems) in a
fresh process into `outputs/demo-<algo>-seed<N>`, timed from outside: the wall time from launching the command to its
exit, interpreter start, imports, model loading, both held-out evaluations and the closing summary included (what a
user waits for after pressing Enter). The CPU time of the process and the machine's load average (`os.getloadavg()`,
before and after) are recorded with it: on a busy machine the wall time grows, the accuracy does not.

Then, unless `--no-curve`, the same run again with a held-out evaluation every 5 steps (`--eval-steps 5`, into
`outputs/demo-<algo>-seed<N>-curve`, not timed): the held-out evaluations neither draw from nor reset the training's
random numbers, so this run trains exactly like the timed one and its `heldout.jsonl` is the timed run's accuracy
curve (the script checks that both end at the same accuracy). The sampled correctness from the TensorBoard logs and the
summaries go into one small JSON file that the docs plot. Prints the README's table (markdown), then JSON of the means.

The headline accuracy is the lenient one (the final answer anywhere in the completion, `check_answer` on the whole of
it), as the demo has reported from the start: `accuracy_before` / `accuracy_after` in the results are the summary's
`accuracy_lenient_before` / `accuracy_lenient_after`, `heldout_curve` its curve; the strict accuracy (the answer
inside `<answer>` tags) is recorded beside it (`accuracy_strict_*`, `heldout_curve_strict`, `mean_accuracy_strict_*`).
"""
import argparse, json, os, resource, shutil, statistics, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def _command() -> list[str]:
    "The console script as a user types it, or the same entry point through this interpreter when it is not installed."
    exe = shutil.which("oneshot-reason")
    return [exe] if exe else [sys.executable, "-m", "oneshot_reason.cli"]

def _timed(cmd: list[str]) -> dict:
    "Run `cmd`, timed from outside: wall seconds, CPU seconds of the process, load average before and after."
    load_before, usage = os.getloadavg(), resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    return {"command_seconds": round(seconds, 1), "cpu_seconds": round(cpu, 1),
            "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in os.getloadavg()]}

def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--algo", default="grpo")
    p.add_argument("--no-curve", action="store_true", help="skip the second, untimed run with a held-out evaluation every 5 steps")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "offline_demo.json")
    p.add_argument("extra", nargs="*", help="more `oneshot-reason train` flags (after --)")
    args = p.parse_args()
    from oneshot_reason.core import read_jsonl
    from oneshot_reason.runlog import read_scalars
    runs = []
    for seed in args.seeds:
        out = ROOT / "outputs" / f"demo-{args.algo}-seed{seed}"
        shutil.rmtree(out, ignore_errors=True) # a fresh run, not a resumed one
        base = [*_command(), "train", "--algo", args.algo, "--seed", str(seed)]
        cmd = [*base, "--output-dir", str(out), *args.extra]
        print("$", " ".join(cmd), flush=True)
        timing = _timed(cmd)
        summary = json.loads((out / "summary.json").read_text())
        summary.update(timing, accuracy_before=summary["accuracy_lenient_before"], accuracy_after=summary["accuracy_lenient_after"])
        curve_dir = out
        if not args.no_curve:
            curve_dir = out.with_name(out.name + "-curve")
            shutil.rmtree(curve_dir, ignore_errors=True)
            subprocess.run([*base, "--output-dir", str(curve_dir), "--eval-steps", "5", *args.extra], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            curve_summary = json.loads((curve_dir / "summary.json").read_text())
            if curve_summary["accuracy_lenient_after"] != summary["accuracy_after"]:
                print(f"warning: seed {seed}: the curve run ended at {curve_summary['accuracy_lenient_after']}, the timed run at "
                      f"{summary['accuracy_after']}; the curve is of the second run", flush=True)
        records = read_jsonl(curve_dir / "heldout.jsonl") if (curve_dir / "heldout.jsonl").exists() else []
        for kind, key in (("lenient", "heldout_curve"), ("strict", "heldout_curve_strict")):
            middle = [[int(r["step"]), float(r[f"accuracy_{kind}"])] for r in records if 0 < r["step"] < summary["steps"]] # the summary holds both ends
            summary[key] = [[0, summary[f"accuracy_{kind}_before"]], *middle, [summary["steps"], summary[f"accuracy_{kind}_after"]]]
        scalars = read_scalars(out)
        reward = scalars[scalars.tag.str.endswith("rewards/oneshot_correctness/mean")]
        summary["correctness_curve"] = [[int(s), round(float(v), 4)] for s, v in zip(reward.step, reward.value)]
        runs.append(summary)
        print(json.dumps({k: v for k, v in summary.items() if k not in ("heldout_curve", "heldout_curve_strict", "correctness_curve")}), flush=True)
    gain = [r["accuracy_after"] - r["accuracy_before"] for r in runs]
    result = {"algo": args.algo, "seeds": args.seeds, "command": " ".join(["oneshot-reason", "train", *args.extra]),
              "cpu_count": os.cpu_count(), "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "runs": runs,
              "mean_accuracy_before": statistics.mean(r["accuracy_before"] for r in runs),
              "mean_accuracy_after": statistics.mean(r["accuracy_after"] for r in runs),
              "mean_accuracy_strict_before": statistics.mean(r["accuracy_strict_before"] for r in runs),
              "mean_accuracy_strict_after": statistics.mean(r["accuracy_strict_after"] for r in runs),
              "mean_gain_points": 100 * statistics.mean(gain),
              "min_gain_points": 100 * min(gain),
              "mean_command_seconds": statistics.mean(r["command_seconds"] for r in runs),
              "mean_wall_seconds": statistics.mean(r["wall_seconds"] for r in runs),
              "mean_cpu_seconds": statistics.mean(r["cpu_seconds"] for r in runs),
              "max_loadavg_1min": max(max(r["loadavg_before"][0], r["loadavg_after"][0]) for r in runs)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    steps = sorted({r["steps"] for r in runs})
    print(f"\n{', '.join(map(str, steps))} steps, {os.cpu_count()} CPUs, 1-minute load average up to {result['max_loadavg_1min']:.1f} "
          f"(wall time: launch to exit, as a user waits for it)\n")
    print("| seed | held-out before (lenient) | after | gain | strict before | after | wall time |\n| --- | --- | --- | --- | --- | --- | --- |")
    for s, r in zip(args.seeds, runs):
        print(f"| {s} | {r['accuracy_before']:.1%} | {r['accuracy_after']:.1%} | {100 * (r['accuracy_after'] - r['accuracy_before']):+.1f} points "
              f"| {r['accuracy_strict_before']:.1%} | {r['accuracy_strict_after']:.1%} | {r['command_seconds']:.0f} s |")
    print(f"| **mean** | **{result['mean_accuracy_before']:.1%}** | **{result['mean_accuracy_after']:.1%}** | "
          f"**{result['mean_gain_points']:+.1f} points** | **{result['mean_accuracy_strict_before']:.1%}** | "
          f"**{result['mean_accuracy_strict_after']:.1%}** | **{result['mean_command_seconds']:.0f} s** |\n")
    print(json.dumps({k: v for k, v in result.items() if k.startswith(("mean", "min", "max"))}))

if __name__ == "__main__":
    main()
