"""Wall time of `oneshot-reason train` (the offline demo: tiny model, synthetic problems) with 1 and 2 torch threads.

Each round runs the command twice in a fresh process, once per thread count (the order alternates between rounds),
with `OMP_NUM_THREADS` and `MKL_NUM_THREADS` set, so torch uses that many intra-op threads. The 1-minute load average
(`os.getloadavg`) is read before and after each run: on a shared machine the answer depends on it, so it is part of
the result. Prints a side-by-side table; the last line is JSON, also written to bench/results/threads.json.

    python bench/threads.py [--rounds 1] [--max-steps N] [--out bench/results/threads.json]
"""
import argparse, json, os, statistics, subprocess, sys, tempfile, time
from pathlib import Path


def run(threads: int, max_steps: int | None) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, "-m", "oneshot_reason.cli", "train", "--output-dir", f"{d}/run", "--json"]
        if max_steps: cmd += ["--max-steps", str(max_steps)]
        load_before, start = os.getloadavg()[0], time.perf_counter()
        res = subprocess.run(cmd, env=env, capture_output=True, text=True)
        seconds, load_after = time.perf_counter() - start, os.getloadavg()[0]
    if res.returncode != 0: raise SystemExit(f"train failed with {threads} threads:\n{res.stderr[-2000:]}")
    summary = json.loads(res.stdout[res.stdout.index("{"):])
    return {"threads": threads, "seconds": round(seconds, 1), "load_before": round(load_before, 2),
            "load_after": round(load_after, 2), "steps": summary.get("steps"),
            "accuracy_strict_after": summary.get("accuracy_strict_after")}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=None, help="shorter runs (default: the demo's own length)")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "threads.json"))
    a = p.parse_args()
    runs = []
    for r in range(a.rounds):
        for threads in ((1, 2) if r % 2 == 0 else (2, 1)):
            runs.append(run(threads, a.max_steps)); print(runs[-1], flush=True)
    med = {t: statistics.median(x["seconds"] for x in runs if x["threads"] == t) for t in (1, 2)}
    print(f"{'threads':>8} {'median s':>9} {'loads (1 min, before runs)':>28}")
    for t in (1, 2):
        print(f"{t:>8} {med[t]:>9.1f} {str([x['load_before'] for x in runs if x['threads'] == t]):>28}")
    result = {"cpu_count": os.cpu_count(), "runs": runs, "median_seconds": med, "ratio_2_over_1": round(med[2] / med[1], 2),
              "command": "oneshot-reason train" + (f" --max-steps {a.max_steps}" if a.max_steps else "")}
    Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
