"""Check the outputs saved in the notebooks: every tutorial shows at least one figure, no notebook keeps an error.

    python tools/check_outputs.py            # exit 1 with one line per problem

A figure is an output with `image/png` or a plotly figure (`application/vnd.plotly.v1+json`). The outputs come from
`python tools/run_notebooks.py`, which re-executes the notebooks and saves them.
"""
from __future__ import annotations
import json, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = {"image/png", "application/vnd.plotly.v1+json"}


def outputs(path: Path) -> list[dict]:
    "Every output of every code cell of the notebook at `path`."
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]


def problems(path: Path, need_figure: bool) -> list[str]:
    "What is wrong with the saved outputs of `path`: error outputs, and a missing figure where one is needed."
    outs, found = outputs(path), []
    errors = [o for o in outs if o.get("output_type") == "error"]
    if errors: found.append(f"{len(errors)} error output(s), first: {errors[0].get('ename')}: {errors[0].get('evalue', '')[:120]}")
    if need_figure and not any(FIGURES & set(o.get("data", {})) for o in outs): found.append("no figure output")
    return found


def main(root: Path = ROOT) -> int:
    tutorials = sorted((root / "nbs" / "tutorials").glob("[0-9]*.ipynb"))
    modules = sorted(p for p in (root / "nbs").rglob("*.ipynb") # api/, explanations/ and any other notebook
                     if p not in tutorials and ".ipynb_checkpoints" not in p.parts)
    report = {p: problems(p, need_figure=p in tutorials) for p in tutorials + modules}
    bad = {p: found for p, found in report.items() if found}
    for path, found in bad.items():
        for problem in found: print(f"{path.relative_to(root)}: {problem}")
    if bad:
        print(f"{len(bad)} of {len(report)} notebooks fail the output check; re-execute them with "
              "`python tools/run_notebooks.py --jobs 2` and commit the result")
        return 1
    print(f"saved outputs: {len(tutorials)} tutorials each show a figure, no error output in {len(report)} notebooks")
    return 0


if __name__ == "__main__": sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT))
