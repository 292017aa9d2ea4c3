"""Measure each category's default material for the neural solver against the reference simulators.

    python -m training.calibrate CORPUS WEIGHTS [--sequences 3] [--frames 30] [--spread 7] [--jobs 1]
                                 [--categories continuum ...] [--frequencies 32] [--dampings 128]
                                 [--objective motion|short]

The learned coordinates come with a potential V = 1/2 omega^2 sum m |y(s) - y(s_p)|^2, a Rayleigh
damping rate and a yield strain past which the rest shape s_p flows (``neurok_blender/core/neural.py``);
``CategoryMaterial`` (``core/material.py``) holds their values at stiffness = damping = plasticity = 1,
and this script measures them. For each category it replays training sequences (their shapes,
conditions and materials, the latter as stiffness, damping and plasticity scales,
``training/reference/scales.py``; ``training/evaluation.py``) over grids, one quantity after another,
each at the ones chosen before:

1. frequency, then damping rate, by the mean shape error over the frames (the vertex error left after
   the best rigid alignment of each frame onto the reference's, over the bounding-box diagonal): the
   material decides how a body deforms, not where it goes after a chaotic bounce. The shape error
   rewards stiffness (a body that barely bends is never bent the wrong way), so ``--objective
   motion`` chooses the frequency instead by how near the median peak shape change comes to the
   references' (|log ratio|), among the frequencies whose bodies stretch their surfaces no more than
   STRAIN_ALLOWANCE times the references' (the median of the peak edge strains' ratios, a reference
   strain counted as at least STRAIN_FLOOR; the least stretching one when none does: a shape change
   made by stretching a sheet or a hinged part is not the reference's motion), and ``--objective
   short`` by the mean vertex error at the short horizon
   (``SHORT_HORIZON``, before a chaotic landing's paths part). A SOLID category's
   frequency holds at the geometric mean of M / V^(1/3) over its bodies (``mass_per_length``); a
   PROPORTIONAL one's damping is the rate at stiffness 1 and grows with it (D = beta K);
2. by the mean vertex error, the quantities that decide where the body goes and hardly change its
   shape: FLOWING categories the damping and yield strain together (the yield dissipates what the
   damping otherwise must), then the rolling resistance of the footprint; SPRINGY ones the damping
   and the restitution of their give together; JOINTED ones the damping and yield strain together,
   then a least damping ratio; a FLOWING category's bodies that never yield the restitution of their
   give; SOLID categories last the ground's spring under them (CONTACT_RATIOS).

A rollout that goes non-finite scores FAILED_ERROR. Training sequences only, so the held-out ones
stay unseen for the benchmarks. It also measures how far the training deformations reach in the
reduced coordinates, |s| = |A (mu - mu_cond)| of the posterior means, and puts the solver's wall
where WALL_PERCENTILE of them lie (S = sqrt(k) + margin, never inside the prior's typical set:
``wall_margin_of``), measuring every category's material with it: a model trained to deformations
past the typical set keeps its solver there. The materials go into WEIGHTS (keys "materials" and
"wall_margin", rewritten atomically), everything into
benchmarks/results/calibration.{json,md}; with ``--categories`` the other categories keep their
materials and their part of the previous report. What each grid measured and why it was chosen:
docs/benchmarks.md, "Calibration".
"""

import argparse
import itertools
import json
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from neurok_blender.core import NeuROK, SimulationError
from neurok_blender.core.checkpoint import load_model, read_checkpoint, save_checkpoint
from neurok_blender.core.material import CategoryMaterial, mass_per_length
from neurok_blender.core.neural import WALL_MARGIN
from neurok_blender.core.options import DEFORMABLE
from neurok_blender.core.reduction import active_subspace
from training.evaluation import (SHORT_HORIZON, errors_over_time, frame_at, peak_shape_change, peak_strain,
                                 pick_sequences, positive, replay_conditions, shape_errors_over_time)
from training.examples import collate, make_example
from training.parent_watch import spawned_pool
from training.train import batch_tensors, load_corpus

