"""Re-execute notebooks in place and save their outputs, with a static PNG beside every plotly figure.

    python tools/run_notebooks.py                                   # every notebook nbdev-test would run
    python tools/run_notebooks.py nbs/tutorials/*.ipynb nbs/api/*.ipynb --jobs 2
    python tools/run_notebooks.py nbs/tutorials/05_methods_side_by_side.ipynb --notest   # the long experiments too

Each notebook runs in its own process with nbdev-test's executor (execnb's `CaptureShell`, the notebook's folder as
the working directory), so a saved output is what `nbdev-test` computes. `#| slow` cells run, `#| gpu` cells never
do, `#| notest` cells only with `--notest`; a cell that does not run keeps the output it had. Seeds are fixed
(`PYTHONHASHSEED=0`, then `random`, numpy and torch seeded with 0 before the first cell).

Every output holding a plotly figure (`application/vnd.plotly.v1+json`, which JupyterLab and VS Code draw
interactively) gets an `image/png` beside it (what GitHub, Colab before running and the docs show), made with
kaleido and the system's Chromium, and loses its `text/html` copy (a second copy of the figure whose script static
viewers strip). Without kaleido or a Chromium (looked for before kaleido starts, since kaleido waits forever without
one), the figures keep only the interactive part and one message says so.
Outputs written to stderr (warnings, progress bars) are dropped. The notebook is written only when every cell ran
without error and the result is under the 1 MB cap, then `nbdev-clean`ed, so the CI's sync check leaves it as is.
"""
from __future__ import annotations
import argparse, base64, glob, json, os, shutil, subprocess, sys, time, warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZE_CAP = 1024 * 1024          # bytes; the CI refuses notebooks above it
PLOTLY = "application/vnd.plotly.v1+json"
WIDGET_VIEW, WIDGET_STATE = "application/vnd.jupyter.widget-view+json", "application/vnd.jupyter.widget-state+json"
PNG_WIDTH, PNG_HEIGHT, PNG_SCALE = 800, 450, 1   # a figure's own layout width/height win over these
PREAMBLE = """\
import random as _r; _r.seed(0)
try:
    import numpy as _np; _np.random.seed(0)
except ImportError: pass
try:
    import torch as _t; _t.manual_seed(0)
except ImportError: pass
del _r
"""


def default_notebooks() -> list[Path]:
    "The notebooks `nbdev-test` runs (nbdev's own glob over the project's notebook folder)."
    from nbdev.config import get_config
    from nbdev.doclinks import nbglob
    return sorted(Path(p) for p in nbglob(get_config().nbs_path, as_path=True))


# -- figures ---------------------------------------------------------------------------------------------------

BROWSER_NAMES = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"]
PNG_SECONDS = 120  # one figure's PNG; kaleido never returns when its browser dies, so it is not waited on longer


def browser_path() -> tuple[str | None, str | None]:
    """(the Chromium kaleido would drive, None) or (None, why not), found before kaleido starts: without a browser
    `kaleido.start_sync_server` then `plotly.io.to_image` wait forever (its server thread dies, `to_image` waits on it)."""
    if os.environ.get("BROWSER_PATH"):  # kaleido takes it as it is
        path = os.environ["BROWSER_PATH"]
        ok = os.path.isfile(path) and os.access(path, os.X_OK)
        return (path, None) if ok else (None, f"BROWSER_PATH={path} is not an executable file")
    candidates = []
    try:
        from choreographer.browsers.chromium import Chromium  # kaleido's own lookup: its downloaded Chrome, PATH, usual places
        candidates.append(Chromium.find_browser(skip_local=False))
    except Exception: pass
    candidates += map(shutil.which, BROWSER_NAMES)
    found = next((p for p in candidates if p and os.path.isfile(p) and os.access(p, os.X_OK)), None)
    return (found, None) if found else (None, f"no Chrome or Chromium found ({', '.join(BROWSER_NAMES)} on PATH)")


