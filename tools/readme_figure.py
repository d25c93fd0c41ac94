"""Draw the README's figure from a committed result file: held-out accuracy of SmolLM2-135M-Instruct along 30 RL steps.

    python tools/readme_figure.py     # writes nbs/images/real_model_heldout.png (plotly + kaleido + a Chromium)

The numbers are those of `bench/results/real_model.json` (`python bench/real_model.py`); nothing is trained here.
"""
from __future__ import annotations
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS, IMAGE = ROOT / "bench" / "results" / "real_model.json", ROOT / "nbs" / "images" / "real_model_heldout.png"
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


if __name__ == "__main__":
    fig = figure(json.loads(RESULTS.read_text())["runs"])
    IMAGE.parent.mkdir(parents=True, exist_ok=True)
    fig.write_image(IMAGE, scale=1)
    print(f"wrote {IMAGE.relative_to(ROOT)} ({IMAGE.stat().st_size / 1024:.0f} KB)")
