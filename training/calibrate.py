"""Measure each category's default material for the neural solver against the reference simulators.

    python -m training.calibrate CORPUS WEIGHTS [--sequences 3] [--frames 30] [--spread 7] [--jobs 1]
                                 [--categories continuum ...] [--frequencies 32] [--dampings 128]

The learned coordinates come with a potential V = 1/2 omega^2 sum m |y(s) - y(s_p)|^2, a Rayleigh
damping rate and a yield strain past which the rest shape s_p flows (``neurok_blender/core/neural.py``);
their values at stiffness = damping = plasticity = 1 are what this script measures. For each category
it replays training sequences (their shapes, conditions and materials, the latter as stiffness,
damping and plasticity scales, ``training/reference/scales.py``) with the neural solver over a grid
of frequencies, then of damping rates at the best frequency, and keeps the pair with the least mean
shape error over the frames: the vertex error left after the best rigid
alignment of each frame onto the reference's, relative to the bounding-box diagonal (a rollout that
goes non-finite counts as an error of the whole diagonal). The material decides how the body
deforms, not where it goes: after a bounce the trajectory is chaotic (the error at 2 s moved by 2x
when only the step size changed), and fitting the plain vertex error chose materials for where a
body happened to roll, which made the held-out shapes worse than no deformation at all (elastic 0.31 %
of the diagonal at 2 s against 0.12 % for the rigid solver's undeformed shape).
Categories whose reference simulator has plastic materials (continuum: MPM snow, plasticine, sand)
then get their damping and a yield strain chosen together, from the grid of both at that frequency,
by the mean vertex error: the yield decides how much of an impact's energy the body gives back, so
where it goes after the impact, and hardly changes its shape (measured on 8 continuum training
sequences at 32 Hz: the mean shape error stayed within 0.1144-0.1164 of the diagonal over the grid
of dampings and yields, the vertex error spread over 0.357-0.489). The two are chosen together
because the yield dissipates what the damping otherwise must: chosen first, without a yield, the
damping takes it all. Jelly references replay with neither (``training/reference/scales.py``), so
they weigh in the frequency and not in this choice.
A category that yields then gets the rolling resistance of the footprint it flattens where it lands
(``neurok_blender/core/dynamics.py``), by vertex error at that damping and yield: it decides whether a
body that lands on a corner stops there, as the plastic references do, or tips over and rolls on
(measured on a held-out snow mug: the reference moves 0.13 m after it lands and stops within 0.25 s;
ours, without it and before the friction fix of ``core/contact.py``, tipped over its rim and went
1.4 m on; on 8 continuum training sequences it takes the vertex error from 0.357 to 0.294).
Categories whose references are elastic solids (elastic: MuJoCo flex FEM) get their damping and the
restitution of their own give at the contact (``material.contact_restitution``) chosen together, by the
mean vertex error: the learned coordinates' contact stops too much of a landing body at once, so it
bounces too low (a ball dropped onto a dead ground rebounds at 0.42 of its impact speed on them alone,
at 0.65 in the reference, ``benchmarks/elastic_bounce.py``), and where it goes after the bounce is what
the two decide; the shape hardly changes with them (on 5 elastic training sequences at 32 Hz and 0.5 /s
the vertex error falls from 0.436 with a dead contact to 0.262 at restitution 0.5). Their references
damp in proportion to the stiffness (MuJoCo flex: D = beta K), so their damping rate is stored as the
rate at stiffness 1 and grows with it (``PROPORTIONAL``, ``material.damping_rate``): a stiff body's
ringing after a pull or an impact dies within a few periods, as in the reference, where a constant
rate let it ring on and bounce (on the 40 held-out elastic sequences at 80 /s, beta_default omega^2
at 32 Hz, and restitution 0.5: 0.740 of the diagonal at 2 s against the constant 0.5 /s's 0.775;
calibrated at that rate on 10 training sequences of the references that keep their spin, the
restitution 0.3: 0.418 dead, 0.419 at 0.15, 0.397 at 0.3, 0.402 at 0.5, rigid motion 0.411).
Categories whose references are rigid links on joints (articulated: MuJoCo) get their damping by
the vertex error too, over a grid that reaches past critical damping: the references' links land
without bouncing (on the 12 plain drops among the first 25 held-out sequences their centre of mass
rose at most 0.028 of the diagonal after the first touch, the rigid solver's 0.070 once and otherwise
at most 0.007), while the stiff learned deformation, which hardly changes their shape (1.5 % of the
diagonal at the touch against the reference's 13 % fold of a pair of spectacles), takes part of the
impact and gives it back: with the shape-chosen 8 /s four of the 12 rose 0.075-0.28, and at 2 s they
were behind rigid motion on 10 of the 12 (0.29 against 0.14 of the diagonal). On 6 training
sequences of 48 frames the damping hardly moves the vertex error (0.888-0.953 over 2-512 /s, least at
128 /s; rigid motion alone 0.680, with the same shape error, 0.085): it is not what keeps them behind.
They get a yield strain with it, chosen together as for the continuum: the references' joints are
free (no spring, a weak damping), so a body that an impact or a pull has bent keeps its new pose,
where the learned potential springs it back and launches it; past the yield the rest shape flows to
the pose (on the same six at 128 /s: 0.891 without a yield, 0.874 at 0.05, 0.788 at 0.02, 0.805 at
0.01, 0.815 at 0.005; the shape error 0.0853-0.0868). Rigid links flatten no footprint: no rolling
resistance. They then get a least damping ratio of their deformation (``material.damping_rate``), by
vertex error at that damping and yield: the replays scale the damping by the reference's joint
damping, 0.005-8.8 times the default over the corpus, so most replay far below critical (a median
of about 20 /s at 32 Hz, where 402 /s is critical) and ring after every impact, where the
references' links, whatever their joints' damping, land dead (on the six, elliptic friction cone:
vertex error 0.656 without a floor, 0.627 at half of critical, 0.617 at critical, 0.602 at 2.5 times,
0.572 at 5 times, the grid's edge; the shape 0.0889-0.0898).
A SOLID category's frequency holds at the geometric mean of M / V^(1/3) over its sequences' bodies,
stored with it as ``mass_per_length``, and every trial replays at it: a solid rings by its mass and
size, omega^2 ~ E L / M (``material.solid_frequency_scale``). A FLOWING category's bodies that never
yield (a continuum's jellies, replayed without plasticity) get the give of their material as the
elastic solids do, its restitution chosen by vertex error (on 8 continuum sequences, 4 of them
jellies: 0.320 dead, 0.318 at 0.15, 0.316 at 0.3, 0.307 at 0.5).
A SOLID category's bodies last get the ground's spring under them, at most c omega^2 per unit mass
(``material.contact_stiffness``), c chosen from CONTACT_RATIOS (None keeps the stiff floor) by vertex
error: a soft body lands on a patch of itself that gives, which its few learned coordinates cannot
make (continuum, on the same 8: 0.3073 stiff, 0.3050 at 64, 0.3007 at 16, 0.3135 at 4; on 13 other
training jellies, one run, at 2 s: 0.825 stiff, 0.815 at 64, 0.681 at 16, 0.720 at 4; elastic, on its
10: 0.3916 stiff and the same at 64 and 16, where the floor's spring is the softer for all ten,
0.4112 at 4, so the stiff floor stays).
Training sequences, so the held-out ones stay unseen for the benchmarks.

It also measures how far the training deformations reach in the reduced coordinates: the posterior
mean of each example projected on its shape's active subspace, |s| = |A (mu - mu_cond)|. The solver
keeps s within the prior's typical set (its wall, ``neural.py``), where the quadratic expansion of
the decoder holds; a model whose deformations reach much further has a prior matched too loosely.
The materials go into WEIGHTS (key "materials", rewritten atomically), everything into
benchmarks/results/calibration.{json,md}; with ``--categories`` the other categories keep their
materials and their part of the previous report.
"""

