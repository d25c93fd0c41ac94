"""Render nbs/index.ipynb into README.md without Quarto (which needs the network to install).

Markdown cells are copied with their relative links (written from `nbs/`, where the notebook is: `images/x.png`,
`tutorials/01_quick_tour.ipynb`, `../bench/README.md`) made relative to the repository root, where README.md is; code
cells become ```python blocks (directive lines dropped, `#| hide` cells skipped) followed by their text outputs, unless
the cell says `#| output: false` (Quarto's directive: the docs hide them too); adjacent code with no output shown
between becomes one block.
`python tools/readme.py --check` exits 1 when README.md is stale.
"""
import json, posixpath, re, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"(\]\()([^)\s]+)(\))")

def from_root(markdown: str, folder: str = "nbs") -> str:
    "Markdown whose relative link targets, written from `folder`, point from the repository root instead."
    def fix(m):
        target = m.group(2)
        if re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target): return m.group(0)  # a URL, an anchor, an absolute path
        return m.group(1) + posixpath.normpath(posixpath.join(folder, target)) + m.group(3)
    return LINK.sub(fix, markdown)

def _directives(src: str) -> set[str]:
    return {line[3:].strip().split()[0] for line in src.splitlines() if line.startswith("#| ") and line[3:].strip()}

def render(nb_path: Path) -> str:
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    parts = []
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            parts.append(from_root(src.strip()))
        elif cell["cell_type"] == "code":
            if _directives(src) & {"hide", "exporti", "export"}: continue
            code = "\n".join(l for l in src.splitlines() if not l.startswith("#|")).strip()
            if code and parts and parts[-1].startswith("```python\n"):  # one block for adjacent cells with no output between
                parts[-1] = parts[-1][:-len("```")] + f"\n{code}\n```"
            elif code: parts.append(f"```python\n{code}\n```")
            texts = []
            if any(l.replace(" ", "") == "#|output:false" for l in src.splitlines()): continue
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
