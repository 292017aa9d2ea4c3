"""Corpus records, shards and the resumable generator."""

import json

import numpy as np
import pytest

from training.corpus.articulated import sample_articulated
from training.corpus.sequence import Sequence
from training.corpus.shards import read_shard, write_shard
from neurok_blender.executors import Executor
from training.generate import generate


def test_shards_round_trip_keeping_small_parts_far_from_the_origin(tmp_path):
    sequences = [sample_articulated(seed, "train") for seed in range(3)]
    for s in sequences:
        s.positions = s.positions + np.float32(10.0)  # thrown 10 m away: float16 world coordinates would step 8 mm
    write_shard(tmp_path / "a.npz", sequences, (0, 3), "test")
    back = read_shard(tmp_path / "a.npz")
    assert [s.shape for s in back] == [s.shape for s in sequences]
    for original, stored in zip(sequences, back):
        size = np.ptp(original.positions, axis=1).max()
        assert np.abs(stored.positions - original.positions).max() < 5e-4 * size  # float16 offsets from centroids
        assert np.array_equal(stored.faces, original.faces) and np.array_equal(stored.part_ids, original.part_ids)
        assert stored.metadata() == json.loads(json.dumps(original.metadata(), default=lambda o: o.tolist()))


def test_a_sequence_is_a_function_of_its_seed_and_split():
    a, b = sample_articulated(11, "train"), sample_articulated(11, "train")
    assert np.array_equal(a.positions, b.positions) and a.conditions == b.conditions
    assert sample_articulated(11, "heldout").shape != a.shape


def test_a_nudge_changes_the_initial_velocity_and_nothing_else():
    """benchmarks/reference_spread.py makes a sequence again from a start 1 mm/s off."""
    a, b = sample_articulated(11, "train"), sample_articulated(11, "train", nudge=1e-3)
    assert b.shape == a.shape and b.material == a.material
    assert b.conditions["velocity"][0] == pytest.approx(a.conditions["velocity"][0] + 1e-3, abs=1e-12)
    assert {**b.conditions, "velocity": None} == {**a.conditions, "velocity": None}
    step = np.abs(b.positions[1] - a.positions[1]).max()
    assert 0 < step < 2e-3 / 24  # the first frame moved by about the nudge times a frame


def test_sequences_record_what_the_model_needs():
    s = sample_articulated(4, "train")
    assert s.positions.shape == (60, len(s.rest_vertices), 3)
    np.testing.assert_allclose(s.positions[0], s.rest_vertices, atol=1e-5)
    assert np.isclose(s.masses.sum(), s.conditions["mass"], rtol=1e-5)
    assert s.checks["penetration"] < 0.02 and s.checks["pivot_gap"] < 1e-6
    with pytest.raises(ValueError, match="category"):
        Sequence(**{**vars(s), "category": "foam"})


def test_generation_is_parallel_resumable_and_split_by_shape(tmp_path):
    assert generate(tmp_path, "articulated", {"train": 12, "heldout": 4}, size=4, executor=Executor(workers=2)) == 16
    rows = [json.loads(line) for line in (tmp_path / "manifest.jsonl").read_text().splitlines()]
    train = {r["shape"] for r in rows if r["split"] == "train"}
    heldout = {r["shape"] for r in rows if r["split"] == "heldout"}
    assert len(train) > 1 and heldout and not train & heldout

    second = tmp_path / "articulated-train-00001.npz"
    before = read_shard(second)
    second.unlink()  # an interrupted run lacks this shard; the same command completes it, identically
    stamp = (tmp_path / "articulated-train-00000.npz").stat().st_mtime_ns
    assert generate(tmp_path, "articulated", {"train": 12, "heldout": 4}, size=4, executor=Executor(workers=2)) == 16
    assert (tmp_path / "articulated-train-00000.npz").stat().st_mtime_ns == stamp
    assert all(np.array_equal(a.positions, b.positions) for a, b in zip(before, read_shard(second)))
    with pytest.raises(ValueError, match="use a new folder"):  # another layout must not mix with this one
        generate(tmp_path, "articulated", {"train": 12, "heldout": 4}, size=3)


def test_ray_makes_the_same_shards(tmp_path):
    """A shard depends on its seeds only, whatever runs it: Ray tasks against local processes."""
    pytest.importorskip("ray")
    for folder, executor in (("pool", Executor(workers=2)), ("ray", Executor(ray="local"))):
        assert generate(tmp_path / folder, "articulated", {"train": 4}, size=2, executor=executor) == 4
    for index in range(2):
        name = f"articulated-train-{index:05d}.npz"
        pool, ray = read_shard(tmp_path / "pool" / name), read_shard(tmp_path / "ray" / name)
        assert all(np.array_equal(a.positions, b.positions) for a, b in zip(pool, ray, strict=True))


