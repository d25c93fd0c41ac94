"""RL on a model that can do grade-school math: GRPO (then LUFFY) on Qwen2.5-Coder-0.5B-Instruct, GSM8K held out with intervals.

    python bench/qwen_gsm8k.py --data-dir ../shared/data [--experiment grpo] [--train-threads 2] [--commit]
    python bench/qwen_gsm8k.py --summary-only

Each experiment of `configs/qwen_gsm8k.yaml` is one `oneshot-reason train` run (LoRA, GSM8K's training set, the
config's format, reward and trainer shape, no evaluation inside it) and a held-out evaluation of its checkpoints:
the first `heldout.n` GSM8K test problems (never trained on), greedy, `heldout.max_new_tokens` tokens, through one
engine for every checkpoint (`heldout.engine`: CTranslate2 int8 on a CPU), at step 0 (the base model) and every
`eval_every` steps up to `max_steps`. Training runs in the background (`train_threads` torch threads, resumed
from its newest checkpoint with `--resume`, which continues it exactly) while this script evaluates each checkpoint
as it appears (`eval_threads` threads): on two cores, one thread each spends the cores best (a second torch thread
costs more than it gives on a busy machine); between evaluations, with one experiment running, `--train-threads 2`.
Killed at any point, it continues where it stopped when run again.

After every evaluation it rewrites `bench/results/qwen_gsm8k.json` (and, with `--commit`, commits it): per
experiment the held-out accuracies (strict: the answer in `\\boxed{}`; lenient: the final answer anywhere) with each
problem's verdicts, the change from step 0 with a 95% paired bootstrap interval over the problems, and per training
step the reward, correctness, boxed answers, completion length, cut-off share, wall and CPU seconds (read from the
run's `completions.jsonl` and the trainer's process); the records of every evaluation are kept, gzipped, in
`bench/results/qwen_gsm8k/`, and the first `keep_completions` held-out completions before and after in the results.
Two experiments can run at once, one driver each (`--experiment grpo` beside `--experiment grpo_ds`): each rewrites
only its own entry of the results file, under a lock.
The run folders live outside the checkout (`run_dir`). A machine can lose them between sessions, so `--stash` keeps
what a resume needs in the repository (`bench/state/<config>/<experiment>/`: the run's files, its newest checkpoint and
any checkpoint not yet evaluated, committed with `--commit`), and a later call restores it into an empty run folder first.
"""
import argparse, fcntl, gzip, json, os, platform, shlex, shutil, subprocess, sys, threading, time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_model import paired_bootstrap, trainer_shape # the same interval and shape file as the SmolLM2 experiments

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "qwen_gsm8k.json"
RECORDS = ROOT / "bench" / "results" / "qwen_gsm8k"
STATE = ROOT / "bench" / "state" / "qwen_gsm8k"


def log(message: str) -> None: print(time.strftime("%H:%M:%S"), message, flush=True)


def load_results() -> dict:
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {"experiments": {}}


def save_results(results: dict, commit: str | None = None, name: str | None = None) -> None:
    """Write the results file (and commit it with the records); with `name`, only that experiment's entry, the config and
    the machine replace the file's: the drivers of two experiments run at once, each holding its own copy of the file."""
    fd = os.open(RESULTS.parent, os.O_RDONLY) # one writer at a time: a lock on the results' folder
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if name is not None:
            current = load_results()
            current["experiments"][name] = results["experiments"][name]
            current.update({k: results[k] for k in ("config", "machine") if k in results})
            results = current
        tmp = RESULTS.with_suffix(".tmp")
        tmp.write_text(json.dumps(results, indent=1) + "\n"); tmp.replace(RESULTS)
        if commit:
            paths = [str(RESULTS.relative_to(ROOT)), str(RECORDS.relative_to(ROOT))]
            if git("add", *paths).returncode or git("commit", "-q", "-m", commit, "--", *paths).returncode:
                log(f"could not commit {RESULTS.name} (left uncommitted)")
    finally: os.close(fd)


def cpu_seconds(pid: int) -> float:
    "User + system CPU seconds of a running process (its threads included)."
    try: fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError: return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def steps_done(run: Path) -> int:
    "The last step whose completions the run wrote."
    path = run / "completions.jsonl"
    if not path.exists(): return 0
    last = 0
    with open(path, "rb") as f:
        f.seek(max(0, path.stat().st_size - 65536))
        for line in f.read().splitlines():
            try: last = max(last, json.loads(line)["step"])
            except (ValueError, KeyError): pass
    return last