FREQUENCIES = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)  # Hz; up to about 50 Hz costs no extra steps (contact sets them)
DAMPINGS = (0.5, 2.0, 8.0, 32.0)  # 1/s
FIRST_DAMPING = 2.0
FLOWING = ("continuum",)  # categories with plastic reference materials: they get a yield strain
YIELDS = (None, 0.05, 0.02, 0.01, 0.005)  # strain e of neural.py; None never yields
ROLLINGS = (0.0, 0.25, 0.5, 1.0, 2.0)  # footprint lever arm over the radius of gyration (dynamics.py)
SPRINGY = ("elastic",)  # categories whose references are elastic solids: they get a contact restitution
RESTITUTIONS = (0.0, 0.15, 0.3, 0.5)  # the body's share of the contact's restitution (neurok.py)
JOINTED = ("articulated",)  # categories whose references are rigid links on free joints: damping and yield by vertex error
JOINT_DAMPINGS = (2.0, 8.0, 32.0, 128.0, 512.0)  # 1/s; critical at 32 Hz is 2 omega = 402 /s
LEAST_DAMPING_RATIOS = (0.0, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0)  # of critical damping (material.damping_rate); JOINTED only
FAILED_ERROR = 1.0  # a rollout that went non-finite scores as an error of the whole diagonal
OBJECTIVES = ("error", "motion", "short")  # what chooses the frequency (calibrate_category)
# "motion" keeps to frequencies whose bodies' peak edge strain is at most this times the references'
# (the factor the shape change's target allows), a reference's counted as at least STRAIN_FLOOR: a
# rigid part or a cloth strains its edges by a few thousandths, and a stretch of 2 % is hard to see
STRAIN_ALLOWANCE = 1.5
STRAIN_FLOOR = 0.02
WALL_PERCENTILE = 90  # of the training posteriors' |s| - sqrt(k): inside the wall (wall_margin_of)
RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
PROPORTIONAL = ("elastic",)  # categories whose references damp in proportion to their stiffness (MuJoCo flex: beta K)
SOLID = ("elastic", "continuum")  # their frequency follows the body's mass and size (material.solid_frequency_scale)
CONTACT_RATIOS = (None, 64.0, 16.0, 4.0)  # SOLID: the ground's spring per unit mass over omega^2; None: the default
MATERIAL_FIELDS = ("frequency", "damping", "yield_strain", "rolling_resistance", "restitution",
                   "least_damping_ratio", "stiffness_proportional", "mass_per_length",
                   "contact_stiffness_ratio")  # CategoryMaterial's


class Score(NamedTuple):
    """What the replays of a material measured (``score``)."""

    shape: float  # mean shape error over the frames and sequences (of the diagonal)
    vertex: float  # mean vertex error over the frames and sequences (of the diagonal)
    failed: int  # replays that went non-finite
    change: float  # median over the sequences of the peak shape change over the reference's
    short: float  # mean vertex error at SHORT_HORIZON
    strain: float  # median over the sequences of the peak edge strain over the reference's (``strain_ratio``)


def replay(model, sequence, material: CategoryMaterial, frames: int, wall_margin: float = WALL_MARGIN) -> np.ndarray:
    """The neural solver's frames for a sequence's shape and conditions with ``material`` as default."""
    neurok = NeuROK(model, {c: material for c in DEFORMABLE}, wall_margin=wall_margin)
    conditions = replay_conditions(sequence, frames=min(frames, len(sequence.positions)))
    return neurok.simulate(sequence.rest_vertices.astype(np.float64), sequence.faces, conditions).positions


def score(model, sequences, material: CategoryMaterial, frames: int, pool=None,
          wall_margin: float = WALL_MARGIN) -> Score:
    """Mean shape error and mean vertex error over the frames and sequences (FAILED_ERROR each for a
    non-finite rollout), the failures, the median over the sequences of the peak shape change's
    ratio to the reference's (0 for a failure), the mean vertex error at SHORT_HORIZON (FAILED_ERROR
    for a failure) and the median of the peak edge strain's ratio (inf for a failure). With ``pool``
    the sequences spread over its
    processes, which replay with their own copies of the model, loaded from the same weights
    (``_load_worker``). The solver's wall at ``wall_margin`` (the weights')."""
    jobs = [(sequence, material, frames, wall_margin) for sequence in sequences]
    if pool is None:
        errors = [sequence_errors(model, *job) for job in jobs]
    else:
        errors = list(pool.map(_pooled_errors, jobs))
    shape, vertex, failed, change, short, strain = zip(*errors)
    return Score(float(np.mean(shape)), float(np.mean(vertex)), sum(failed), float(np.median(change)),
                 float(np.mean(short)), float(np.median(strain)))