import argparse
import itertools
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from neurok_blender.core import NeuROK, SimulationError
from neurok_blender.core.checkpoint import load_model, read_checkpoint, save_checkpoint
from neurok_blender.core.options import DEFORMABLE
from neurok_blender.core.mesh import bbox_diagonal
from neurok_blender.core.material import CategoryMaterial, mass_per_length
from neurok_blender.core.reduction import active_subspace
from training.corpus.conditions import conditions_of
from training.corpus.shards import read_shard
from training.examples import collate, make_example, rigid_alignment
from training.parent_watch import spawned_pool
from training.reference.scales import material_conditions
from training.train import batch_tensors, load_corpus, usable

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
RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
PROPORTIONAL = ("elastic",)  # categories whose references damp in proportion to their stiffness (MuJoCo flex: beta K)
SOLID = ("elastic", "continuum")  # their frequency follows the body's mass and size (material.solid_frequency_scale)
CONTACT_RATIOS = (None, 64.0, 16.0, 4.0)  # SOLID: the ground's spring per unit mass over omega^2; None: the default
MATERIAL_FIELDS = ("frequency", "damping", "yield_strain", "rolling_resistance", "restitution",
                   "least_damping_ratio", "stiffness_proportional", "mass_per_length",
                   "contact_stiffness_ratio")  # CategoryMaterial's