def git(*args: str) -> subprocess.CompletedProcess:
    "A git command in the checkout, retried while another one holds the index."
    for attempt in range(5):
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
        if done.returncode == 0 or "index.lock" not in done.stderr: return done
        time.sleep(3)
    return done


def checkpoint_steps(run: Path) -> list[int]:
    "The steps of the run's complete checkpoints (everything an exact resume reads: the package's `checkpoint_problem`), oldest first."
    from oneshot_reason.core import checkpoint_problem
    return sorted(int(c.name.split("-")[1]) for c in run.glob("checkpoint-*") if c.is_dir() and checkpoint_problem(c) is None)


def stashed_steps(state: Path) -> list[int]:
    "The steps of every checkpoint in a stash, whole or weights only (`checkpoint_steps` counts only the whole ones), oldest first."
    return sorted(int(c.name.split("-")[1]) for c in state.glob("checkpoint-*") if c.is_dir())


STASH_BUDGET_MB = 190 # what one submission may add: its diffs count a binary file about 1.3x its size, and at most 256 MiB land


def stash(run: Path, state: Path, pending: list[int], commit: bool, last_step: int | None = None) -> None:
    """Add what a resume needs to the repository: the run folder's files, its newest complete checkpoint and the weights of those still to be evaluated.

    Checkpoints stashed before stay: deleting one costs a submission's diff budget as much as adding it, so replacing
    the stash (a delete and an add, about 270 MB of diffs) made a whole session's submission too big to land. A
    checkpoint already stashed is not copied again; a stash past `STASH_BUDGET_MB` is refused. A finished run (a checkpoint
    at `last_step`) resumes nothing: its newest checkpoint is kept without what a resume reads, like the others."""
    steps = checkpoint_steps(run)
    if not steps: return log(f"{run}: no complete checkpoint to stash")
    finished = last_step is not None and steps[-1] >= last_step
    there = stashed_steps(state)
    keep = [s for s in sorted({steps[-1], *(s for s in pending if s in steps)}) if s not in there]
    resume_files = ("optimizer.pt", "scheduler.pt", "rng_state*.pth", "oneshot_resume_*.pt")
    adds = {step: [f for f in (run / f"checkpoint-{step}").rglob("*") if f.is_file() and
                   (step == steps[-1] and not finished or not any(f.match(p) for p in resume_files))] for step in keep}
    mb = sum(f.stat().st_size for fs in adds.values() for f in fs) / 2**20
    if mb * 1.3 > STASH_BUDGET_MB:
        raise SystemExit(f"stashing checkpoints {keep} adds {mb:.0f} MB (about {mb * 1.3:.0f} MB of diffs), over the {STASH_BUDGET_MB} MB "
                         "one submission can carry: evaluate the pending checkpoints first, or stash fewer")
    state.mkdir(parents=True, exist_ok=True)
    for f in run.iterdir(): # the run's own files, small: replaced
        if f.is_file() and f.name != "run.lock": shutil.copy2(f, state / f.name)
    for step, files in adds.items(): # the newest whole; a checkpoint kept only to be evaluated without what a resume reads
        for f in files:
            dest = state / f"checkpoint-{step}" / f.relative_to(run / f"checkpoint-{step}")
            dest.parent.mkdir(parents=True, exist_ok=True); shutil.copy2(f, dest)
    log(f"stashed {run.name}'s checkpoints {keep} and run files in {state.relative_to(ROOT)} (+{mb:.0f} MB; {there} kept)")
    if commit:
        git("add", "-f", str(state.relative_to(ROOT)))
        git("commit", "-q", "-m", f"bench: qwen_gsm8k {run.name}'s state at step {steps[-1]}, kept in the repository for the next session",
            "--", str(state.relative_to(ROOT)))