def sequence_errors(model, sequence, material: CategoryMaterial, frames: int,
                    wall_margin: float = WALL_MARGIN) -> tuple[float, float, bool, float, float, float]:
    """Mean shape and vertex error of one replay over its frames, whether it went non-finite
    (FAILED_ERROR each then, no shape change and an endless strain), its ``peak_shape_change`` over
    the reference's in the same frames, its vertex error at SHORT_HORIZON and its ``strain_ratio``."""
    try:
        positions = replay(model, sequence, material, frames, wall_margin)
    except SimulationError:
        return FAILED_ERROR, FAILED_ERROR, True, 0.0, FAILED_ERROR, np.inf
    reference = sequence.positions[:len(positions)]
    change = peak_shape_change(positions, sequence) / max(peak_shape_change(reference, sequence), 1e-12)
    errors = errors_over_time(positions, sequence)  # the vertex error per frame: its mean, and at SHORT_HORIZON
    return (float(shape_errors_over_time(positions, sequence).mean()), float(errors.mean()), False, change,
            float(errors[frame_at(SHORT_HORIZON, sequence.fps, len(positions))]),
            strain_ratio(positions, reference, sequence))


def strain_ratio(positions: np.ndarray, reference: np.ndarray, sequence) -> float:
    """The replay's ``peak_strain`` over the reference's in the same frames (``strain_over``)."""
    return strain_over(peak_strain(positions, sequence), peak_strain(reference, sequence))


def strain_over(strain: float, reference: float) -> float:
    """A peak edge strain over the reference's, the latter counted as at least STRAIN_FLOOR."""
    return strain / max(reference, STRAIN_FLOOR)


_worker_model = None  # a pool process's own copy of the model (``_load_worker``)


def _load_worker(weights: Path) -> None:
    global _worker_model
    _worker_model = load_model(weights, "cpu")


def _pooled_errors(job) -> tuple[float, float, bool, float, float, float]:
    return sequence_errors(_worker_model, *job)


def latent_reach(model, corpus: Path, examples: int = 256, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """|s| of the posterior means of ``examples`` training examples in their shapes' active subspaces,
    and the subspaces' sizes k."""
    items = load_corpus(corpus, "train")
    rng = np.random.default_rng(seed)
    reach, sizes = [], []
    for _ in range(examples):
        example = make_example(items[int(rng.integers(len(items)))], rng, model.config, augment=False)
        t = batch_tensors(model, collate([example]), "cpu")
        with torch.no_grad():
            prior_mean, tokens = model.prior(t["features"])
            mean, _ = model.posterior(t["features"], t["deformation"])
        subspace = active_subspace(model, prior_mean[0], tokens[0], t["query_features"][0])
        reach.append(float(torch.einsum("ilc,lc->i", subspace.basis, (mean - prior_mean)[0]).norm()))
        sizes.append(subspace.size)
    return np.asarray(reach), np.asarray(sizes)


def wall_margin_of(reach: np.ndarray, sizes: np.ndarray) -> float:
    """The solver's wall margin for a model whose training posteriors lie at |s| = ``reach`` in
    subspaces of ``sizes`` coordinates: WALL_PERCENTILE of them inside S = sqrt(k) + margin, never
    less than the prior's own typical set (neural.WALL_MARGIN)."""
    return max(WALL_MARGIN, float(np.percentile(reach - np.sqrt(sizes), WALL_PERCENTILE)))


def calibrate(corpus: Path, weights: Path, per_category: int, frames: int, categories=DEFORMABLE,
              spread: int = 7, jobs: int = 1, frequencies=FREQUENCIES, dampings=None, objective: str = "error") -> dict:
    """The materials of ``categories`` and, when all are calibrated, the latent reach and the wall's
    margin from it (``wall_margin_of``; the materials are then measured with that wall): a property of
    the model over the whole corpus, which a run on some categories (often on a corpus of only those)
    leaves to the previous report, its materials measured with the weights' wall."""
    model = load_model(weights, "cpu")
    report, margin = {}, read_checkpoint(weights).get("wall_margin", WALL_MARGIN)
    if set(categories) == set(DEFORMABLE):
        reach, sizes = latent_reach(model, corpus)
        percentiles = {str(p): float(np.percentile(reach, p)) for p in (50, 90, 99)}
        margin = wall_margin_of(reach, sizes)
        print(f"posterior |s| over {len(reach)} training examples, percentiles 50/90/99: "
              + " / ".join(f"{v:.2f}" for v in percentiles.values()) + f"; the wall's margin {margin:.2f}", flush=True)
        report = {"reach_percentiles": percentiles, "reach_examples": len(reach), "wall_margin": margin}
    chosen = pick_sequences(corpus, "train", per_category, spread)
    pool = spawned_pool(jobs, _load_worker, weights) if jobs > 1 else None
    try:
        for category in categories:
            sequences = chosen.get(category, [])
            if not sequences:
                raise ValueError(f"no usable {category} training sequences in {corpus}")
            report[category] = calibrate_category(model, category, sequences, frames, pool, frequencies, dampings,
                                                  objective, margin)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)  # an interrupted calibration does not wait for queued replays
    return report


