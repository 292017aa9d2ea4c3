"""reference_simulate: any mesh through the category's engine; bare meshes read as articulated objects."""

import numpy as np
import pytest

from neurok_blender.core import Conditions
from neurok_blender.core.mesh import box_mesh, loose_parts
from training.reference import reference_simulate
from training.reference.articulate import articulate
from training.shapes.articulated import laptop
from neurok_blender.core.mesh import winding_number
from training.shapes.geometry import surface_distance
from training.shapes.solids import superquadric


def test_geometry_queries_on_a_box():
    v, f = box_mesh()
    points = np.array([[0.5, 0.5, 0.5], [2.0, 0.5, 0.5], [0.5, 0.5, 1.2], [1.5, 1.5, 1.5]])
    np.testing.assert_allclose(surface_distance(points, v, f), [0.5, 1.0, 0.2, np.sqrt(0.75)], atol=1e-12)
    np.testing.assert_allclose(winding_number(points, v, f), [1.0, 0.0, 0.0, 0.0], atol=1e-9)
    twin = np.concatenate([f, f + 8])
    assert loose_parts(twin, 16).tolist() == [0] * 8 + [1] * 8


def test_a_bare_laptop_is_hinged_along_its_back_edge_with_its_real_range():
    truth = laptop(np.random.default_rng(1))
    vertices, faces, _ = truth.mesh()
    obj, rows = articulate(vertices, faces)
    (joint,) = obj.joints
    assert abs(abs(joint.axis @ truth.joints[0].axis) - 1) < 1e-6
    assert np.linalg.norm(np.cross(joint.anchor - truth.joints[0].anchor, joint.axis)) < 1e-3
    span = joint.limits[1] - joint.limits[0]
    assert abs(span - (truth.joints[0].limits[1] - truth.joints[0].limits[0])) < np.radians(10)
    np.testing.assert_allclose(obj.mesh()[0][rows], vertices)


@pytest.mark.parametrize(
    "parts, message",
    [
        ([box_mesh()], "one connected piece"),
        ([box_mesh(), box_mesh(corner=(3.0, 0.0, 0.0))], "touches nothing"),
        ([box_mesh(), box_mesh(corner=(1.0, 0.0, 0.0))], "patch or a point"),
    ],
)
def test_ambiguous_meshes_are_refused_with_the_reason(parts, message):
    vertices = np.concatenate([v for v, _ in parts])
    offsets = np.cumsum([0] + [len(v) for v, _ in parts])
    faces = np.concatenate([f + o for (_, f), o in zip(parts, offsets)])
    with pytest.raises(ValueError, match=message):
        articulate(vertices, faces)


def test_reference_simulate_keeps_the_input_vertex_order():
    truth = laptop(np.random.default_rng(2)).moved(np.eye(3), [0.0, 0.0, 0.3])
    vertices, faces, _ = truth.mesh()
    shuffle = np.random.default_rng(0).permutation(len(vertices))
    inverse = np.argsort(shuffle)
    positions = reference_simulate(vertices[shuffle], inverse[faces], "articulated",
                                   conditions=Conditions(frames=12, ground_height=0.0))
    assert positions.shape == (12, len(vertices), 3) and positions.dtype == np.float32
    np.testing.assert_allclose(positions[0], vertices[shuffle], atol=1e-6)
    assert positions[-1, :, 2].min() < 0.3 - 0.05  # it fell


def test_reference_simulate_elastic_cloth_and_refusals():
    v, f = superquadric(np.random.default_rng(3), rings=8, segments=10)
    v = v - v.mean(0) + [0.0, 0.0, 0.5]
    for category in ("elastic", "cloth", "continuum"):  # a closed surface as cloth is a limp bag
        positions = reference_simulate(v, f, category, conditions=Conditions(frames=6, ground_height=0.0))
        assert positions.shape == (6, len(v), 3) and np.isfinite(positions).all()
        assert positions[-1, :, 2].mean() < positions[0, :, 2].mean() - 0.1  # fell
    with pytest.raises(ValueError, match="unknown category"):
        reference_simulate(v, f, "foam")


def test_command_line_simulates_an_obj(tmp_path):
    from training.reference.__main__ import main

    truth = laptop(np.random.default_rng(4)).moved(np.eye(3), [0.0, 0.0, 0.2])
    vertices, faces, _ = truth.mesh()
    obj = tmp_path / "laptop.obj"
    obj.write_text("".join(f"v {x} {y} {z}\n" for x, y, z in vertices)
                   + "".join(f"f {a + 1} {b + 1} {c + 1}\n" for a, b, c in faces))
    main([str(obj), "--category", "articulated", "--frames", "8", "--ground", "0", "--out", str(tmp_path / "p.npy")])
    positions = np.load(tmp_path / "p.npy")
    assert positions.shape == (8, len(vertices), 3)
    np.testing.assert_allclose(positions[0], vertices, atol=1e-6)


def test_a_push_by_vertex_index_pushes_those_vertices_whatever_the_order():
    from neurok_blender.core import Force

    truth = laptop(np.random.default_rng(5)).moved(np.eye(3), [0.0, 0.0, 1.0])
    vertices, faces, parts = truth.mesh()
    shuffle = np.random.default_rng(1).permutation(len(vertices))
    inverse = np.argsort(shuffle)
    lid = [int(inverse[i]) for i in np.nonzero(parts == 1)[0]]  # the lid's vertices, in shuffled numbering
    push = Force((0.0, 0.0, 40.0), vertices=lid, start_frame=0, end_frame=3)
    cond = Conditions(frames=6, gravity=(0.0, 0.0, 0.0), forces=[push])
    positions = reference_simulate(vertices[shuffle], inverse[faces], "articulated", conditions=cond)
    rise = positions[-1, :, 2] - positions[0, :, 2]
    assert rise[lid].mean() > rise[np.setdiff1d(np.arange(len(vertices)), lid)].mean()


def test_elastic_reference_repeats_exactly_and_refuses_bad_meshes():
    v, f = superquadric(np.random.default_rng(6), rings=8, segments=10)
    v = v - v.mean(0) + [0.0, 0.0, 0.4]
    runs = [reference_simulate(v, f, "elastic", conditions=Conditions(frames=4, ground_height=0.0)) for _ in range(2)]
    assert np.array_equal(runs[0], runs[1])
    with pytest.raises(ValueError, match="non-finite"):
        reference_simulate(np.where(np.arange(len(v))[:, None] == 3, np.nan, v), f, "elastic")
    with pytest.raises(ValueError, match="no triangle"):
        reference_simulate(np.vstack([v, [[9.0, 9.0, 9.0]]]), f, "articulated")


def test_mujoco_warnings_are_logged_and_counted_not_written_to_the_working_folder(tmp_path, monkeypatch, caplog):
    import mujoco

    import training.reference.stability  # noqa: F401 (installs the handler)

    monkeypatch.chdir(tmp_path)
    model = mujoco.MjModel.from_xml_string('<mujoco><worldbody><body><freejoint/><geom size="0.1"/></body>'
                                           '</worldbody></mujoco>')
    data = mujoco.MjData(model)
    data.qvel[:] = np.nan
    with caplog.at_level("WARNING", logger="mujoco"):
        mujoco.mj_step(model, data)
    assert data.warning[mujoco.mjtWarning.mjWARN_BADQVEL].number == 1
    assert "QVEL" in caplog.text
    assert not any(tmp_path.iterdir())  # no MUJOCO_LOG.TXT