def restore(run: Path, state: Path) -> None:
    "Bring a stashed state back into a run folder that lost it (or never had it); a run folder with a newer checkpoint is left alone."
    if not state.is_dir() or not (stashed := checkpoint_steps(state)): return
    here = checkpoint_steps(run) if run.is_dir() else []
    if here and here[-1] >= stashed[-1]: return
    if run.is_dir() and any(run.iterdir()) and not here:
        raise SystemExit(f"{run} holds files but no checkpoint: move it away to restore the stashed state at step {stashed[-1]}")
    weights = [s for s in stashed_steps(state) if s not in stashed]
    log(f"restoring {run.name} at step {stashed[-1]} from {state.relative_to(ROOT)} (checkpoints {stashed}"
        + (f"; {weights} weights only, to be evaluated)" if weights else ")"))
    run.mkdir(parents=True, exist_ok=True)
    for f in state.iterdir():
        if f.is_file(): shutil.copy2(f, run / f.name)
        elif not (run / f.name).exists(): shutil.copytree(f, run / f.name)


def train_command(cfg: dict, exp: dict, run: Path, data_dir: Path, resume: bool) -> list[str]:
    "The `oneshot-reason train` command of the experiment (its trainer shape in a YAML file beside the run folder)."
    shape = trainer_shape(cfg, exp, run)
    args = ["oneshot-reason", "train", "--model", cfg["model"], "--lora", str(cfg["lora"]), "--algo", exp["algo"],
            "--format", exp.get("format", cfg["format"]), "--reward-preset", exp.get("reward", cfg["reward"]),
            "--data-path", data_file(data_dir, exp["data"]), "--max-steps", str(exp.get("max_steps", cfg["max_steps"])), "--seed", str(cfg["seed"]),
            "--output-dir", str(run), "--config", str(shape), "--n-eval", "0", "--quiet", "--resume" if resume else "--overwrite"]
    for key, flag in (("demo_column", "--demo-column"),):
        if key in exp: args += [flag, str(exp[key])]
    if exp.get("dynamic_sampling"): args += ["--dynamic-sampling"]
    if (dtype := train_dtype(cfg)) is not None: args += ["--dtype", dtype] # asked for: a resume may change it (adapters exact)
    return args


def train_dtype(cfg: dict) -> str | None:
    """The dtype asked of the trainer: the config's `train_dtype`; 'fastest' is this CPU's: bfloat16 where it computes in
    it natively (AVX512-BF16 or AMX: grpo's steps took 0.18 CPU-h there, against 0.5 in float32 on AVX2 and AVX512-VNNI
    CPUs), float32 elsewhere (bfloat16 without native support is 6x slower). Asked for explicitly, so a run resumed on
    another kind of CPU goes on in that CPU's."""
    dtype = cfg.get("train_dtype")
    if dtype != "fastest": return None if dtype is None else str(dtype)
    from oneshot_reason.core import cpu_has_bf16
    return "bfloat16" if cpu_has_bf16() else "float32"


def _run_dtype(run: Path) -> str | None:
    "The dtype the run's trainer computes in, as its run.json records it (rewritten by each resume); None before there is one."
    try: return json.loads((run / "run.json").read_text())["settings"].get("dtype")
    except (OSError, ValueError, KeyError): return None


def live_trainer(run: Path) -> int | None:
    "The pid of a trainer that holds the run folder's lock and is alive (started by an earlier call of this script), or None."
    from oneshot_reason.runfiles import RUN_LOCK, holder_alive
    try: holder = json.loads((run / RUN_LOCK).read_text())
    except (OSError, ValueError): return None
    return holder.get("pid") if isinstance(holder, dict) and holder_alive(holder) else None