def calibrate_category(model, category: str, sequences, frames: int, pool, frequencies=FREQUENCIES,
                       dampings=None, objective: str = "error", wall_margin: float = WALL_MARGIN) -> dict:
    """The frequency by shape error (``objective`` "error"), by how far the median peak shape change
    is from the reference's, |log ratio|, among the frequencies that stretch the surface plausibly
    (``plausible``; "motion"), or by the vertex error at SHORT_HORIZON ("short");
    then by vertex error, for FLOWING categories the damping and yield
    together, then the rolling resistance, then the restitution of the give of their bodies that never
    yield (a continuum's jellies: the references bounce them again and again), for JOINTED ones the
    damping over a wider grid and the yield together and then the least damping ratio, for SPRINGY
    ones the damping and restitution together; for the others the damping by shape error; last, for
    SOLID ones, the ground's spring under them by vertex error (module docstring). ``dampings``
    replaces the category's damping grid. Returns the category's report."""
    began, trials = time.perf_counter(), {}
    proportional = category in PROPORTIONAL
    per_length = mean_mass_per_length(sequences) if category in SOLID else None

    def trial(frequency, damping, strain=None, rolling=0.0, restitution=0.0, ratio=0.0, contact=None):
        key = (frequency, damping, strain, rolling, restitution, ratio, contact)
        if key not in trials:
            material = CategoryMaterial(frequency, damping, strain, rolling, restitution, ratio,
                                        stiffness_proportional=proportional, mass_per_length=per_length,
                                        contact_stiffness_ratio=contact)
            trials[key] = result = score(model, sequences, material, frames, pool, wall_margin)
            print(f"  {category} {frequency} Hz, {damping}/s, yield strain {strain}, rolling resistance {rolling}, "
                  f"restitution {restitution}, least damping ratio {ratio}, contact stiffness ratio {contact}: "
                  f"shape error {result.shape:.4f}, vertex error {result.vertex:.4f}, shape change ratio "
                  f"{result.change:.3f}, edge strain ratio {result.strain:.2f}, vertex error at {SHORT_HORIZON} s "
                  f"{result.short:.4f}",
                  flush=True)
        return trials[key]

    # one frequency given is kept without replaying it
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, got {objective!r}")
    by_motion = lambda f: abs(np.log(max(trial(f, FIRST_DAMPING).change, 1e-12)))
    by_shape = lambda f: trial(f, FIRST_DAMPING).shape
    by_short = lambda f: trial(f, FIRST_DAMPING).short
    if len(frequencies) == 1:
        frequency = frequencies[0]
    elif objective == "motion":
        frequency = min(plausible(frequencies, lambda f: trial(f, FIRST_DAMPING).strain), key=by_motion)
    else:
        frequency = min(frequencies, key={"error": by_shape, "short": by_short}[objective])
    grid = tuple(dampings or (JOINT_DAMPINGS if category in JOINTED else DAMPINGS))
    strain, rolling, restitution, ratio = None, 0.0, 0.0, 0.0
    if category in FLOWING or category in JOINTED:
        damping, strain = min(itertools.product(grid, YIELDS), key=lambda dy: trial(frequency, *dy).vertex)
        if category in FLOWING and strain is not None:  # rigid links flatten no footprint
            rolling = min(ROLLINGS, key=lambda r: trial(frequency, damping, strain, r).vertex)
        if category in FLOWING:  # its bodies that never yield (jelly) get the give as elastic solids do
            restitution = min(RESTITUTIONS, key=lambda e: trial(frequency, damping, strain, rolling, e).vertex)
        if category in JOINTED:
            ratio = min(LEAST_DAMPING_RATIOS, key=lambda z: trial(frequency, damping, strain, ratio=z).vertex)
    elif category in SPRINGY:
        damping, restitution = min(itertools.product(grid, RESTITUTIONS),
                                   key=lambda de: trial(frequency, de[0], restitution=de[1]).vertex)
    else:
        damping = min(grid, key=lambda d: trial(frequency, d).shape)
    contact = None
    if category in SOLID:  # a soft solid lands on a patch of itself that gives (material.contact_stiffness)
        contact = min(CONTACT_RATIOS,
                      key=lambda c: trial(frequency, damping, strain, rolling, restitution, ratio, c).vertex)
    chosen = trials[(frequency, damping, strain, rolling, restitution, ratio, contact)]
    error, vertex, failed = chosen.shape, chosen.vertex, chosen.failed
    report = {"frequency": frequency, "damping": damping, "yield_strain": strain, "rolling_resistance": rolling,
              "restitution": restitution, "least_damping_ratio": ratio,
              "stiffness_proportional": proportional, "mass_per_length": per_length,
              "contact_stiffness_ratio": contact, **_measured(chosen), "objective": objective,
              "sequences": [s.shape for s in sequences], "frames": frames,
              "trials": [{"frequency": f, "damping": d, "yield_strain": y, "rolling_resistance": r, "restitution": rest,
                          "least_damping_ratio": z, "contact_stiffness_ratio": c, **_measured(result)}
                         for (f, d, y, r, rest, z, c), result in trials.items()],
              "seconds": round(time.perf_counter() - began, 1)}
    print(f"{category}: {frequency} Hz, {damping}/s, yield strain {strain}, rolling resistance {rolling}, restitution "
          f"{restitution}, least damping ratio {ratio}, contact stiffness ratio {contact}, mean shape error "
          f"{error:.4f} of the diagonal (vertex error {vertex:.4f}), {failed} non-finite ({len(sequences)} sequences, "
          f"{report['seconds']} s)", flush=True)
    return report


