"""The calibration: its objective (the shape error sees the deformation, not where the body went), its
stages and its store."""

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from neurok_blender.core.checkpoint import load_model, read_checkpoint, save_checkpoint
from neurok_blender.core.mesh import box_mesh
from neurok_blender.core.model import ModelConfig, NeuROKModel
from neurok_blender.core.material import CategoryMaterial
from neurok_blender.core.neurok import NeuROK
from neurok_blender.core.neural import WALL_MARGIN
from neurok_blender.core.options import Conditions
import training.calibrate as calibrate
from training.calibrate import calibrate_category, store
from training.evaluation import edge_strain, peak_strain, shape_errors_over_time
from training.parent_watch import spawned_pool


def test_the_shape_error_ignores_rigid_motion_and_measures_a_stretch():
    rng = np.random.default_rng(0)
    rest = rng.normal(size=(200, 3))
    turn = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    turn *= np.sign(np.linalg.det(turn))  # a rotation, not a reflection
    moved = rest @ turn.T + np.array([3.0, -1.0, 2.0])
    center = moved.mean(0)
    stretched = center + 1.02 * (moved - center)
    sequence = SimpleNamespace(rest_vertices=rest, positions=np.stack([rest, moved, moved]))
    errors = shape_errors_over_time(np.stack([moved, rest, stretched]), sequence)
    diagonal = np.linalg.norm(np.ptp(rest, axis=0))
    np.testing.assert_allclose(errors[:2], 0.0, atol=1e-12)
    # the best rigid fit of a copy stretched about its centroid is the copy itself: 2 % of each arm is left
    np.testing.assert_allclose(errors[2], 0.02 * np.linalg.norm(moved - center, axis=1).mean() / diagonal, rtol=1e-9)


def test_the_edge_strain_ignores_rigid_motion_and_reads_a_stretch_along_one_axis():
    rest, faces = box_mesh((1.0, 1.0, 1.0), (0.0, 0.0, 0.0))
    faces = np.concatenate([faces, [[0, 0, 1]]])  # a degenerate triangle: its edge of no length is left out
    turn = np.linalg.qr(np.random.default_rng(1).normal(size=(3, 3)))[0]
    assert edge_strain(rest, rest @ turn.T + 2.0, faces) == pytest.approx(0.0, abs=1e-12)
    stretched = rest * [1.1, 1.0, 1.0]  # the edges along x strain 10 %, the diagonals across x less
    assert edge_strain(rest, stretched, faces) == pytest.approx(0.1, rel=1e-9)
    sequence = SimpleNamespace(rest_vertices=rest, faces=faces)
    assert peak_strain(np.stack([rest, stretched, rest]), sequence) == pytest.approx(0.1, rel=1e-9)


TINY = ModelConfig(width=32, heads=2, tokens=8, channels=4, encoder_depth=1, decoder_depth=1, frequencies=4,
                   encoder_points=128, queries=32)
BEFORE = {c: {"frequency": 2.0, "damping": 0.5} for c in ("elastic", "cloth", "continuum", "articulated")}


