"""A model's GSM8K baseline, greedy and zero-shot, in chunks that survive being killed.

    python bench/gsm8k_baseline.py --model qwen2.5-coder-0.5b --out bench/runs/qwen05_gsm8k \
        [--data-dir ../shared/data] [--format hash] [--max-new-tokens 512] [--limit N] [--chunk 16] [--batch-size 16]
    python bench/gsm8k_baseline.py --out bench/runs/qwen05_gsm8k --summary bench/results/qwen_baseline.json
    python bench/gsm8k_baseline.py --model qwen2.5-coder-0.5b --lengths 20 --max-new-tokens 768
    python bench/gsm8k_baseline.py --model qwen2.5-coder-0.5b --engine ctranslate2 --out ~/.cache/oneshot_reason/bench/qwen05_ct2 \
        --format boxed --chunk 64 --batch-size 32
    python bench/gsm8k_baseline.py --out ~/.cache/oneshot_reason/bench/qwen05_ct2 --summary bench/results/qwen_baseline.json \
        --records bench/results/qwen_baseline_records.jsonl.gz

`--engine ctranslate2` generates with CTranslate2 (`--dtype int8`, its default, or float32) instead of torch; the
settings file records the engine, and a folder holds the records of one engine only. `--records` keeps a gzipped
copy of the records beside the summary (the run folder may not outlive the machine).

Each chunk of problems is one `oneshot_reason.evaluate.evaluate` call (the package's generation, grading, strict
and lenient verdicts); its records are appended to `<out>/records.jsonl` with the problem's index, the chunk's new
tokens and generation seconds to `<out>/chunks.jsonl`. A rerun with the same settings skips the problems already
there, so a killed run continues where it stopped. `--summary` reads the folder (finished or not) and writes the
accuracies (strict: the answer after `####` in the hash format; lenient: the final answer anywhere), truncation,
tokens/s, the settings and the machine's load. `--lengths N` only prints the token lengths of N completions, to
choose `--max-new-tokens`.
"""
import argparse, json, os, platform, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def read_jsonl(path: Path) -> list[dict]:
    if not path.exists(): return []
    rows = []
    for line in path.read_text().splitlines():
        try: rows.append(json.loads(line))
        except ValueError: pass # a line cut off by a kill
    return rows

def append(path: Path, rows: list[dict]):
    with open(path, "a") as f:
        for r in rows: f.write(json.dumps(r) + "\n")
        f.flush(); os.fsync(f.fileno())

def wilson(k: int, n: int) -> list[float]:
    "95% Wilson interval of k successes in n."
    if n == 0: return [0.0, 0.0]
    z, p = 1.96, k / n
    centre, half = (p + z * z / (2 * n)) / (1 + z * z / n), z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5 / (1 + z * z / n)
    return [round(centre - half, 4), round(centre + half, 4)]