def plausible(frequencies, strain_of) -> list:
    """The frequencies whose ``strain_of`` (the median ratio of the replays' peak edge strain to the
    references') is at most STRAIN_ALLOWANCE or, when none is, the one of the least."""
    kept = [f for f in frequencies if strain_of(f) <= STRAIN_ALLOWANCE]
    return kept or [min(frequencies, key=strain_of)]


def _measured(result: Score) -> dict:
    """A score's report fields."""
    return {"shape_error": result.shape, "vertex_error": result.vertex, "failed": result.failed,
            "shape_change_ratio": result.change, "short_error": result.short, "strain_ratio": result.strain}


def mean_mass_per_length(sequences) -> float:
    """The geometric mean of the sequences' bodies' ``neurok.mass_per_length`` (kg/m): where a solid
    category's measured frequency holds (``material.solid_frequency_scale``)."""
    return float(np.exp(np.mean([np.log(mass_per_length(s.rest_vertices.astype(np.float64), s.faces,
                                                        s.conditions["mass"])) for s in sequences])))


def store(weights: Path, report: dict) -> None:
    """Write the report's materials (and its wall margin, when it measured one) into the checkpoint
    next to the weights (atomically); categories the report does not cover keep theirs."""
    payload = read_checkpoint(weights)
    materials = dict(payload.get("materials", {}))
    materials.update({c: {k: report[c][k] for k in MATERIAL_FIELDS if k in report[c]}
                      for c in DEFORMABLE if c in report})
    missing = set(DEFORMABLE) - set(materials)
    if missing:
        raise ValueError(f"{weights} would have no material for {sorted(missing)}: calibrate them too")
    margin = report.get("wall_margin", payload.get("wall_margin"))
    save_checkpoint(weights, load_model(weights, "cpu"), payload["about"], materials=materials,
                    **({} if margin is None else {"wall_margin": margin}))