class Trainer:
    "The experiment's `oneshot-reason train` in the background (resumed from its newest checkpoint, or the one already running), and a thread timing its steps."
    def __init__(self, cfg: dict, exp: dict, run: Path, data_dir: Path, threads: int, timing: list[dict], saved):
        self.run, self.timing, self.threads, self.saved, self.proc = run, timing, threads, saved, None
        if (pid := live_trainer(run)) is not None: # this script was restarted while its trainer went on: follow that one
            log(f"following the trainer already running on {run} (pid {pid})")
            self.pid = pid
        else:
            args = train_command(cfg, exp, run, data_dir, resume=any(run.glob("checkpoint-*")))
            log(f"training in the background: {shlex.join(args)}")
            env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"}
            self.out = open(run.parent / f"{run.name}.log", "a")
            self.proc = subprocess.Popen(args, stdout=self.out, stderr=subprocess.STDOUT, env=env)
            self.pid = self.proc.pid
        threading.Thread(target=self._time_steps, daemon=True).start()

    def running(self) -> bool:
        if self.proc is not None: return self.proc.poll() is None
        try: os.kill(self.pid, 0); return True
        except OSError: return False

    def stop(self) -> None:
        "SIGTERM: the trainer saves the step it is in and exits (a resume continues it exactly)."
        if self.proc is not None and self.running(): self.proc.terminate(); self.proc.wait()

    def _time_steps(self):
        """One line per finished step: its wall and CPU seconds (the trainer's process alone) and the machine's load; saved as they come.

        A step is timed from one step's completions (written once its generation is done) to the next: its update and
        the next step's generation. The interval up to the first completions after this script starts is no step's cost
        (the trainer's start-up, or a step already under way), so it is not recorded; nor is anything before a resumed
        trainer cuts completions.jsonl back to its checkpoint. The dtype is run.json's when the step ends: a resume rewrites it."""
        last, t0, c0, load, started = steps_done(self.run), time.time(), cpu_seconds(self.pid), os.getloadavg()[0], False
        while self.running():
            time.sleep(5)
            now = steps_done(self.run)
            if now == last: continue
            t1, c1 = time.time(), cpu_seconds(self.pid)
            if now > last:
                if started:
                    self.timing[:] = [t for t in self.timing if t["step"] != now] + [ # a step trained again after a resume: its newer time
                        {"step": now, "wall_seconds": round(t1 - t0, 1), "cpu_seconds": round(c1 - c0, 1), "load": round(load, 2),
                         "threads": self.threads, "dtype": _run_dtype(self.run), "steps_in_interval": now - last}]
                    log(f"step {now}: {t1 - t0:.0f} s wall, {c1 - c0:.0f} CPU-s, load {load:.1f}")
                else: log(f"step {now}: generated (steps are timed from the next one)")
                self.saved()
                started = True
            last, t0, c0, load = now, t1, c1, os.getloadavg()[0] # now < last: a resumed trainer cut completions.jsonl back

    def wait_for(self, step: int) -> None:
        "Block until `checkpoint-<step>` exists; stop with the log's tail if the trainer ends without it."
        while not (self.run / f"checkpoint-{step}").is_dir():
            if not self.running() and not (self.run / f"checkpoint-{step}").is_dir():
                tail = (self.run.parent / f"{self.run.name}.log").read_text()[-3000:]
                raise SystemExit(f"training ended before checkpoint-{step}:\n{tail}")
            time.sleep(10)


def isa() -> str:
    """The instruction sets that decide CTranslate2's int8 text here: 'avx512_bf16', 'avx512_vnni' (without BF16) or 'avx2'.

    Greedy int8 text differs between all three: the 32 longest held-out prompts of the base model, one batch as in the
    300-problem evaluation, gave 3 and 1 of 32 completions verbatim on an AVX512-VNNI CPU without BF16 against the
    AVX512-BF16 and AVX2 machines' step-0 records."""
    from engine import machine
    m = machine()
    return "avx512_bf16" if m["avx512_bf16"] else "avx512_vnni" if m["avx512_vnni"] else "avx2"


def where_evaluated(engine: str) -> str:
    "What decides an evaluation's text, to pair evaluations by: the GPU's name for vLLM (or torch on a GPU), else the CPU's `isa`."
    import torch
    on_gpu = engine == "vllm" or (engine in ("torch", "auto") and torch.cuda.is_available())
    return f"cuda:{torch.cuda.get_device_name()}" if on_gpu else isa()


def data_file(data_dir: Path, relative: str) -> str:
    """A data file of the config under --data-dir; GSM8K's splits (`gsm8k/<split>.jsonl`) fall back to the package's own copy.

    The copy holds the same rows (GSM8K as openai/grade-school-math publishes it), so a clone without the data folder
    runs the same experiment; a run keeps the path it started with (a resume's data must be the same file)."""
    path = data_dir / relative
    if path.exists(): return str(path)
    from oneshot_reason.data import GSM8K_SPLITS, gsm8k_file
    split = Path(relative).name.removesuffix(".jsonl")
    if Path(relative).parent.name == "gsm8k" and split in GSM8K_SPLITS: return str(gsm8k_file(split))
    raise SystemExit(f"{relative}: not found under --data-dir {data_dir}; pass the folder holding it")


