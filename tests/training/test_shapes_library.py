"""pybullet_data shapes: the OBJ reader, fusing convex parts into one surface, the splits and the cache."""

import json

import numpy as np
import pytest

from neurok_blender.core.mesh import box_mesh, is_closed
from training.shapes import library
from training.shapes.library import (EXTENT, HELDOUT_OBJECTS, MIN_VERTICES, NAMED_FILES, FusionError, all_blobs,
                                     blob_indices, data_path, fuse, fused_blob, named_object, prepared, preprocess,
                                     read_obj, refined, signed_volume, surface_problem)

FAST_BLOBS = [74, 88]  # measured 2 s each


def _write_obj(path, boxes):
    """Boxes as one OBJ, each its own object of 6 quads, corners written v/vt/vn, with negative indices."""
    lines = ["# two boxes", "vt 0 0", "vn 0 0 1"]
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    for k, (size, corner) in enumerate(boxes):
        v, _ = box_mesh(size, corner)
        lines += [f"o box_{k}"] + [f"v {x} {y} {z}" for x, y, z in v]
        lines += ["f " + " ".join(f"{i - 8}/1/1" for i in q) for q in quads]
    path.write_text("\n".join(lines) + "\n")


def test_the_reader_triangulates_polygons_and_resolves_every_index_form(tmp_path):
    path = tmp_path / "shapes.obj"
    path.write_text("# comment\no square\nv 0 0 0\nv 1 0 0\nv 1 1 0 0.5 0.5 0.5\nv 0 1 0\nvt 0 0\nvn 0 0 1\n"
                    "f 1/1/1 2/1/1 3/1/1 4/1/1\ng pentagon\nv 0 0 1\nv 1 0 1\nv 2 1 1\nv 1 2 1\nv 0 1 1\n"
                    "f -5//1 -4//1 -3//1 -2//1 -1//1\nf 1/1 5/1 6/1\n\nusemtl x\ns off\n")
    vertices, faces = read_obj(path)
    assert vertices.shape == (9, 3) and np.array_equal(vertices[2], [1, 1, 0])  # a vertex colour is ignored
    assert faces.tolist() == [[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7], [4, 7, 8], [0, 4, 5]]
    path.write_text("v 0 0 0\nf 1 2 3\n")
    with pytest.raises(ValueError, match="does not exist"):
        read_obj(path)


def test_two_overlapping_boxes_fuse_into_one_closed_surface_of_their_union(tmp_path):
    _write_obj(tmp_path / "boxes.obj", [((1, 1, 1), (0, 0, 0)), ((1, 1, 1), (0.5, 0.5, 0.25))])
    vertices, faces = read_obj(tmp_path / "boxes.obj")
    assert len(vertices) == 16 and surface_problem(vertices, faces) == "2 separate pieces"  # as written
    surface, triangles, record = fuse(vertices, faces, grow=0.0, envelope=0.003)
    assert surface_problem(surface, triangles) is None and record["parts"] == 2
    union = 2.0 - 0.5 * 0.5 * 0.75
    assert abs(signed_volume(surface, triangles) / union - 1) < 0.02


def test_growing_the_parts_closes_a_gap_between_them(tmp_path):
    gap = [((1, 1, 1), (0, 0, 0)), ((1, 1, 1), (1.02, 0, 0))]  # 2 cm apart, wider than the envelope
    _write_obj(tmp_path / "gap.obj", gap)
    vertices, faces = read_obj(tmp_path / "gap.obj")
    with pytest.raises(FusionError, match="2 separate pieces"):
        fuse(vertices, faces, grow=0.0, envelope=0.003)
    surface, triangles, _ = fuse(vertices, faces, grow=0.03, envelope=0.003)
    assert surface_problem(surface, triangles) is None
    overlap = (0.03 - 0.02) * 1.03**2  # each box reaches 1.5 % of its size further
    assert abs(signed_volume(surface, triangles) / (2 * 1.03**3 - overlap) - 1) < 0.02


def test_surfaces_touching_at_a_point_or_facing_inwards_are_caught():
    v, f = box_mesh()
    assert surface_problem(v, f) is None
    assert surface_problem(v, f[:, ::-1]) == "faces inwards"
    assert surface_problem(v, f[1:]) == "not closed"
    w, g = box_mesh(corner=(1, 1, 1))
    corner = np.where(g == 0, 7, g + 7)  # the second box's first vertex is the first box's last
    assert surface_problem(np.concatenate([v, w[1:]]), np.concatenate([f, corner])) == "1 non-manifold vertices"