class Pictures:
    "Turns plotly figure JSON into PNG bytes with one kaleido browser for the whole notebook; None if it cannot."
    def __init__(self): self.started, self.problem = False, None

    def _give_up(self, problem: str):
        self.problem = problem
        print(f"no PNG beside the plotly figures ({problem}); install the dev extra (kaleido) and a Chromium "
              "(`apt-get install chromium`, or set BROWSER_PATH to one)", file=sys.stderr)

    def png(self, figure: dict) -> bytes | None:
        if self.problem: return None
        try:
            if not self.started:
                import kaleido  # noqa: F401  (missing: said below, like a missing browser)
                path, why = browser_path()
                if path is None: self._give_up(why); return None
                os.environ["BROWSER_PATH"] = path
                kaleido.start_sync_server(silence_warnings=True)
                self.started = True
            return self._to_image(figure)
        except Exception as e:  # no kaleido, a browser that does not start
            self._give_up(f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}")
            return None

    def _to_image(self, figure: dict) -> bytes | None:
        "`plotly.io.to_image` in a daemon thread, given up after PNG_SECONDS (then no more PNGs for this notebook)."
        import threading, plotly.io as pio
        layout, result = figure.get("layout", {}), {}
        def draw():
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result["png"] = pio.to_image(figure, format="png", width=layout.get("width") or PNG_WIDTH,
                                                 height=layout.get("height") or PNG_HEIGHT, scale=PNG_SCALE)
            except Exception as e: result["error"] = e
        worker = threading.Thread(target=draw, daemon=True)
        worker.start(); worker.join(PNG_SECONDS)
        if worker.is_alive(): self._give_up(f"kaleido gave no PNG in {PNG_SECONDS} s"); return None
        if "error" in result: raise result["error"]
        return result["png"]

    def close(self):
        "Stop kaleido's browser (and its temporary folder); not waited on longer than PNG_SECONDS."
        if not self.started: return
        import threading, kaleido
        stopper = threading.Thread(target=kaleido.stop_sync_server, kwargs={"silence_warnings": True}, daemon=True)
        stopper.start(); stopper.join(PNG_SECONDS)
        self.started = False


def tidy_outputs(outputs: list[dict], pictures: Pictures) -> list[dict]:
    "Drop stderr streams and empty results; give each plotly figure a PNG and drop its HTML copy."
    kept = []
    for out in outputs:
        if out.get("output_type") == "stream" and out.get("name") == "stderr": continue
        data = out.get("data") or {}
        if out.get("output_type") in ("execute_result", "display_data") and not data:
            continue  # a figure displays itself and leaves an empty result behind
        if PLOTLY in data:
            data.pop("text/html", None)
            figure = data[PLOTLY]
            png = pictures.png(figure if isinstance(figure, dict) else json.loads(figure))
            if png: data["image/png"] = base64.b64encode(png).decode()
        elif set(data) == {"text/html"} and "cdn.plot.ly" in "".join(data["text/html"]):
            continue  # the renderer's plotly.js loader: nothing to see, and nothing without a kernel
        kept.append(out)
    return kept


def widget_state(notebook: dict) -> dict | None:
    "The state of the widgets the saved outputs show, so that JupyterLab and the docs draw their first view."
    ids = [o["data"][WIDGET_VIEW]["model_id"] for c in notebook["cells"] for o in c.get("outputs", [])
           if WIDGET_VIEW in o.get("data", {})]
    if not ids: return None
    from ipywidgets.widgets.widget import _instances
    from ipywidgets.embed import dependency_state
    shown = [_instances[i] for i in ids if i in _instances]
    return {"version_major": 2, "version_minor": 0, "state": dependency_state(shown, drop_defaults=True)} if shown else None


# -- one notebook (run in its own process) ----------------------------------------------------------------------

def _plain(o):
    "execnb's outputs are fastcore dict objects; make them plain JSON values."
    if isinstance(o, dict): return {k: _plain(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)): return [_plain(v) for v in o]
    return o