def evaluate_source(cfg: dict, source: str, out: Path, data_dir: Path) -> dict:
    "The held-out evaluation of a model or checkpoint, with the config's engine; its summary and records."
    from oneshot_reason.evaluate import evaluate
    h = cfg["heldout"]
    load = os.getloadavg()[0]
    result = evaluate(source, "gsm8k", data_path=data_file(data_dir, h["data"]), limit=h["n"], format=cfg["format"],
                      max_new_tokens=h["max_new_tokens"], batch_size=h["batch_size"], engine=h["engine"], dtype=h.get("dtype", "auto"),
                      vllm_options=h.get("vllm_options"), output_dir=out, progress=False)
    s = result.to_dict()
    return {"strict": s["metrics"]["strict_pass@1"], "lenient": s["metrics"]["pass@1"], "n": s["n_problems"],
            "truncated": s["n_truncated"], "new_tokens": s["new_tokens"], "tokens_per_second": s["tokens_per_second"],
            "seconds": s["seconds"], "engine": s["engine"], "dtype": s["dtype"], "load": round(load, 2), "isa": where_evaluated(h["engine"]),
            "verdicts_strict": "".join("1" if r["strict"][0] else "0" for r in result.records),
            "verdicts_lenient": "".join("1" if r["correct"][0] else "0" for r in result.records)}, result.records


def step_metrics(run: Path, format: str) -> list[dict]:
    """Per training step, from the run's completion records: reward, correct share, share with the format's answer, mean
    length in characters, of the policy's own completions. LUFFY's demonstrations (`off_policy` records, one in each
    group) are counted in `demos` and left out of the means: they are right by construction and would lift the reward."""
    from oneshot_reason.answers import final_answer
    path = run / "completions.jsonl"
    if not path.exists(): return []
    rows: dict[int, list[dict]] = {}
    for line in path.read_text().splitlines():
        try: r = json.loads(line)
        except ValueError: continue
        rows.setdefault(r["step"], []).append(r)
    out = []
    for step, every in sorted(rows.items()):
        rs = [r for r in every if not r.get("off_policy")]
        n, demos = len(rs), len(every) - len(rs)
        if not n: continue
        out.append({"step": step, "n": n, **({"demos": demos} if demos else {}),
                    "reward": round(sum(r["reward"] for r in rs) / n, 4),
                    "correct": round(sum(list(r["rewards"].values())[0] > 0 for r in rs) / n, 4), # the stack's first function: correctness
                    "formatted": round(sum(final_answer(r["completion"], format) is not None for r in rs) / n, 4), # its answer where the format puts it
                    "chars": round(sum(len(r["completion"]) for r in rs) / n, 1)})
    return out


def trainer_log(run: Path) -> dict[int, dict]:
    """The trainer's logged numbers per step (mean completion length in tokens, cut share, zero-std groups, entropy, the
    step's wall seconds), newest checkpoint. Under dynamic sampling the trained batch holds only groups with signal, so
    its `frac_reward_zero_std` is 0 by construction: `no_signal_share` is the share of the groups drawn that had none
    (dropped or used as fillers), `rounds` the generation rounds the step took."""
    states = sorted(run.glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name.split("-")[1]))
    if not states: return {}
    keep = ("completions/mean_length", "completions/clipped_ratio", "frac_reward_zero_std", "entropy", "grad_norm", "loss", "step_time",
            "dynamic_sampling/no_signal_share", "dynamic_sampling/rounds", "dynamic_sampling/dropped_groups")
    return {h["step"]: {k.split("/")[-1]: round(h[k], 4) for k in keep if k in h} for h in json.loads(states[-1].read_text())["log_history"]}


def training_steps(run: Path, format: str) -> list[dict]:
    "Per training step: the completion records' metrics and the trainer's logged numbers."
    logged = trainer_log(run)
    return [{**s, **logged.get(s["step"], {})} for s in step_metrics(run, format)]