def pick_sequences(corpus: Path, split: str, per_category: int, spread: int = 7) -> dict[str, list]:
    """``per_category`` usable sequences of each deformable category, every ``spread``-th one (varied shapes)."""
    chosen, seen = defaultdict(list), defaultdict(int)
    for path in sorted(corpus.glob(f"*-{split}-*.npz")):
        for sequence in read_shard(path):
            c = sequence.category
            if c not in DEFORMABLE or len(chosen[c]) >= per_category or not usable(sequence):
                continue
            if sequence.conditions.get("obstacles"):  # the neural solver knows no obstacles
                continue
            seen[c] += 1
            if (seen[c] - 1) % spread == 0:
                chosen[c].append(sequence)
    return chosen


def replay_conditions(sequence, **changes):
    """The sequence's conditions for the neural solver: its category, its material as stiffness, damping
    and plasticity scales and the ground friction it had, then ``changes``."""
    return conditions_of(sequence, **{"category": sequence.category,
                                      **material_conditions(sequence.category, sequence.material), **changes})


def replay(model, sequence, material: CategoryMaterial, frames: int) -> np.ndarray:
    """The neural solver's frames for a sequence's shape and conditions with ``material`` as default."""
    neurok = NeuROK(model, {c: material for c in DEFORMABLE})
    conditions = replay_conditions(sequence, frames=min(frames, len(sequence.positions)))
    return neurok.simulate(sequence.rest_vertices.astype(np.float64), sequence.faces, conditions).positions


def diagonal(sequence) -> float:
    """The bounding-box diagonal of the sequence's rest mesh: the unit of every error here."""
    return bbox_diagonal(sequence.rest_vertices)


def errors_over_time(positions: np.ndarray, sequence) -> np.ndarray:
    """Mean distance of the vertices to the reference per frame, over the bounding-box diagonal."""
    reference = sequence.positions[:len(positions)].astype(np.float64)
    return np.linalg.norm(positions - reference, axis=-1).mean(-1) / diagonal(sequence)


def vertex_error(positions: np.ndarray, sequence) -> float:
    """Mean over frames of ``errors_over_time``."""
    return float(errors_over_time(positions, sequence).mean())


def shape_error(ours: np.ndarray, reference: np.ndarray, size: float) -> float:
    """Mean vertex distance to the reference after the best rigid alignment onto it, over ``size``
    (the diagonal): how wrong the shape is, whatever the pose."""
    ours, reference = ours.astype(np.float64), reference.astype(np.float64)
    rotation, translation = rigid_alignment(ours, reference, np.ones(len(ours)))
    return float(np.linalg.norm(ours @ rotation.T + translation - reference, axis=-1).mean() / size)


def shape_errors_over_time(positions: np.ndarray, sequence) -> np.ndarray:
    """``shape_error`` per frame."""
    size = diagonal(sequence)
    return np.array([shape_error(ours, reference, size) for ours, reference in zip(positions, sequence.positions)])


def score(model, sequences, material: CategoryMaterial, frames: int, pool=None) -> tuple[float, float, int]:
    """Mean shape error and mean vertex error over the frames and sequences (FAILED_ERROR each for a
    non-finite rollout), and the failures. With ``pool`` the sequences spread over its processes, which
    replay with their own copies of the model, loaded from the same weights (``_load_worker``)."""
    jobs = [(sequence, material, frames) for sequence in sequences]
    if pool is None:
        errors = [sequence_errors(model, *job) for job in jobs]
    else:
        errors = list(pool.map(_pooled_errors, jobs))
    shape, vertex, failed = zip(*errors)
    return float(np.mean(shape)), float(np.mean(vertex)), sum(failed)


def sequence_errors(model, sequence, material: CategoryMaterial, frames: int) -> tuple[float, float, bool]:
    """Mean shape and vertex error of one replay over its frames, and whether it went non-finite
    (FAILED_ERROR both then)."""
    try:
        positions = replay(model, sequence, material, frames)
    except SimulationError:
        return FAILED_ERROR, FAILED_ERROR, True
    return float(shape_errors_over_time(positions, sequence).mean()), vertex_error(positions, sequence), False


_worker_model = None  # a pool process's own copy of the model (``_load_worker``)


