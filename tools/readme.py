"""Render nbs/index.ipynb into README.md without Quarto (which needs the network to install).

Markdown cells are copied as they are; code cells become ```python blocks (directive lines dropped, `#| hide`
cells skipped) followed by their text outputs. `python tools/readme.py --check` exits 1 when README.md is stale.
"""
import json, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def _directives(src: str) -> set[str]:
    return {line[3:].strip().split()[0] for line in src.splitlines() if line.startswith("#| ") and line[3:].strip()}

def render(nb_path: Path) -> str:
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    parts = []
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            parts.append(src.strip())
        elif cell["cell_type"] == "code":
            if _directives(src) & {"hide", "exporti", "export"}: continue
            code = "\n".join(l for l in src.splitlines() if not l.startswith("#|")).strip()
            if code: parts.append(f"```python\n{code}\n```")
            texts = []
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream": texts.append("".join(out["text"]))
                elif "text/plain" in out.get("data", {}): texts.append("".join(out["data"]["text/plain"]))
            if any(t.strip() for t in texts): parts.append("```\n" + "".join(texts).rstrip() + "\n```")
    return "<!-- generated from nbs/index.ipynb by tools/readme.py: edit the notebook, not this file -->\n\n" + "\n\n".join(p for p in parts if p) + "\n"

if __name__ == "__main__":
    text = render(ROOT / "nbs" / "index.ipynb")
    readme = ROOT / "README.md"
    if "--check" in sys.argv:
        if not readme.exists() or readme.read_text(encoding="utf-8") != text:
            print("README.md is out of date with nbs/index.ipynb: run `python tools/readme.py`"); sys.exit(1)
    else:
        readme.write_text(text, encoding="utf-8")
