"""The training script: it learns, logs, checkpoints, and a resumed run repeats an uninterrupted one."""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from neurok_blender.core.checkpoint import load_model
from neurok_blender.core.model import ModelConfig
from training.corpus.articulated import sample_articulated
from training.corpus.shards import write_shard
from training.examples import augmentation, draw_pair, make_example, prepare, rigid_alignment, shape_change
from training.train import train

TINY = ModelConfig(width=32, heads=2, tokens=8, channels=4, encoder_depth=1, decoder_depth=1, frequencies=4,
                   encoder_points=128, queries=32)


def tiny_corpus(root: Path, training: int = 2) -> Path:
    """root/corpus: ``training`` articulated training sequences and one held out, a shard each."""
    corpus = root / "corpus"
    corpus.mkdir()
    write_shard(corpus / "articulated-train-00000.npz", [sample_articulated(s, "train") for s in range(training)],
                (0, training), "t")
    write_shard(corpus / "articulated-heldout-00000.npz", [sample_articulated(0, "heldout")], (0, 1), "t")
    return corpus


def test_rigid_alignment_recovers_a_rotation_and_the_example_removes_it():
    rng = np.random.default_rng(0)
    points = rng.normal(size=(30, 3))
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    turn = q * np.sign(np.diag(r)) * np.linalg.det(q * np.sign(np.diag(r)))
    rotation, shift = rigid_alignment(points @ turn.T + [1.0, 2.0, 3.0], points, np.ones(30))
    np.testing.assert_allclose(points @ turn.T @ rotation.T + [1.0, 2.0, 3.0] @ rotation.T + shift, points, atol=1e-9)
    sequence = sample_articulated(0, "train")
    sequence.positions = np.stack([sequence.positions[0], sequence.positions[0] @ turn.T + 0.5]).astype(np.float32)
    for category in ("articulated", "elastic"):  # a purely rigid motion leaves nothing to learn, however augmented
        sequence.category = category
        for seed in range(8):
            example = make_example(prepare(sequence), np.random.default_rng(seed), TINY)
            assert np.abs(example["targets"] - example["evaluation"]).max() < 1e-5  # stretched before aligned: 0.12
            assert np.abs(example["deformation"]).max() < 1e-5


def test_sheets_and_hinged_objects_are_only_turned_and_solids_stretched_too():
    rng = np.random.default_rng(0)
    for category, kept in (("cloth", True), ("articulated", True), ("elastic", False), ("continuum", False)):
        for _ in range(4):
            transform = augmentation(category, rng)
            assert transform[2] == pytest.approx([0.0, 0.0, transform[2, 2]])  # gravity stays along z
            assert np.allclose(transform @ transform.T, np.eye(3)) == kept  # an isometry keeps every length


def test_pairs_by_change_draw_the_frames_that_change_shape_and_a_resume_must_keep_the_draw(tmp_path):
    """Half the frames only move (a turn and a shift: no change), half stretched by 25 % along x and squashed by 20 % along y:
    drawn by change, nine in ten second frames are squashed ones (each frame's weight is its change
    plus a quarter of the mean), drawn uniformly half."""
    sequence = sample_articulated(0, "train")
    rest = sequence.positions[0].astype(np.float64)
    c, s = np.cos(0.3), np.sin(0.3)
    moved = rest @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]).T + [0.2, 0.0, 0.1]
    squashed = rest * [1.25, 0.8, 1.0]
    sequence.positions = np.stack([rest] + [moved] * 29 + [squashed] * 30).astype(np.float32)
    change = shape_change(sequence)
    assert np.abs(change[:30]).max() < 1e-6 and change[30:].min() > 0.01
    item, rng = prepare(sequence), np.random.default_rng(0)
    for pairs, share in (("by-change", 0.9), ("uniform", 0.5)):
        drawn = np.array([draw_pair(item, rng, pairs)[1] for _ in range(4000)])
        assert abs((drawn >= 30).mean() - share) < 0.03
    with pytest.raises(ValueError, match="pairs must be one of"):
        draw_pair(item, rng, "most")
    corpus = tiny_corpus(tmp_path)
    train(corpus, tmp_path / "run", steps=4, batch=2, seed=0, device="cpu", config=TINY, pairs="by-change", until=2)
    with pytest.raises(ValueError, match="pairs"):
        train(corpus, tmp_path / "run", steps=4, batch=2, seed=0, device="cpu", config=TINY)