def _tiny_checkpoint(tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "neurok.pt"
    save_checkpoint(path, NeuROKModel(TINY), {"steps": 7}, materials=BEFORE)
    return path


def test_calibrating_one_category_keeps_the_others_materials(tmp_path):
    path = _tiny_checkpoint(tmp_path)
    store(path, {"continuum": {"frequency": 32.0, "damping": 0.5, "yield_strain": 0.02, "rolling_resistance": 1.0,
                               "contact_stiffness_ratio": 16.0}})
    materials = NeuROK.load(path).materials
    assert materials["continuum"].frequency == 32.0 and materials["continuum"].yield_strain == 0.02
    assert materials["continuum"].contact_stiffness_ratio == 16.0 and materials["elastic"].contact_stiffness_ratio is None
    assert materials["continuum"].rolling_resistance == 1.0 and materials["elastic"].rolling_resistance == 0.0
    assert materials["elastic"].frequency == 2.0 and materials["elastic"].yield_strain is None
    assert read_checkpoint(path)["about"] == {"steps": 7}


# two unit cubes (V = 1 m^3) of 1 and 4 kg, as calibration sequences of a solid category
SOLIDS = [SimpleNamespace(shape=f"cube-{mass}", rest_vertices=box_mesh()[0], faces=box_mesh()[1],
                          conditions={"mass": mass}) for mass in (1.0, 4.0)]


def test_the_wall_goes_where_the_training_posteriors_lie_never_inside_the_typical_set():
    sizes = np.full(100, 9)
    inside = 3.0 + np.linspace(0.0, 1.0, 100)  # |s| - sqrt(9) up to 1: within the prior's typical set
    assert calibrate.wall_margin_of(inside, sizes) == WALL_MARGIN
    far = 3.0 + np.linspace(0.0, 10.0, 101)[:100]  # |s| - sqrt(k) from 0 to 9.9: 90 % within 8.9
    assert calibrate.wall_margin_of(far, sizes) == pytest.approx(np.percentile(far - 3.0, calibrate.WALL_PERCENTILE))
    assert 8.8 < calibrate.wall_margin_of(far, sizes) < 9.0


def test_a_stored_wall_margin_moves_the_solver_s_wall_and_stays_through_a_later_calibration(tmp_path):
    path = _tiny_checkpoint(tmp_path)
    assert NeuROK.load(path).wall_margin == WALL_MARGIN  # weights without one: the typical set's
    store(path, {"wall_margin": 7.5})
    store(path, {"cloth": {"frequency": 4.0, "damping": 2.0}})  # a category alone leaves the wall as it was
    neurok = NeuROK.load(path)
    assert neurok.wall_margin == 7.5 and neurok.materials["cloth"].frequency == 4.0
    with torch.no_grad():  # a decoder that moves the box enough to give it coordinates
        neurok.model.head[-1].weight.mul_(30.0)
    vertices, faces = box_mesh((0.6, 0.4, 0.2))
    kmap, report = neurok.body(vertices, faces, Conditions(category="elastic"), "elastic")
    assert kmap.wall_radius == pytest.approx(np.sqrt(report.reduced_coordinates) + 7.5)
    with pytest.raises(ValueError, match="wall margin"):
        NeuROK(neurok.model, neurok.materials, wall_margin=float("nan"))


def _landscape(monkeypatch):
    """A made-up score: the shape error is least at 8 Hz and 32 /s; the vertex error is least at 0.5 /s
    with a yield of 0.02, as when a yield dissipates what the damping otherwise must, a rolling
    resistance of 0.5, a restitution of 0.3, a least damping ratio of 1 and a contact stiffness of 16
    omega^2; the shape changes as the reference's at 1 Hz and as 1 / frequency, as springs hold it, and
    the edges stretch as much as the reference's; the vertex error at the short horizon is least at 4 Hz."""
    def score(model, sequences, material, frames, pool=None, wall_margin=None):
        shape = abs(np.log2(material.frequency / 8.0)) + 0.01 * abs(np.log2(material.damping / 32.0))
        vertex = (abs(np.log2(material.damping / 0.5)) + (1.0 if material.yield_strain != 0.02 else 0.0)
                  + 0.1 * abs(material.rolling_resistance - 0.5) + 0.1 * abs(material.restitution - 0.3)
                  + 0.1 * abs(material.least_damping_ratio - 1.0)
                  + 0.1 * (material.contact_stiffness_ratio != 16.0))
        return calibrate.Score(shape, vertex, 0, 1.0 / material.frequency, abs(np.log2(material.frequency / 4.0)),
                               1.0)
    monkeypatch.setattr(calibrate, "score", score)


def test_a_cloth_category_takes_frequency_and_damping_by_shape_error(monkeypatch):
    _landscape(monkeypatch)
    report = calibrate_category(None, "cloth", [SimpleNamespace(shape="a")], 10, None)
    assert (report["frequency"], report["damping"], report["yield_strain"]) == (8.0, 32.0, None)
    assert report["rolling_resistance"] == 0.0 and report["restitution"] == 0.0
    assert report["least_damping_ratio"] == 0.0 and not report["stiffness_proportional"]
    assert report["contact_stiffness_ratio"] is None  # a sheet lies on a stiff floor


def test_a_jointed_category_takes_damping_and_yield_together_then_its_least_damping_ratio_by_vertex_error(
        monkeypatch):
    _landscape(monkeypatch)
    monkeypatch.setattr(calibrate, "JOINT_DAMPINGS", (0.5, 512.0))
    report = calibrate_category(None, "articulated", [SimpleNamespace(shape="a")], 10, None)
    assert (report["frequency"], report["damping"], report["yield_strain"]) == (8.0, 0.5, 0.02)
    tried = {(t["damping"], t["yield_strain"]) for t in report["trials"] if t["frequency"] == 8.0}
    assert set(itertools.product((0.5, 512.0), calibrate.YIELDS)) <= tried
    assert report["rolling_resistance"] == 0.0  # rigid links flatten no footprint, yielding or not
    assert report["restitution"] == 0.0  # rigid parts: the ground's restitution is all there is
    assert report["contact_stiffness_ratio"] is None  # rigid parts give nothing at the contact
    assert report["least_damping_ratio"] == 1.0
    floors = {t["least_damping_ratio"] for t in report["trials"] if (t["damping"], t["yield_strain"]) == (0.5, 0.02)}
    assert floors == set(calibrate.LEAST_DAMPING_RATIOS)  # tried at the chosen damping and yield


def test_the_motion_objective_takes_the_frequency_whose_shape_change_is_the_references(monkeypatch):
    """``objective="motion"``: the frequency whose median peak shape change is nearest the reference's
    (|log ratio|), not the least shape error (8 Hz); the later stages as before, at that frequency."""
    _landscape(monkeypatch)
    report = calibrate_category(None, "articulated", [SimpleNamespace(shape="a")], 10, None, objective="motion")
    assert (report["frequency"], report["damping"], report["yield_strain"]) == (1.0, 2.0, 0.02)  # 2 /s: the grid's least
    assert report["objective"] == "motion" and report["shape_change_ratio"] == 1.0
    with pytest.raises(ValueError, match="objective"):
        calibrate_category(None, "articulated", [SimpleNamespace(shape="a")], 10, None, objective="looks")


def test_the_motion_objective_keeps_to_frequencies_that_stretch_the_surface_no_more_than_the_references(
        monkeypatch):
    """A shape change made by stretching is not the reference's: where the edges strain as 3 / frequency
    times the reference's, "motion" takes the frequency of the nearest shape change among those within
    STRAIN_ALLOWANCE (2 Hz, not 1), and the least stretching one when none is within it."""
    _landscape(monkeypatch)
    landscape = calibrate.score
    stretching = lambda factor: lambda *args, **kwargs: landscape(*args, **kwargs)._replace(
        strain=factor / args[2].frequency)
    monkeypatch.setattr(calibrate, "score", stretching(3.0))
    report = calibrate_category(None, "cloth", [SimpleNamespace(shape="a")], 10, None, objective="motion")
    assert report["frequency"] == 2.0 and report["shape_change_ratio"] == 0.5 and report["strain_ratio"] == 1.5
    monkeypatch.setattr(calibrate, "score", stretching(1e3))
    report = calibrate_category(None, "cloth", [SimpleNamespace(shape="a")], 10, None, objective="motion")
    assert report["frequency"] == max(calibrate.FREQUENCIES)
    assert "| 0.03 | 31.25 |" in calibrate.table({"cloth": report})  # shape change and strain, against the references'


def test_the_strain_ratio_counts_a_rigid_reference_as_straining_the_floor():
    """A reference whose edges keep their lengths (rigid parts) is counted as straining STRAIN_FLOOR: a
    replay that stretches its edges by 3 % reads 1.5, one of rigid motion 0."""
    rest = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    sequence = SimpleNamespace(rest_vertices=rest, faces=np.array([[0, 1, 2]]))
    still = np.stack([rest, rest + 0.5])
    assert calibrate.strain_ratio(1.03 * still, still, sequence) == pytest.approx(0.03 / calibrate.STRAIN_FLOOR)
    assert calibrate.strain_ratio(still + 1.0, still, sequence) == pytest.approx(0.0, abs=1e-12)


def test_the_short_objective_takes_the_frequency_whose_early_path_is_the_references(monkeypatch):
    """``objective="short"``: the frequency with the least vertex error at the short horizon (4 Hz), not
    the least shape error (8 Hz) nor the reference's shape change (1 Hz); the later stages as before."""
    _landscape(monkeypatch)
    report = calibrate_category(None, "articulated", [SimpleNamespace(shape="a")], 10, None, objective="short")
    assert (report["frequency"], report["damping"], report["yield_strain"]) == (4.0, 2.0, 0.02)
    assert report["objective"] == "short" and report["short_error"] == 0.0 and report["shape_change_ratio"] == 0.25


def test_a_given_damping_grid_and_single_frequency_are_kept_without_replaying_the_frequency(monkeypatch):
    _landscape(monkeypatch)
    report = calibrate_category(None, "articulated", [SimpleNamespace(shape="a")], 10, None,
                                frequencies=(32.0,), dampings=(128.0,))
    assert (report["frequency"], report["damping"]) == (32.0, 128.0)
    assert {(t["frequency"], t["damping"]) for t in report["trials"]} == {(32.0, 128.0)}
    assert {t["yield_strain"] for t in report["trials"]} == set(calibrate.YIELDS)


def test_a_springy_category_takes_damping_and_restitution_together_by_vertex_error(monkeypatch):
    _landscape(monkeypatch)
    replayed, landscape = [], calibrate.score
    monkeypatch.setattr(calibrate, "score", lambda model, sequences, material, frames, pool=None, wall_margin=None: (
        replayed.append(material), landscape(model, sequences, material, frames, pool))[1])
    report = calibrate_category(None, "elastic", SOLIDS, 10, None)
    # MuJoCo flex damps as beta K: every replay and the stored material damp in proportion to the stiffness
    assert report["stiffness_proportional"] and all(m.stiffness_proportional for m in replayed)
    # the frequency holds at the bodies' mean mass per length, sqrt(1 kg / 1 m x 4 kg / 1 m)
    assert report["mass_per_length"] == pytest.approx(2.0) and all(m.mass_per_length == report["mass_per_length"]
                                                                   for m in replayed)
    assert (report["frequency"], report["damping"], report["restitution"]) == (8.0, 0.5, 0.3)
    assert report["yield_strain"] is None and report["rolling_resistance"] == 0.0
    assert report["least_damping_ratio"] == 0.0  # an elastic solid's own damping is what it has
    assert report["contact_stiffness_ratio"] == 16.0  # a soft solid's contact gives, last, at the chosen rest
    assert {t["contact_stiffness_ratio"] for t in report["trials"]
            if (t["damping"], t["restitution"]) == (0.5, 0.3)} == set(calibrate.CONTACT_RATIOS)
    tried = {(t["damping"], t["restitution"]) for t in report["trials"] if t["frequency"] == 8.0}
    assert set(itertools.product(calibrate.DAMPINGS, calibrate.RESTITUTIONS)) <= tried


def test_a_flowing_category_takes_damping_and_yield_together_then_rolling_then_restitution_by_vertex_error(
        monkeypatch):
    _landscape(monkeypatch)
    report = calibrate_category(None, "continuum", SOLIDS, 10, None)
    assert (report["frequency"], report["damping"], report["yield_strain"]) == (8.0, 0.5, 0.02)
    assert report["mass_per_length"] == pytest.approx(2.0)
    # its bodies that never yield get the give (neurok.NeuROK.body: one that yields gives nothing back)
    assert report["rolling_resistance"] == 0.5 and report["restitution"] == 0.3
    assert report["contact_stiffness_ratio"] == 16.0
    tried = {(t["frequency"], t["damping"], t["yield_strain"]) for t in report["trials"] if t["rolling_resistance"] == 0}
    assert {(8.0, d, y) for d in calibrate.DAMPINGS for y in calibrate.YIELDS} <= tried


def test_replays_in_worker_processes_score_as_in_this_one(tmp_path):
    from training.corpus.articulated import sample_articulated

    path = _tiny_checkpoint(tmp_path)
    sequences = [sample_articulated(seed, "train") for seed in range(2)]
    material = CategoryMaterial(8.0, 2.0)
    here = calibrate.score(load_model(path, "cpu"), sequences, material, frames=4)
    with spawned_pool(2, calibrate._load_worker, path) as pool:
        pooled = calibrate.score(None, sequences, material, frames=4, pool=pool)
    assert here[2] == pooled[2] == 0
    np.testing.assert_allclose([pooled[0], pooled[1], pooled[3]], [here[0], here[1], here[3]], rtol=1e-6)
    assert here[1] > 0  # the replays moved: a real comparison