def run_one(path: Path, notest: bool, cell_timeout: int) -> int:
    "Execute `path` in this process and write it back with its outputs; returns an exit status."
    from fastcore.xtras import working_directory
    from execnb.shell import CaptureShell
    from nbdev.config import get_config
    from nbdev.test import nb_test_cells
    from nbdev.process import NBProcessor
    from nbdev.clean import nbdev_clean

    path = path.resolve()
    skip_flags = set(str(get_config(path.parent).tst_flags).split()) | {"gpu"}
    force_flags = ["slow"] + (["notest"] if notest else [])
    to_run = {c.id for c in nb_test_cells(path, list(skip_flags), force_flags)}
    nb = NBProcessor(path, rm_directives=False, process=True).nb
    shell = CaptureShell(path)
    with working_directory(path.parent):
        shell.run(PREAMBLE)
        shell.run_all(nb, exc_stop=True, preproc=lambda c: c.id not in to_run, cell_timeout=cell_timeout or None)
    if shell.exc is not None:
        print(shell.prettytb(fname=path), file=sys.stderr)
        return 1

    raw = json.loads(path.read_text(encoding="utf-8"))
    pictures, ran = Pictures(), {c.id: c for c in nb.cells if c.id in to_run}
    try:
        for cell in raw["cells"]:
            if cell["cell_type"] == "code" and cell.get("id") in ran:
                cell["outputs"] = tidy_outputs(_plain(list(ran[cell["id"]].outputs or [])), pictures)
    finally:
        try: pictures.close()
        except Exception as e: print(f"stopping kaleido's browser: {e}", file=sys.stderr)
    widgets = widget_state(raw)
    if widgets: raw["metadata"]["widgets"] = {WIDGET_STATE: widgets}
    else: raw["metadata"].pop("widgets", None)
    text = json.dumps(raw, indent=1, ensure_ascii=False) + "\n"
    if len(text.encode()) > SIZE_CAP:
        print(f"{path.name}: would be {len(text.encode()) / 1024:.0f} KB with its outputs, over the 1 MB cap; not written "
              "(make the figures smaller or print less)", file=sys.stderr)
        return 1
    path.write_text(text, encoding="utf-8")
    nbdev_clean(fname=str(path))
    return 0


# -- many notebooks ---------------------------------------------------------------------------------------------

def _run_in_child(path: Path, args) -> tuple[Path, int, float, str]:
    env = {**os.environ, "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    command = [sys.executable, "-X", "faulthandler", __file__, "--one", str(path), "--cell-timeout", str(args.cell_timeout)] + (["--notest"] if args.notest else [])
    start = time.time()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    return path, done.returncode, time.time() - start, (done.stdout + done.stderr).strip()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks or globs (default: every notebook nbdev-test runs)")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks executed at once, each in its own process")
    parser.add_argument("--notest", action="store_true", help="also run `#| notest` cells (long experiments)")
    parser.add_argument("--cell-timeout", type=int, default=1800, help="seconds a cell may take (0: no limit)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one: return run_one(Path(args.one), args.notest, args.cell_timeout)

    paths = [Path(p) for pattern in args.notebooks for p in (sorted(glob.glob(pattern)) or [pattern])] or default_notebooks()
    missing = [str(p) for p in paths if not p.is_file()]
    if missing: parser.error(f"no such notebook: {', '.join(missing)}")
    print(f"executing {len(paths)} notebook(s) with {args.jobs} job(s)", flush=True)
    start, failed = time.time(), []
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for path, status, seconds, log in pool.map(lambda p: _run_in_child(p, args), paths):
            size = path.stat().st_size / 1024
            print(f"{'saved ' if status == 0 else 'FAILED'} {path} ({seconds:.0f} s, {size:.0f} KB)", flush=True)
            if log: print("  " + log.replace("\n", "\n  "), flush=True)
            if status: failed.append(path)
    print(f"{len(paths) - len(failed)} saved, {len(failed)} failed in {time.time() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__": sys.exit(main())