def test_refining_splits_edges_without_changing_the_shape():
    v, f = box_mesh((1.0, 2.0, 3.0))
    fine, triangles = refined(v, f, 100)
    assert len(fine) == 100 and surface_problem(fine, triangles) is None
    assert np.isclose(signed_volume(fine, triangles), 6.0)
    assert np.array_equal(fine[:8], v)  # the corners stay, new vertices lie on the old edges
    assert _longest_edge(fine, triangles) < 0.5 * _longest_edge(v, f)


def _longest_edge(vertices, faces):
    return np.linalg.norm(vertices[faces] - vertices[np.roll(faces, 1, axis=1)], axis=2).max()


def test_the_blob_split_is_disjoint_and_covers_every_blob():
    train, heldout = blob_indices("train"), blob_indices("heldout")
    assert len(all_blobs()) == 1000 and sorted(train + heldout) == all_blobs()
    assert not set(train) & set(heldout) and heldout == list(range(0, 1000, 10))
    with pytest.raises(ValueError, match="split"):
        blob_indices("test")


def test_the_named_objects_load_and_are_closed_after_repair():
    for name in HELDOUT_OBJECTS:
        vertices, faces = read_obj(data_path() / NAMED_FILES[name])
        assert len(faces) >= 12, name
    raw = read_obj(data_path() / NAMED_FILES["jenga"])
    assert not is_closed(raw[1])  # six quads with their own corners
    for name in ("jenga", "prism"):
        surface, triangles, _ = prepared(*read_obj(data_path() / NAMED_FILES[name]))
        assert surface_problem(surface, triangles) is None and len(surface) >= MIN_VERTICES
        assert np.isclose(np.ptp(surface, axis=0).max(), EXTENT)


def test_preprocessing_writes_what_fused_blob_reads_and_resumes(tmp_path, monkeypatch):
    manifest = preprocess(tmp_path, FAST_BLOBS, names=["domino"], workers=1)
    for index in FAST_BLOBS:
        record = manifest["blobs"][str(index)]
        assert record["ok"], record
        vertices, faces = fused_blob(index, tmp_path)
        assert (len(vertices), len(faces)) == (record["vertices"], record["faces"])
        assert surface_problem(vertices, faces) is None and np.isclose(np.ptp(vertices, axis=0).max(), EXTENT)
        assert np.allclose(vertices.max(0), -vertices.min(0))  # centred on the bounding box
    assert surface_problem(*named_object("domino", tmp_path)) is None
    assert blob_indices("train", tmp_path) == FAST_BLOBS

    written = (tmp_path / "blobs" / "74.npz").stat().st_mtime_ns
    assert preprocess(tmp_path, FAST_BLOBS, names=["domino"], workers=1) == manifest  # nothing redone
    assert (tmp_path / "blobs" / "74.npz").stat().st_mtime_ns == written
    with pytest.raises(KeyError, match="not in"):
        fused_blob(75, tmp_path)

    stored = json.loads((tmp_path / "manifest.json").read_text())
    stored["blobs"]["88"].update(ok=False, reason="2 separate pieces")
    (tmp_path / "manifest.json").write_text(json.dumps(stored))
    with pytest.raises(FusionError, match="2 separate pieces"):
        fused_blob(88, tmp_path)
    assert blob_indices("train", tmp_path) == [74]
    assert preprocess(tmp_path, FAST_BLOBS, names=[], workers=1)["blobs"]["88"]["ok"] is False
    assert preprocess(tmp_path, FAST_BLOBS, names=[], workers=1, retry_failed=True)["blobs"]["88"]["ok"]

    monkeypatch.setattr(library, "EXTENT", 1.0)
    with pytest.raises(ValueError, match="other settings"):
        preprocess(tmp_path, FAST_BLOBS, names=[], workers=1)


def test_a_job_that_dies_is_recorded_and_the_others_go_on(tmp_path):
    manifest = preprocess(tmp_path, [FAST_BLOBS[0], 5000], names=[], workers=2)  # blob 5000 has no file
    assert manifest["blobs"][str(FAST_BLOBS[0])]["ok"]
    assert manifest["blobs"]["5000"] == {**manifest["blobs"]["5000"], "ok": False,
                                         "reason": "the fusing process died (exit code 1)"}