def test_training_logs_saves_and_resumes_exactly_with_batches_drawn_here_or_by_worker_processes(tmp_path):
    corpus = tiny_corpus(tmp_path, 3)
    whole = train(corpus, tmp_path / "whole", steps=6, batch=2, seed=0, device="cpu", config=TINY, log_every=2)
    train(corpus, tmp_path / "parts", steps=6, batch=2, seed=0, device="cpu", config=TINY, log_every=2, until=4)
    resumed = train(corpus, tmp_path / "parts", steps=6, batch=2, seed=0, device="cpu", config=TINY, log_every=2,
                    draw_workers=2)
    a, b = load_model(whole, "cpu").state_dict(), load_model(resumed, "cpu").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    rows = [json.loads(line) for line in (tmp_path / "whole" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [2, 4, 6]
    assert all(np.isfinite(r["loss"]) and 0 < r["heldout_vertex_error"] < 1 for r in rows)
    with pytest.raises(ValueError, match="draw_workers must be at least 1"):
        train(corpus, tmp_path / "none", steps=6, batch=2, seed=0, device="cpu", config=TINY, draw_workers=0)


def test_a_fine_tune_starts_from_the_weights_it_is_given_and_a_resume_must_keep_them(tmp_path):
    corpus = tiny_corpus(tmp_path)
    base = train(corpus, tmp_path / "base", steps=2, batch=2, seed=0, device="cpu", config=TINY)
    still = train(corpus, tmp_path / "tune", steps=1, batch=2, seed=1, device="cpu", config=TINY, init=base,
                  learning_rate=0.0)  # no step taken: the weights it started from
    a, b = load_model(base, "cpu").state_dict(), load_model(still, "cpu").state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(ValueError, match="init"):  # the checkpoint there started from base's weights
        train(corpus, tmp_path / "tune", steps=2, batch=2, seed=1, device="cpu", config=TINY)
    with pytest.raises(ValueError, match="another config"):
        train(corpus, tmp_path / "other", steps=1, batch=2, seed=0, device="cpu",
              config=dataclasses.replace(TINY, width=16), init=base)


def test_a_resume_must_find_the_shards_it_trained_on(tmp_path):
    """The run lists its shards in OUT/manifest.json; another shard in the corpus would change every
    later batch, so the resume is refused and says which."""
    corpus = tiny_corpus(tmp_path)
    train(corpus, tmp_path / "run", steps=2, until=1, batch=2, seed=0, device="cpu", config=TINY)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert sorted(manifest["shards"]) == ["articulated-heldout-00000.npz", "articulated-train-00000.npz"]
    assert manifest["steps"] == 1
    write_shard(corpus / "articulated-train-00001.npz", [sample_articulated(2, "train")], (2, 3), "t")
    with pytest.raises(ValueError, match="another corpus .added: articulated-train-00001.npz"):
        train(corpus, tmp_path / "run", steps=2, batch=2, seed=0, device="cpu", config=TINY)
    (corpus / "articulated-train-00001.npz").unlink()
    train(corpus, tmp_path / "run", steps=2, batch=2, seed=0, device="cpu", config=TINY)  # the same shards again
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["steps"] == 2


def test_kl_warmup_ramps_the_weight_and_a_resume_must_keep_it(tmp_path):
    corpus = tiny_corpus(tmp_path)
    out = tmp_path / "run"
    train(corpus, out, steps=4, batch=2, seed=0, device="cpu", config=TINY, log_every=1, kl_weight=2.0, kl_warmup=4,
          until=2)
    with pytest.raises(ValueError, match="kl_warmup"):
        train(corpus, out, steps=4, batch=2, seed=0, device="cpu", config=TINY, log_every=1, kl_weight=2.0)
    with pytest.raises(ValueError, match="kl_warmup must be"):  # a negative ramp would flip the KL's sign
        train(corpus, out, steps=4, batch=2, seed=0, device="cpu", config=TINY, kl_warmup=-4)
    train(corpus, out, steps=4, batch=2, seed=0, device="cpu", config=TINY, log_every=1, kl_weight=2.0, kl_warmup=4)
    rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [r["kl_weight"] for r in rows] == [0.5, 1.0, 1.5, 2.0]
    assert all(abs(r["loss"] - r["reconstruction"] - r["kl_weight"] * r["kl"]) < 1e-3 * r["loss"] for r in rows)


def test_torchrun_trains_data_parallel_like_one_process_and_its_checkpoint_resumes_alone(tmp_path, monkeypatch):
    """Two processes under torchrun (gloo on the CPU) train the same batches as one: the same logged
    losses, steps and schedule; a checkpoint they leave resumes in one process."""
    corpus = tiny_corpus(tmp_path, 3)
    alone = train(corpus, tmp_path / "alone", steps=4, batch=4, seed=0, device="cpu", config=TINY, log_every=1)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", "training.train", str(corpus), str(tmp_path / "two"), "--steps", "4", "--batch", "4",
               "--device", "cpu", "--log-every", "1", "--until", "2",
               "--config", json.dumps({k: v for k, v in dataclasses.asdict(TINY).items() if k != "dual_quaternion"})]
    run = subprocess.run(command, cwd=Path(__file__).parents[2], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "2 processes on cpu" in run.stdout
    resumed = train(corpus, tmp_path / "two", steps=4, batch=4, seed=0, device="cpu", config=TINY, log_every=1)
    rows = {name: [json.loads(line) for line in (tmp_path / name / "log.jsonl").read_text().splitlines()]
            for name in ("alone", "two")}
    assert [r["step"] for r in rows["two"]] == [1, 2, 3, 4]  # written once, by process 0, then by the resume
    for a, b in zip(rows["alone"], rows["two"], strict=True):  # equal but for the order of float sums
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
        assert a["heldout_vertex_error"] == pytest.approx(b["heldout_vertex_error"], rel=1e-5)
    a, b = load_model(alone, "cpu").state_dict(), load_model(resumed, "cpu").state_dict()
    assert max((a[k] - b[k]).abs().max().item() for k in a) < 1e-5  # measured 2e-7
    monkeypatch.setenv("WORLD_SIZE", "3")
    with pytest.raises(ValueError, match="does not split evenly"):
        train(corpus, tmp_path / "odd", steps=4, batch=4, seed=0, device="cpu", config=TINY)


def test_heldout_error_gives_a_runs_logged_figure_for_its_saved_weights(tmp_path):
    from training.heldout_error import heldout_error
    from training.train import load_corpus

    corpus = tiny_corpus(tmp_path)
    train(corpus, tmp_path / "run", steps=2, batch=2, seed=0, device="cpu", config=TINY, log_every=2)
    logged = json.loads((tmp_path / "run" / "log.jsonl").read_text().splitlines()[-1])["heldout_vertex_error"]
    error, still = heldout_error(tmp_path / "run" / "neurok.pt", load_corpus(corpus, "heldout"))
    assert error == pytest.approx(logged, rel=1e-6) and still > 0
    assert heldout_error(tmp_path / "run" / "neurok.pt", load_corpus(corpus, "heldout"), seed=1)[0] != pytest.approx(logged)