def _load_worker(weights: Path) -> None:
    global _worker_model
    _worker_model = load_model(weights, "cpu")


def _pooled_errors(job) -> tuple[float, float, bool]:
    return sequence_errors(_worker_model, *job)


def latent_reach(model, corpus: Path, examples: int = 256, seed: int = 0) -> np.ndarray:
    """|s| of the posterior means of ``examples`` training examples in their shapes' active subspaces."""
    items = load_corpus(corpus, "train")
    rng = np.random.default_rng(seed)
    reach = []
    for _ in range(examples):
        example = make_example(items[int(rng.integers(len(items)))], rng, model.config, augment=False)
        t = batch_tensors(model, collate([example]), "cpu")
        with torch.no_grad():
            prior_mean, tokens = model.prior(t["features"])
            mean, _ = model.posterior(t["features"], t["deformation"])
        subspace = active_subspace(model, prior_mean[0], tokens[0], t["query_features"][0])
        reach.append(float(torch.einsum("ilc,lc->i", subspace.basis, (mean - prior_mean)[0]).norm()))
    return np.asarray(reach)


def calibrate(corpus: Path, weights: Path, per_category: int, frames: int, categories=DEFORMABLE,
              spread: int = 7, jobs: int = 1, frequencies=FREQUENCIES, dampings=None) -> dict:
    """The materials of ``categories`` and, when all are calibrated, the latent reach: a property of
    the model over the whole corpus, which a run on some categories (often on a corpus of only those)
    leaves to the previous report."""
    model = load_model(weights, "cpu")
    report = {}
    if set(categories) == set(DEFORMABLE):
        reach = latent_reach(model, corpus)
        percentiles = {str(p): float(np.percentile(reach, p)) for p in (50, 90, 99)}
        print(f"posterior |s| over {len(reach)} training examples, percentiles 50/90/99: "
              + " / ".join(f"{v:.2f}" for v in percentiles.values()), flush=True)
        report = {"reach_percentiles": percentiles, "reach_examples": len(reach)}
    chosen = pick_sequences(corpus, "train", per_category, spread)
    pool = spawned_pool(jobs, _load_worker, weights) if jobs > 1 else None
    try:
        for category in categories:
            sequences = chosen.get(category, [])
            if not sequences:
                raise ValueError(f"no usable {category} training sequences in {corpus}")
            report[category] = calibrate_category(model, category, sequences, frames, pool, frequencies, dampings)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)  # an interrupted calibration does not wait for queued replays
    return report


