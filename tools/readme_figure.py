"""Draw the README's figures from committed result files: held-out accuracy of SmolLM2-135M-Instruct along 30 RL steps,
and the change in Qwen2.5-Coder-0.5B-Instruct's held-out GSM8K accuracy along its RL runs.

    python tools/readme_figure.py     # writes nbs/images/real_model_heldout.png and qwen_gsm8k_heldout.png (plotly + kaleido + a Chromium)

The numbers are those of `bench/results/real_model.json` (`python bench/real_model.py`) and
`bench/results/qwen_gsm8k.json` (`python bench/qwen_gsm8k.py`); nothing is trained or evaluated here.
"""
from __future__ import annotations
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS, IMAGE = ROOT / "bench" / "results" / "real_model.json", ROOT / "nbs" / "images" / "real_model_heldout.png"
QWEN, QWEN_IMAGE = ROOT / "bench" / "results" / "qwen_gsm8k.json", ROOT / "nbs" / "images" / "qwen_gsm8k_heldout.png"
CPUS = {"avx2": ("AVX2 CPU", "solid"), "avx512_bf16": ("AVX512-BF16 CPU", "dot"), "avx512_vnni": ("AVX512-VNNI CPU", "dash")} # bench/qwen_gsm8k.py's isa()
LINES = [("grpo-synthetic", "GRPO, synthetic", "#636efa", "solid"), ("m3po-synthetic", "M3PO, synthetic", "#00cc96", "solid"),
         ("bupo-synthetic", "BuPO, synthetic", "#ab63fa", "solid"), ("grpo-gsm8k", "GRPO, GSM8K test", "#636efa", "dot"),
         ("luffy-gsm8k", "LUFFY, GSM8K test", "#ef553b", "dot")]


def curves(runs: list[dict], experiment: str) -> tuple[list[int], list[list[float]]]:
    "The evaluation steps of `experiment` and its strict held-out accuracy per seed (one list per seed)."
    mine = sorted((r for r in runs if r["experiment"] == experiment), key=lambda r: r["seed"])
    return [s for s, _ in mine[0]["strict"]], [[a for _, a in r["strict"]] for r in mine]


def figure(runs: list[dict]):
    "Each experiment's mean over its seeds (a bold line; each seed faint where there are several)."
    import plotly.graph_objects as go
    fig = go.Figure()
    for experiment, label, color, dash in LINES:
        steps, seeds = curves(runs, experiment)
        for accuracy in seeds if len(seeds) > 1 else []:
            fig.add_scatter(x=steps, y=accuracy, mode="lines", line=dict(color=color, width=1, dash=dash), opacity=0.3,
                            showlegend=False, hoverinfo="skip")
        mean = [sum(a) / len(a) for a in zip(*seeds)]
        fig.add_scatter(x=steps, y=mean, mode="lines+markers", line=dict(color=color, width=3, dash=dash),
                        name=f"{label} ({len(seeds)} seed{'s' * (len(seeds) > 1)})")
    fig.update_layout(template="plotly_white", width=800, height=420, margin=dict(l=60, r=20, t=60, b=50),
                      title="SmolLM2-135M-Instruct with LoRA 16: held-out strict accuracy along 30 RL steps",
                      xaxis_title="training step", yaxis_title="held-out accuracy (100 problems, greedy)",
                      yaxis_tickformat=".0%", legend=dict(orientation="h", y=-0.18))
    return fig


def qwen_figure(result: dict):
    """Each evaluation's change in strict accuracy from the base model evaluated on the same CPU (paired 95% interval).

    CTranslate2's int8 text differs between instruction sets, so each step is paired with the step 0 of its own: one
    line per experiment and CPU that has more than step 0."""
    import sys
    import plotly.express as px
    import plotly.graph_objects as go
    sys.path.insert(0, str(ROOT / "bench"))
    from real_model import paired_bootstrap
    fig, colors = go.Figure(), px.colors.qualitative.Plotly # one color per experiment, as in tutorial 8
    names = list(result["experiments"])
    for k, (name, x) in enumerate(result["experiments"].items()):
        color, dodge = colors[k % len(colors)], 0.4 * (k - (len(names) - 1) / 2) # side by side at a shared step: every interval seen
        for isa in dict.fromkeys(e["isa"] for e in x["evals"]): # each CPU the experiment was evaluated on
            (cpu, dash), evals = CPUS[isa], sorted((e for e in x["evals"] if e["isa"] == isa), key=lambda e: e["step"])
            if len(evals) < 2 or evals[0]["step"] != 0: continue
            base = [c == "1" for c in evals[0]["verdicts_strict"]]
            change = [paired_bootstrap(base, [c == "1" for c in e["verdicts_strict"]]) for e in evals]
            fig.add_scatter(x=[e["step"] + dodge for e in evals], y=[100 * c[0] for c in change], mode="lines+markers",
                            line=dict(color=color, width=3, dash=dash), name=f"{name}, evaluated on an {cpu}",
                            error_y=dict(type="data", symmetric=False, array=[100 * (c[2] - c[0]) for c in change],
                                         arrayminus=[100 * (c[0] - c[1]) for c in change]))
    fig.add_hline(y=8, line_dash="dot", annotation_text="target: +8 points")
    fig.add_hline(y=0, line_color="gray")
    n = next(e["n"] for x in result["experiments"].values() for e in x["evals"])
    fig.update_layout(template="plotly_white", width=800, height=420, margin=dict(l=60, r=20, t=60, b=50),
                      title=f"Qwen2.5-Coder-0.5B-Instruct with LoRA 16: {n} held-out GSM8K test problems",
                      xaxis_title="training step", yaxis_title="strict accuracy, change from step 0 (points)",
                      showlegend=True, legend=dict(orientation="h", y=-0.18))
    return fig


if __name__ == "__main__":
    for fig, image in ((figure(json.loads(RESULTS.read_text())["runs"]), IMAGE), (qwen_figure(json.loads(QWEN.read_text())), QWEN_IMAGE)):
        image.parent.mkdir(parents=True, exist_ok=True)
        fig.write_image(image, scale=1)
        print(f"wrote {image.relative_to(ROOT)} ({image.stat().st_size / 1024:.0f} KB)")