def test_a_failing_seed_is_recorded_and_the_rest_is_kept(tmp_path, monkeypatch):
    from training import generate as module

    def flaky(seed, split):
        if seed == 1:
            raise RuntimeError("simulator exploded")
        return sample_articulated(seed, split)

    monkeypatch.setitem(module.SAMPLERS, "articulated", flaky)
    path, made, failed, _ = module.make_shard((tmp_path, "articulated", "train", 0, 0, 3))
    assert (made, failed) == (2, 1) and len(read_shard(path)) == 2
    assert "simulator exploded" in (tmp_path / f"{path.name}.failures.json").read_text()


def test_a_corpus_whose_shapes_are_missing_stops_before_its_first_shard(tmp_path, monkeypatch):
    """Without the fused blobs a third of the continuum's seeds would each fail: none is started."""
    monkeypatch.setenv("NEUROK_SHAPE_CACHE", str(tmp_path / "no-shapes"))
    with pytest.raises(ValueError, match="training.shapes.library"):
        generate(tmp_path / "corpus", "continuum", {"train": 4, "heldout": 0}, size=2)
    assert not (tmp_path / "corpus").exists()


def test_validation_table_counts_checks_per_category():
    from training.validate import table

    rows = [{"category": "articulated", "split": split, "shape": f"s{i}",
             "checks": {"penetration": pen, "finite": True, "seconds": 0.5}}
            for i, (split, pen) in enumerate([("train", 0.001), ("train", 0.05), ("heldout", 0.0)])]
    text = table(rows)
    assert "| articulated | 2 | 1 | 3 | 7200 |" in text
    assert "66.7% of 3" in text and "100.0% of 3" in text


def test_a_stored_sequence_gives_back_its_conditions_and_its_material_as_scales(tmp_path):
    from dataclasses import asdict

    from training.corpus.conditions import conditions_of
    from training.reference.articulated import ArticulatedMaterial
    from training.reference.cloth import ClothMaterial
    from training.reference.continuum import ContinuumMaterial
    from training.reference.elastic import ElasticMaterial
    from training.reference.scales import material_conditions, material_scales

    sequences = [sample_articulated(seed, "train") for seed in range(12)]
    write_shard(tmp_path / "a.npz", sequences, (0, 12), "test")
    for original, stored in zip(sequences, read_shard(tmp_path / "a.npz")):
        conditions = conditions_of(stored, category="articulated")
        assert conditions.category == "articulated" and conditions.frames == len(original.positions)
        assert len(conditions.forces) == len(original.conditions["forces"])
        assert all(np.allclose(a.vector, b["vector"]) for a, b in zip(conditions.forces, original.conditions["forces"]))
        assert (conditions.pull is None) == (original.conditions["pull"] is None)
        conditions.check(len(stored.rest_vertices))
    # our solver's settings stored with a sequence are not the reference's: replays take today's defaults
    stored.conditions.update(integrator="rk4", substeps=3)
    assert (conditions_of(stored).integrator, conditions_of(stored).substeps) == ("auto", None)
    defaults = {"elastic": ElasticMaterial(), "cloth": ClothMaterial(), "continuum": ContinuumMaterial(),
                "articulated": ArticulatedMaterial()}
    for category, material in defaults.items():
        assert material_scales(category, asdict(material)) == {"stiffness": 1.0, "damping": 1.0, "plasticity": 1.0}
    assert material_scales("elastic", {**asdict(ElasticMaterial()), "young": 2e5})["stiffness"] == 4.0
    jelly = {**asdict(ContinuumMaterial()), "model": "jelly"}
    assert material_scales("continuum", jelly)["plasticity"] == 0.0  # springs back, as the reference does
    assert material_scales("continuum", jelly)["damping"] == 0.0  # and MPM has no viscosity
    soft = {**jelly, "young": 1e5}  # an elastic sequence by MPM (corpus/soft.py)
    assert material_scales("elastic", soft) == {"stiffness": 2.0, "damping": 0.0, "plasticity": 1.0}
    sand = {**asdict(ContinuumMaterial()), "model": "sand", "friction": 0.7}  # the ground the reference rubbed on
    assert material_conditions("continuum", sand)["friction"] == 0.7
    assert "friction" not in material_conditions("cloth", asdict(ClothMaterial()))  # Blender's units, not Coulomb's