def calibrate_category(model, category: str, sequences, frames: int, pool, frequencies=FREQUENCIES,
                       dampings=None) -> dict:
    """The frequency by shape error; then by vertex error, for FLOWING categories the damping and yield
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
            trials[key] = result = score(model, sequences, material, frames, pool)
            print(f"  {category} {frequency} Hz, {damping}/s, yield strain {strain}, rolling resistance {rolling}, "
                  f"restitution {restitution}, least damping ratio {ratio}, contact stiffness ratio {contact}: "
                  f"shape error {result[0]:.4f}, vertex error {result[1]:.4f}", flush=True)
        return trials[key]

    # one frequency given is kept without replaying it
    frequency = frequencies[0] if len(frequencies) == 1 else min(frequencies, key=lambda f: trial(f, FIRST_DAMPING)[0])
    grid = tuple(dampings or (JOINT_DAMPINGS if category in JOINTED else DAMPINGS))
    strain, rolling, restitution, ratio = None, 0.0, 0.0, 0.0
    if category in FLOWING or category in JOINTED:
        damping, strain = min(itertools.product(grid, YIELDS), key=lambda dy: trial(frequency, *dy)[1])
        if category in FLOWING and strain is not None:  # rigid links flatten no footprint
            rolling = min(ROLLINGS, key=lambda r: trial(frequency, damping, strain, r)[1])
        if category in FLOWING:  # its bodies that never yield (jelly) get the give as elastic solids do
            restitution = min(RESTITUTIONS, key=lambda e: trial(frequency, damping, strain, rolling, e)[1])
        if category in JOINTED:
            ratio = min(LEAST_DAMPING_RATIOS, key=lambda z: trial(frequency, damping, strain, ratio=z)[1])
    elif category in SPRINGY:
        damping, restitution = min(itertools.product(grid, RESTITUTIONS),
                                   key=lambda de: trial(frequency, de[0], restitution=de[1])[1])
    else:
        damping = min(grid, key=lambda d: trial(frequency, d)[0])
    contact = None
    if category in SOLID:  # a soft solid lands on a patch of itself that gives (material.contact_stiffness)
        contact = min(CONTACT_RATIOS,
                      key=lambda c: trial(frequency, damping, strain, rolling, restitution, ratio, c)[1])
    error, vertex, failed = trials[(frequency, damping, strain, rolling, restitution, ratio, contact)]
    report = {"frequency": frequency, "damping": damping, "yield_strain": strain, "rolling_resistance": rolling,
              "restitution": restitution, "least_damping_ratio": ratio,
              "stiffness_proportional": proportional, "mass_per_length": per_length,
              "contact_stiffness_ratio": contact, "shape_error": error, "vertex_error": vertex,
              "failed": failed, "sequences": [s.shape for s in sequences], "frames": frames,
              "trials": [{"frequency": f, "damping": d, "yield_strain": y, "rolling_resistance": r, "restitution": rest,
                          "least_damping_ratio": z, "contact_stiffness_ratio": c, "shape_error": shape,
                          "vertex_error": v, "failed": n}
                         for (f, d, y, r, rest, z, c), (shape, v, n) in trials.items()],
              "seconds": round(time.perf_counter() - began, 1)}
    print(f"{category}: {frequency} Hz, {damping}/s, yield strain {strain}, rolling resistance {rolling}, restitution "
          f"{restitution}, least damping ratio {ratio}, contact stiffness ratio {contact}, mean shape error "
          f"{error:.4f} of the diagonal (vertex error {vertex:.4f}), {failed} non-finite ({len(sequences)} sequences, "
          f"{report['seconds']} s)", flush=True)
    return report


def mean_mass_per_length(sequences) -> float:
    """The geometric mean of the sequences' bodies' ``neurok.mass_per_length`` (kg/m): where a solid
    category's measured frequency holds (``material.solid_frequency_scale``)."""
    return float(np.exp(np.mean([np.log(mass_per_length(s.rest_vertices.astype(np.float64), s.faces,
                                                        s.conditions["mass"])) for s in sequences])))


def store(weights: Path, report: dict) -> None:
    """Write the report's materials into the checkpoint next to the weights (atomically); categories
    the report does not cover keep theirs."""
    payload = read_checkpoint(weights)
    materials = dict(payload.get("materials", {}))
    materials.update({c: {k: report[c][k] for k in MATERIAL_FIELDS if k in report[c]}
                      for c in DEFORMABLE if c in report})
    missing = set(DEFORMABLE) - set(materials)
    if missing:
        raise ValueError(f"{weights} would have no material for {sorted(missing)}: calibrate them too")
    save_checkpoint(weights, load_model(weights, "cpu"), payload["about"], materials=materials)


def table(report: dict) -> str:
    lines = ["| category | frequency (Hz) | damping (1/s) | yield strain | rolling resistance | restitution "
             "| least damping ratio | at mass per length (kg/m) | contact stiffness / omega^2 "
             "| mean shape error / diagonal | mean vertex error / diagonal | non-finite | sequences x frames |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for category in (c for c in DEFORMABLE if c in report):
        r = report[category]
        strain = "never" if r.get("yield_strain") is None else r["yield_strain"]
        damping = f"{r['damping']} x stiffness" if r.get("stiffness_proportional") else r["damping"]
        lines.append(f"| {category} | {r['frequency']} | {damping} | {strain} | {r.get('rolling_resistance', 0.0)} "
                     f"| {r.get('restitution', 0.0)} | {r.get('least_damping_ratio', 0.0)} "
                     f"| {'any' if r.get('mass_per_length') is None else round(r['mass_per_length'], 3)} "
                     f"| {'default' if r.get('contact_stiffness_ratio') is None else r['contact_stiffness_ratio']} "
                     f"| {r['shape_error']:.4f} "
                     f"| {r['vertex_error']:.4f} | {r['failed']} | {len(r['sequences'])} x {r['frames']} |")
    if "reach_percentiles" in report:
        reach = report["reach_percentiles"]
        lines.append(f"\nPosterior |s| of {report['reach_examples']} training examples in their shapes' reduced "
                     f"coordinates, percentiles 50 / 90 / 99: {reach['50']:.2f} / {reach['90']:.2f} / {reach['99']:.2f}.")
    return "\n".join(lines)


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


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
    a = parser.parse_args()
    report = calibrate(a.corpus, a.weights, a.sequences, a.frames, a.categories, a.spread, a.jobs, a.frequencies,
                       a.dampings)
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