def summarise(results: dict, cfg: dict) -> None:
    """Per experiment: the change of strict and lenient accuracy from step 0 to its newest evaluation, paired over the problems.

    Both ends come from one instruction set (`isa`): CTranslate2's int8 text differs between AVX512-BF16, AVX512-VNNI and
    AVX2 CPUs, and the same checkpoint-10 weights evaluated on two of them gave 37 of 300 verdicts apart. Without a step-0
    evaluation on the newest evaluation's instruction set there is no table (`table_pending` says why)."""
    for name, e in results["experiments"].items():
        evals = sorted(e.get("evals", []), key=lambda v: v["step"])
        if not evals or evals[-1]["step"] == 0: continue # nothing trained evaluated yet (step 0 alone, on one or more instruction sets)
        last = evals[-1]
        first = next((v for v in evals if v["step"] == 0 and v.get("isa") == last.get("isa")), None)
        if first is None:
            e.pop("table", None); e["table_pending"] = f"step {last['step']} was evaluated on {last.get('isa')}, step 0 not yet there"
            continue
        e.pop("table_pending", None)
        e["table"] = {"from_step": 0, "to_step": last["step"], "isa": last.get("isa"),
                      "complete": last["step"] == cfg["experiments"].get(name, {}).get("max_steps", cfg["max_steps"])}
        for kind in ("strict", "lenient"):
            before = [c == "1" for c in first[f"verdicts_{kind}"]]
            after = [c == "1" for c in last[f"verdicts_{kind}"]]
            e["table"][f"{kind}_before"], e["table"][f"{kind}_after"] = first[kind], last[kind]
            e["table"][f"{kind}_change_paired"] = [round(x, 4) for x in paired_bootstrap(before, after)]


def completions_of(records: list[dict], n: int) -> list[dict]:
    return [{k: r[k] for k in ("index", "question", "reference", "completions", "answers", "correct", "strict", "truncated")}
            for r in records[:n]]


def eval_targets(cfg: dict, exp: dict) -> list[int]:
    "The steps whose checkpoints are evaluated: 0 (the base model), every `eval_every`, and the last (the experiment's own, else the config's)."
    last, every = exp.get("max_steps", cfg["max_steps"]), exp.get("eval_every", cfg["eval_every"])
    targets = list(range(0, last + 1, every))
    return targets if targets[-1] == last else targets + [last]


def run_experiment(cfg: dict, name: str, data_dir: Path, threads: int | None, commit: bool, train: bool = True,
                   train_threads: int | None = None) -> None:
    "Train the experiment in the background and evaluate its checkpoints as they come (the base model first); `train=False`: only the checkpoints there."
    import torch
    torch.set_num_threads(threads or cfg.get("eval_threads", 1))
    exp, results = cfg["experiments"][name], load_results()
    run = Path(cfg["run_dir"]).expanduser() / name
    restore(run, STATE / name)
    e = results["experiments"].setdefault(name, {"evals": [], "steps": [], "timing": []})
    e["command"] = shlex.join(train_command(cfg, exp, run, data_dir, False))
    RECORDS.mkdir(parents=True, exist_ok=True)
    targets = eval_targets(cfg, exp)
    lock = threading.Lock()
    def saved(message: str | None = None): # the timing thread saves each step (with the steps' metrics); the evaluations also commit
        with lock:
            if message is None: e["steps"] = training_steps(run, cfg["format"])
            save_results(results, message, name)
    trainer = None
    if not train: targets = [t for t in targets if t == 0 or (run / f"checkpoint-{t}").is_dir()]
    elif not (run / f"checkpoint-{targets[-1]}").is_dir():
        run.parent.mkdir(parents=True, exist_ok=True)
        trainer = Trainer(cfg, exp, run, data_dir, train_threads or cfg.get("train_threads", 1), e["timing"], saved)
    try: evaluate_all(cfg, name, run, data_dir, targets, trainer, results, e, saved, commit)
    except BaseException: # an error or Ctrl-C here: the trainer this script started saves its step and stops
        if trainer is not None: trainer.stop()
        raise


