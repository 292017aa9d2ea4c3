"""What the learned coordinates add beyond the ground contact that comes with them.

    .venv/bin/python -m benchmarks.contact_ablation CORPUS [--per-category 10] [--categories elastic ...] [--jobs 2]
    .venv/bin/python -m benchmarks.contact_ablation --redraw [--categories elastic ...]

The neural solver lands a deforming body with its category's contact (``BodyMaterial.ground_contact``: the
restitution of the give its few coordinates lack, a yielding body's footprint rolling lever, a softer
ground spring under a soft solid); the fidelity benchmark's rigid-only baseline lands it on the plain
contact. This replays held-out sequences (``benchmarks.neural_fidelity``'s pick) three ways: neural,
rigid only, and rigid with the neural contact. Where the last is as close as the neural rollout, the
lead over rigid motion is the contact's, not the deformation's. Elastic solids and continuum bodies
only: cloth and articulated objects meet the ground as rigid bodies do (their materials add no
restitution, no rolling lever and no softer spring), so there the third is the second. Writes
benchmarks/results/contact_ablation[_<categories>].{json,md}.
"""

import argparse
import json
from pathlib import Path

from benchmarks import RESULTS, results_name, write_results
from benchmarks.neural_fidelity import CONTACT_ABLATION, TIMES, by_category, evaluate, mean_errors, paired_difference
from training.evaluation import positive

CATEGORIES = ("continuum", "elastic")  # the categories whose contact differs from a rigid body's
COLUMNS = ("neural", "rigid only", CONTACT_ABLATION)
PAIRED_TIMES = (0.5, 2.0)  # s: the ablation paired with the neural rollout and with rigid only, early and late


def table(rows: list[dict]) -> str:
    pairs = ([("neural", CONTACT_ABLATION, t) for t in PAIRED_TIMES]
             + [(CONTACT_ABLATION, "rigid only", t) for t in PAIRED_TIMES])
    header = ("| category | sequences | " + " | ".join(f"{c}: {t} s" for c in COLUMNS for t in TIMES) + " | "
              + " | ".join(f"{a} - {b} at {t} s | {a} closer at {t} s" for a, b, t in pairs) + " |")
    lines = [header, "|---|---:|" + "---:|" * (len(COLUMNS) * len(TIMES) + 2 * len(pairs))]
    for category, group, complete in by_category(rows, COLUMNS):
        cells = mean_errors(complete, COLUMNS) + [paired_difference(complete, a, b, t) for a, b, t in pairs]
        lines.append(f"| {category} | {len(complete)} of {len(group)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, nargs="?", help="the corpus to replay (not with --redraw)")
    parser.add_argument("--weights", type=Path, default=None, help="default: the shipped weights")
    parser.add_argument("--per-category", type=int, default=10)
    parser.add_argument("--categories", nargs="+", choices=CATEGORIES, default=list(CATEGORIES))
    parser.add_argument("--jobs", type=positive, default=1, help="processes replaying sequences at once")
    parser.add_argument("--redraw", action="store_true", help="replay nothing: the stored result's table again")
    a = parser.parse_args()
    name = results_name("contact_ablation", a.categories)
    if a.redraw:
        stored = json.loads((RESULTS / f"{name}.json").read_text())
        rows = stored.pop("rows")
        text = table(rows)
        print(text)
        write_results(name, text, rows=rows, **stored)
        return
    if a.corpus is None:
        parser.error("the corpus to replay is missing")
    rows = evaluate(a.weights, a.corpus, a.per_category, a.categories, a.jobs, variants=COLUMNS)
    text = table(rows)
    print(text)
    write_results(name, text, rows=rows, corpus=a.corpus.name)


if __name__ == "__main__":
    main()