def table(report: dict) -> str:
    lines = ["| category | frequency (Hz) | damping (1/s) | yield strain | rolling resistance | restitution "
             "| least damping ratio | at mass per length (kg/m) | contact stiffness / omega^2 "
             "| mean shape error / diagonal | mean vertex error / diagonal | peak shape change / reference's "
             "| peak edge strain / reference's | non-finite | sequences x frames |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for category in (c for c in DEFORMABLE if c in report):
        r = report[category]
        strain = "never" if r.get("yield_strain") is None else r["yield_strain"]
        damping = f"{r['damping']} x stiffness" if r.get("stiffness_proportional") else r["damping"]
        lines.append(f"| {category} | {r['frequency']} | {damping} | {strain} | {r.get('rolling_resistance', 0.0)} "
                     f"| {r.get('restitution', 0.0)} | {r.get('least_damping_ratio', 0.0)} "
                     f"| {'any' if r.get('mass_per_length') is None else round(r['mass_per_length'], 3)} "
                     f"| {'default' if r.get('contact_stiffness_ratio') is None else r['contact_stiffness_ratio']} "
                     f"| {r['shape_error']:.4f} "
                     f"| {r['vertex_error']:.4f} | {_ratio(r.get('shape_change_ratio'))} | {_ratio(r.get('strain_ratio'))} "
                     f"| {r['failed']} | {len(r['sequences'])} x {r['frames']} |")
    if "reach_percentiles" in report:
        reach = report["reach_percentiles"]
        lines.append(f"\nPosterior |s| of {report['reach_examples']} training examples in their shapes' reduced "
                     f"coordinates, percentiles 50 / 90 / 99: {reach['50']:.2f} / {reach['90']:.2f} / {reach['99']:.2f}"
                     + (f"; the solver's wall at sqrt(k) + {report['wall_margin']:.2f}." if "wall_margin" in report else "."))
    return "\n".join(lines)


def _ratio(value) -> str:
    """A median ratio for the table; a report from before it was measured has none."""
    return "not measured" if value is None else f"{value:.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("weights", type=Path)
    parser.add_argument("--sequences", type=int, default=3, help="training sequences per category")
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--spread", type=positive, default=7, help="take every SPREAD-th usable training sequence")
    parser.add_argument("--jobs", type=positive, default=1, help="processes replaying sequences at once")
    parser.add_argument("--categories", nargs="+", choices=DEFORMABLE, default=list(DEFORMABLE),
                        help="calibrate only these; the others keep their materials and report")
    parser.add_argument("--frequencies", nargs="+", type=float, default=list(FREQUENCIES),
                        help="the frequency grid (Hz); one value keeps it and recalibrates the later stages")
    parser.add_argument("--dampings", nargs="+", type=float, default=None,
                        help="the damping grid (1/s); default the category's")
    parser.add_argument("--objective", choices=OBJECTIVES, default="error",
                        help="what chooses the frequency: the shape error, the peak shape change against the "
                             "reference's, or the vertex error at the short horizon")
    a = parser.parse_args()
    report = calibrate(a.corpus, a.weights, a.sequences, a.frames, a.categories, a.spread, a.jobs, a.frequencies,
                       a.dampings, a.objective)
    store(a.weights, report)
    RESULTS.mkdir(parents=True, exist_ok=True)
    previous = RESULTS / "calibration.json"
    if previous.exists():
        report = {**json.loads(previous.read_text()), **report}
    (RESULTS / "calibration.json").write_text(json.dumps(report, indent=1))
    (RESULTS / "calibration.md").write_text(table(report) + "\n")
    print(table(report))


if __name__ == "__main__":
    main()