def evaluate_all(cfg: dict, name: str, run: Path, data_dir: Path, targets: list[int], trainer, results: dict, e: dict, saved, commit: bool):
    "Evaluate each target step's checkpoint as it appears (step 0: the base model), saving the results after each."
    import torch
    here = where_evaluated(cfg["heldout"]["engine"])
    for step in targets: # step 0 once on each instruction set (the pairs' other end); a checkpoint once
        if any(v["step"] == step and (step > 0 or v.get("isa") == here) for v in e["evals"]): continue
        base = next((dict(v, copied_from=other) for other, o in results["experiments"].items() if other != name
                     for v in o.get("evals", []) if step == 0 and v["step"] == 0 and v.get("isa") == here and "copied_from" not in v), None)
        if base is not None: # the base model, greedy, with this config's held-out settings: evaluated once per instruction set
            e["evals"] = sorted(e["evals"] + [base], key=lambda v: v["step"])
            e["before"] = results["experiments"][base["copied_from"]].get("before") # the text of one CPU's step 0 (`before_isa`)
            e["before_isa"] = results["experiments"][base["copied_from"]].get("before_isa")
            log(f"{name}: step 0 is {base['copied_from']}'s evaluation of the base model on {here}")
            continue
        if step > 0 and trainer is not None: trainer.wait_for(step)
        source = cfg["model"] if step == 0 else str(run / f"checkpoint-{step}")
        log(f"{name}: evaluating step {step} ({source}) on {cfg['heldout']['n']} held-out problems")
        summary, records = evaluate_source(cfg, source, run.parent / f"{name}-eval-step{step}", data_dir)
        with gzip.open(RECORDS / f"{name}_step{step}_{here}.jsonl.gz", "wt", encoding="utf-8") as f:
            for r in records: f.write(json.dumps(r) + "\n")
        e["evals"] = sorted(e["evals"] + [{"step": step, **summary}], key=lambda v: v["step"])
        if step == 0: e["before"], e["before_isa"] = completions_of(records, cfg["keep_completions"]), here # the newest step 0's
        else: e["after"] = {"step": step, "completions": completions_of(records, cfg["keep_completions"])}
        e["steps"] = training_steps(run, cfg["format"])
        results.update(config=cfg, machine={"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                                            "torch": torch.__version__, "threads": torch.get_num_threads()})
        summarise(results, cfg)
        log(f"{name} step {step}: strict {summary['strict']:.3f}, lenient {summary['lenient']:.3f}, {summary['truncated']} cut, "
            f"{summary['tokens_per_second']:.0f} tokens/s")
        saved(f"bench: qwen_gsm8k {name} at step {step}: held-out strict {summary['strict']:.1%}, "
              f"lenient {summary['lenient']:.1%} ({summary['n']} GSM8K test problems, {summary['engine']} {summary['dtype']})"
              if commit else None)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default=str(ROOT / "configs" / "qwen_gsm8k.yaml"))
    p.add_argument("--data-dir", default=os.environ.get("ONESHOT_DATA_DIR", str(ROOT.parent / "shared" / "data")))
    p.add_argument("--experiment", nargs="*", help="run only these experiments (default: all, in the config's order)")
    p.add_argument("--eval-threads", type=int, default=None, help="threads of the evaluations (default: the config's eval_threads)")
    p.add_argument("--train-threads", type=int, default=None, help="threads of a trainer this call starts (default: the config's train_threads)")
    p.add_argument("--no-train", action="store_true", help="only evaluate the checkpoints already there (no trainer started)")
    p.add_argument("--commit", action="store_true", help="commit the results file after every evaluation")
    p.add_argument("--summary-only", action="store_true")
    p.add_argument("--stash", action="store_true", help="keep what a resume needs in bench/state/ (committed with --commit) and exit; "
                   "the training and evaluation in progress go on")
    p.add_argument("--results", default=None, help="the results file (default: bench/results/<config name>.json; records beside it)")
    a = p.parse_args()
    cfg = yaml.safe_load(Path(a.config).read_text())
    global RESULTS, RECORDS, STATE
    RESULTS = Path(a.results) if a.results else ROOT / "bench" / "results" / f"{Path(a.config).stem}.json"
    RECORDS, STATE = RESULTS.with_suffix(""), ROOT / "bench" / "state" / Path(a.config).stem
    if a.stash:
        evals = load_results()["experiments"]
        for name in a.experiment or list(cfg["experiments"]):
            done = {v["step"] for v in evals.get(name, {}).get("evals", [])}
            pending = [t for t in eval_targets(cfg, cfg["experiments"][name]) if t > 0 and t not in done]
            run = Path(cfg["run_dir"]).expanduser() / name
            if run.is_dir(): stash(run, STATE / name, pending, a.commit, last_step=cfg["experiments"][name].get("max_steps", cfg["max_steps"]))
        return
    if a.summary_only:
        results = load_results(); summarise(results, cfg); save_results(results)
        print(json.dumps({n: e.get("table") for n, e in results["experiments"].items()}, indent=1)); return
    for name in a.experiment or list(cfg["experiments"]):
        run_experiment(cfg, name, Path(a.data_dir).expanduser(), a.eval_threads, a.commit, train=not a.no_train, train_threads=a.train_threads)


if __name__ == "__main__": main()