def summarise(out: Path, dest: Path | None, note: str | None, records_copy: Path | None = None) -> dict:
    settings = json.loads((out / "settings.json").read_text())
    records = {r["index"]: r for r in read_jsonl(out / "records.jsonl")}
    chunks = read_jsonl(out / "chunks.jsonl")
    n = len(records)
    strict = sum(bool(r["strict"][0]) for r in records.values())
    lenient = sum(bool(r["correct"][0]) for r in records.values())
    truncated = sum(bool(r["truncated"][0]) for r in records.values())
    tokens, seconds = sum(c["new_tokens"] for c in chunks), sum(c["generation_seconds"] for c in chunks)
    summary = {"model": settings["model"], "benchmark": "gsm8k test", "n_problems": n, "n_total": settings["n_total"],
               "complete": n == settings["n_total"],
               "accuracy_strict": round(strict / n, 4) if n else None, "correct_strict": strict, "strict_95ci": wilson(strict, n),
               "accuracy_lenient": round(lenient / n, 4) if n else None, "correct_lenient": lenient, "lenient_95ci": wilson(lenient, n),
               "truncated": truncated, "new_tokens": tokens, "generation_seconds": round(seconds, 1),
               "tokens_per_second": round(tokens / seconds, 2) if seconds else None,
               "mean_new_tokens": round(tokens / n, 1) if n else None,
               "settings": settings, "note": note, "records": str(records_copy or out)}
    if records_copy is not None:
        import gzip
        with gzip.open(records_copy, "wt", encoding="utf-8") as f:
            for i in sorted(records): f.write(json.dumps(records[i]) + "\n")
    if dest is not None:
        dest.parent.mkdir(parents=True, exist_ok=True); dest.write_text(json.dumps(summary, indent=2) + "\n")
    return summary

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--out", type=Path, required=True, help="the run folder (records.jsonl, chunks.jsonl, settings.json)")
    ap.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--format", default="hash")
    ap.add_argument("--max-new-tokens", type=int, default=512)
    ap.add_argument("--limit", type=int, default=None, help="only the first N test problems")
    ap.add_argument("--chunk", type=int, default=16, help="problems per evaluate call (and per append)")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: OMP_NUM_THREADS)")
    ap.add_argument("--lengths", type=int, default=0, help="only print the completion lengths of this many problems")
    ap.add_argument("--summary", type=Path, default=None, help="write the summary of --out to this file and stop")
    ap.add_argument("--note", default=None, help="a line for the summary (e.g. the machine's load)")
    ap.add_argument("--engine", default="torch", choices=["torch", "ctranslate2"])
    ap.add_argument("--dtype", default="auto", help="torch: the weights' dtype (auto); ctranslate2: int8 (auto) or float32")
    ap.add_argument("--records", type=Path, default=None, help="with --summary: also write the records, gzipped, to this file")
    a = ap.parse_args()
    if a.summary is not None:
        print(json.dumps({k: v for k, v in summarise(a.out, a.summary, a.note, a.records).items() if k != "settings"}, indent=1)); return

    import torch
    if a.threads: torch.set_num_threads(a.threads)
    from oneshot_reason.evaluate import evaluate, heldout_problems
    from oneshot_reason.models import load_policy
    data = heldout_problems("gsm8k", n=a.limit, format=a.format, data_path=a.data_dir / "gsm8k" / "test.jsonl")
    if a.engine == "torch": model, tok = load_policy(a.model, device="cpu", dtype=a.dtype)
    else: model, tok = a.model, None # CTranslate2 converts the model once and loads its own copy
    engine_dtype = {"engine": a.engine, "dtype": str(next(model.parameters()).dtype).removeprefix("torch.") if a.engine == "torch"
                    else ("int8" if a.dtype == "auto" else a.dtype)}
    if a.lengths:
        res = evaluate(model, tok, data.select(range(a.lengths)), max_new_tokens=a.max_new_tokens, batch_size=a.batch_size,
                       format=a.format, progress=False)
        lengths = sorted(len(tok(r["completions"][0], add_special_tokens=False).input_ids) for r in res.records)
        print("lengths:", lengths, "truncated:", res.n_truncated, "strict", sum(r["strict"][0] for r in res.records),
              "lenient", sum(r["correct"][0] for r in res.records), f"{res.new_tokens / res.generation_seconds:.2f} tok/s")
        return
    a.out.mkdir(parents=True, exist_ok=True)
    settings = {"model": a.model, "format": a.format, "max_new_tokens": a.max_new_tokens, "decoding": "greedy",
                "prompt": "zero-shot chat: the format's system prompt, then the question", "batch_size": a.batch_size,
                **engine_dtype, "n_total": len(data),
                "torch_threads": torch.get_num_threads(), "machine": f"{platform.machine()}, {os.cpu_count()} cores"}
    path = a.out / "settings.json"
    if path.exists():
        old = json.loads(path.read_text())
        keys = ("model", "format", "max_new_tokens", "engine", "dtype") # a folder of an earlier version: torch
        same = all(old.get(k, "torch" if k == "engine" else None) == settings[k] for k in keys)
        if not same: sys.exit(f"{a.out} holds a run with other settings ({old}); use another --out")
    else: path.write_text(json.dumps(settings, indent=2) + "\n")
    done = {r["index"] for r in read_jsonl(a.out / "records.jsonl")}
    todo = [i for i in range(len(data)) if i not in done]
    print(f"{len(done)} done, {len(todo)} to go", flush=True)
    for s in range(0, len(todo), a.chunk):
        idx = todo[s:s + a.chunk]
        start = time.time()
        res = evaluate(model, tok, data.select(idx), max_new_tokens=a.max_new_tokens, batch_size=a.batch_size,
                       format=a.format, progress=False, seed=0, engine=a.engine,
                       **({"dtype": engine_dtype["dtype"]} if a.engine == "ctranslate2" else {}))
        rows = [{**r, "index": i} for i, r in zip(idx, res.records)] # the problem's index in the test set
        for r in rows: r.pop("prompt", None)
        append(a.out / "records.jsonl", rows)
        append(a.out / "chunks.jsonl", [{"first": idx[0], "n": len(idx), "new_tokens": res.new_tokens,
                                         "generation_seconds": round(res.generation_seconds, 2), "wall": round(time.time() - start, 1),
                                         "loadavg": os.getloadavg()[0], "time": time.strftime("%H:%M:%S")}])
        print(f"{len(done) + s + len(idx)}/{len(data)}: {res.new_tokens / res.generation_seconds:.2f} tok/s, "
              f"strict {sum(r['strict'][0] for r in rows)}/{len(rows)}, lenient {sum(r['correct'][0] for r in rows)}/{len(rows)}", flush=True)

if __name__ == "__main__":
    main()
