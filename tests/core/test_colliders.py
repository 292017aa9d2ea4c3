"""Colliders (issue 42): bodies against triangle meshes, checked against mechanics and geometry."""

import math
import warnings

import numpy as np
import pytest

import torch

from neurok_blender.core import Collider, Conditions, Environment, LagrangianSystem, NeuROK, RigidBodyMap, rollout, simulate
from neurok_blender.core.dynamics import SUPPORT_ROLLING
from neurok_blender.core.mesh import bbox_diagonal, convex_hull, fibonacci_sphere, subdivided
from neurok_blender.core.obstacles import Obstacles, TriangleGrid, closest_on_triangles
from neurok_blender.core.scene import simulate_scene
from shapes import box
from training.shapes.solids import uv_sphere

G = 9.81


def test_closest_points_on_triangles_are_the_nearest_of_a_dense_sampling():
    rng = np.random.default_rng(3)
    a, b, c = (rng.normal(size=(200, 3)) for _ in range(3))
    p = rng.normal(size=(200, 3)) * 2
    closest, weights = closest_on_triangles(p, a, b, c)
    assert np.allclose(weights.sum(1), 1) and (weights >= -1e-12).all()
    s, t = np.meshgrid(np.linspace(0, 1, 201), np.linspace(0, 1, 201))
    inside = s + t <= 1
    s, t = s[inside], t[inside]
    samples = a[:, None] + s[None, :, None] * (b - a)[:, None] + t[None, :, None] * (c - a)[:, None]
    sampled = np.linalg.norm(samples - p[:, None], axis=-1).min(1)
    exact = np.linalg.norm(closest - p, axis=-1)
    assert (exact <= sampled + 1e-12).all()
    assert np.abs(exact - sampled).max() < 0.02  # the sampling's own spacing


def test_the_grid_finds_every_triangle_whose_box_meets_a_box():
    rng = np.random.default_rng(5)
    low = rng.uniform(-1, 1, size=(3000, 3))
    size = rng.exponential(0.02, size=(3000, 3))
    size[:20] *= 100  # a few long ones, listed for every query
    high = low + size
    grid = TriangleGrid(low, high)
    assert 0 < len(grid.everywhere) < 100
    for _ in range(50):
        centre, half = rng.uniform(-1.2, 1.2, 3), rng.exponential(0.1, 3)
        found = set(grid.near(centre - half, centre + half))
        meets = np.flatnonzero(((high >= centre - half) & (low <= centre + half)).all(1))
        assert set(meets) <= found
        assert len(found) < 3000 / 4 or half.max() > 0.3  # a small box reads few of them
    far = grid.near(np.full(3, 5.0), np.full(3, 6.0))
    assert set(far) == set(grid.everywhere)


def test_the_grid_pairs_many_small_boxes_with_every_triangle_each_meets():
    """Contact points' boxes, small ones and a few fast points' large ones (read alone), and some
    outside the grid: every (box, triangle) whose boxes meet is a pair, once, in order, and a small
    box reads few triangles."""
    rng = np.random.default_rng(7)
    low = rng.uniform(-1, 1, size=(3000, 3))
    size = rng.exponential(0.02, size=(3000, 3))
    size[:20] *= 100
    high = low + size
    grid = TriangleGrid(low, high)
    centre = rng.uniform(-1.3, 1.3, size=(400, 3))
    half = rng.exponential(0.03, size=(400, 3))
    half[:5] = 0.6  # more cells than a small box's QUERY_CELLS
    centre[5:10] = 9.0  # far outside: the everywhere-listed ones only
    boxes, triangles = grid.pairs(centre - half, centre + half)
    meets = ((high[None] >= (centre - half)[:, None]) & (low[None] <= (centre + half)[:, None])).all(-1)
    found = np.zeros_like(meets)
    found[boxes, triangles] = True
    assert (found >= meets).all()
    assert (np.diff(boxes * len(low) + triangles) > 0).all()  # each pair once, by box, then triangle
    for far in range(5, 10):
        assert set(triangles[boxes == far]) == set(grid.everywhere)
    assert np.median(found[10:].sum(1)) < 100


def test_planes_read_from_the_grid_are_those_of_every_triangle(monkeypatch):
    rng = np.random.default_rng(6)
    n = 40
    xs = np.linspace(-1, 1, n + 1)
    x, y = np.meshgrid(xs, xs)
    terrain = np.stack([x.ravel(), y.ravel(), 0.05 * np.sin(3 * x.ravel()) * np.cos(2 * y.ravel())], -1)
    i = (np.arange(n)[:, None] * (n + 1) + np.arange(n)[None]).ravel()
    faces = np.concatenate([np.stack([i, i + 1, i + n + 2], -1), np.stack([i, i + n + 2, i + n + 1], -1)])
    bv, bf = box((0.3, 0.3, 0.1), (0.2, -0.1, 0.0))
    moving = np.stack([bv + [0.0, 0.0, 0.2 - 0.01 * k] for k in range(10)])  # a lid coming down
    obstacles = Obstacles([Collider(terrain, faces, thickness=0.01), Collider(moving, bf, thickness=0.02)], 24.0)
    # two bodies' points in balls of 0.15 m, one under the lid: each reads the grid round its own
    points = np.array([[0.35, 0.05, 0.1], [-0.5, 0.4, 0.05]])[:, None] + 0.15 * fibonacci_sphere(64)[None]
    velocity = rng.normal(0.0, 1.0, size=(2, 64, 3))
    read = obstacles.planes(points, velocity, 0.1, 1 / 120, None)
    monkeypatch.setattr(Obstacles, "nearby", lambda self, x, v, h: (np.repeat(np.arange(x.size // 3), len(self.faces)),
                                                                     np.tile(np.arange(len(self.faces)), x.size // 3)))
    every = obstacles.planes(points, velocity, 0.1, 1 / 120, None)
    assert read.active.sum() > 20
    for field in ("normal", "offset", "velocity", "friction", "thickness", "owner"):
        np.testing.assert_array_equal(getattr(read, field), getattr(every, field))


def test_a_point_gone_non_finite_meets_no_triangle_and_the_others_theirs():
    """A trial step that went non-finite (the run redoes it) reads the colliders' grid before it is
    refused: its points meet nothing, without NumPy's warning of a NaN cast to a cell, and the finite
    points meet what they would alone."""
    v, f = table()
    obstacles = Obstacles([Collider(v, f, thickness=0.05)], 24.0)
    points = np.array([[[0.0, 0.0, 0.5], [np.nan, 0.0, 0.5], [0.1, 0.1, np.inf], [0.2, 0.0, 0.45]]])
    velocity = np.zeros_like(points)
    velocity[0, 3] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows, triangles = obstacles.nearby(points, velocity, 1 / 120)
    assert set(rows) == {0}
    alone_rows, alone_triangles = obstacles.nearby(points[:, :1], velocity[:, :1], 1 / 120)
    np.testing.assert_array_equal(triangles, alone_triangles)


def table(top=0.5, thickness=0.05, size=1.0):
    return box((size, size, thickness), (-size / 2, -size / 2, top - thickness))


def test_a_box_dropped_on_a_table_rests_on_its_top_at_the_collider_thickness():
    v, f = box((0.2, 0.2, 0.2), (-0.1, -0.1, 0.8))
    tv, tf = table()
    result = simulate(v, f, Conditions(frames=48, colliders=[Collider(tv, tf, thickness=0.02)]))
    bottom = result.positions[24:, :, 2].min(1)
    assert np.abs(bottom - 0.52).max() < 1e-3
    assert np.abs(result.positions[-1, :, :2] - v[:, :2]).max() < 1e-3  # landed flat: no slide


def incline(angle, length=4.0, width=1.0, thickness=0.05):
    """A plank tilted by ``angle`` about y, falling along +x, its top surface through the origin."""
    v, f = box((length, width, thickness), (-length / 2, -width / 2, -thickness))
    c, s = math.cos(angle), math.sin(angle)
    turn = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    return v @ turn.T, f, turn


@pytest.mark.parametrize("mu", [0.0, 0.2])
def test_a_box_slides_down_a_plank_at_g_sin_minus_mu_cos(mu):
    angle, thickness = math.radians(20), 0.01
    pv, pf, turn = incline(angle)
    v, f = box((0.2, 0.2, 0.2), (-0.1, -0.1, thickness + 1e-4))
    v = v @ turn.T
    result = simulate(v, f, Conditions(frames=25, fps=24, friction=mu, restitution=None,
                                       colliders=[Collider(pv, pf, friction=mu, thickness=thickness)]))
    along = (result.positions.mean(1) - result.positions[0].mean(0)) @ turn[:, 0]
    t = result.times
    fitted = 2 * np.polyfit(t[6:], along[6:], 2)[0]  # after the first contact settled
    expected = G * (math.sin(angle) - mu * math.cos(angle))
    assert abs(fitted / expected - 1) < 0.03
    normal = (result.positions.mean(1) - result.positions[0].mean(0)) @ turn[:, 2]
    assert np.abs(normal).max() < 2e-3  # it stays on the plank


def test_a_ball_rolls_down_a_tilted_plank_as_on_a_tilted_ground_and_falls_off_its_end():
    """The plank's contact is the ground's law on another plane: a ball rolling down a plank tilted by
    15 degrees accelerates as it does on the ground with gravity tilted by 15 degrees. Both roll
    slower than the no-slip 5/7 g sin: the penalty contact sinks the ball a few millimetres and its
    dashpots resist the turning of that footprint (docs/physics.md, "Colliders")."""
    angle, radius, mass, fps = math.radians(15), 0.15, 1.0, 24
    shell = fibonacci_sphere(400) * radius
    weights = np.full(len(shell), mass / len(shell))
    pv, pf, turn = incline(angle, length=2.0)
    acceleration, falls = {}, None
    for surface in ("ground", "plank"):
        start = np.array([0.0, 0.0, radius]) if surface == "ground" else turn @ np.array([0.3, 0.0, radius + 0.01])
        gravity = turn.T @ [0.0, 0.0, -G] if surface == "ground" else np.array([0.0, 0.0, -G])
        kmap = RigidBodyMap([start], [shell + start], [weights])
        env = Environment(gravity=torch.as_tensor(gravity), friction=1.0, restitution=0.3,
                          contact_points=torch.as_tensor(shell + start)[None], contact_mass=torch.as_tensor(weights)[None],
                          ground_height=torch.zeros(1, dtype=torch.float64) if surface == "ground" else None,
                          obstacles=None if surface == "ground" else
                          Obstacles([Collider(pv, pf, friction=1.0, thickness=0.01)], fps))
        q0 = torch.tensor([[*start, 0.0, 0.0, 0.0]], dtype=torch.float64)
        traj = rollout(LagrangianSystem(kmap, env), q0, torch.zeros_like(q0), 36, fps, "rk4", kmap.mass_points)
        centre = traj.pose["translation"][:, 0]
        along = (centre - centre[0]) @ (np.eye(3)[0] if surface == "ground" else turn[:, 0])
        rolling = (traj.times > 0.1) & (along < 0.7 - radius)  # settled, its centre over the plank (its end 0.7 m on)
        acceleration[surface] = 2 * np.polyfit(traj.times[rolling], along[rolling], 2)[0]
        falls = centre[-1, 2] < pv[:, 2].min() - 0.1  # past the plank's end it falls, below it
    assert abs(acceleration["plank"] / acceleration["ground"] - 1) < 0.02
    assert 0.5 < acceleration["plank"] / (5 / 7 * G * math.sin(angle)) < 1.0
    assert falls


@pytest.mark.parametrize("ground", [-2.0, None])
def test_a_round_rigid_ball_rolls_down_a_plank_without_slowing_but_for_its_rolling_resistance(ground):
    """A rigid UV sphere of 0.15 m radius on a plank tilted by 15 degrees rolls on its support point,
    turned to the plank it rests on, with a ground far below or none: it accelerates at (5/7) g (sin -
    cos a / r), a solid sphere rolling without slipping less its rolling resistance (lever a), within
    5 %. On its contact samples, which it rolled over like a polygon, it reached 0.18 of (5/7) g sin."""
    angle, radius = math.radians(15), 0.15
    pv, pf, turn = incline(angle, length=3.0)
    plank = Collider(pv, pf, friction=1.0)
    ball, faces = uv_sphere(22, 45)
    v = radius * ball + turn @ np.array([0.5, 0.0, radius + plank.thickness + 0.002])
    result = simulate(v, faces, Conditions(frames=30, ground_height=ground, category="rigid", friction=1.0,
                                           colliders=[plank]))
    along = (result.positions.mean(1) - v.mean(0)) @ turn[:, 0]
    rolling = result.times > 0.15  # settled on the plank
    acceleration = 2 * np.polyfit(result.times[rolling], along[rolling], 2)[0]
    lever = SUPPORT_ROLLING * bbox_diagonal(v[convex_hull(v).indices])
    expected = 5 / 7 * G * (math.sin(angle) - math.cos(angle) * lever / radius)
    assert abs(acceleration / expected - 1) < 0.05
    assert np.abs(result.energy["balance"]).max() < 0.01 * result.energy["kinetic"].max()


def test_a_fast_body_never_passes_through_a_thin_plank():
    """At 10 m/s into a 1 cm plank the contact spring needs up to v / sqrt(k) = 3 cm to stop it: more
    than the plank is thick, so its points pass the underside, where the nearest face would push them
    on through. They are held on the side they came from and the body bounces back."""
    v, f = box((0.2, 0.2, 0.2), (-0.1, -0.1, 0.3))
    pv, pf = table(top=0.0, thickness=0.01, size=2.0)
    result = simulate(v, f, Conditions(frames=60, fps=500, velocity=(0.0, 0.0, -10.0), gravity=(0.0, 0.0, 0.0),
                                       colliders=[Collider(pv, pf, thickness=0.001)]))
    deepest = -result.positions[:, :, 2].min()
    assert 0.01 < deepest < 10.0 / math.sqrt(1e5)  # past the underside, within the spring's stopping depth
    assert (np.diff(result.pose["translation"][-5:, 2]) > 0).all()  # on its way back up


def test_a_platform_moving_up_lifts_the_box_on_it():
    """An animated collider: its frames move it 0.5 m up over a second; the box rides on it, on its
    thickness (sunk by its weight, g / k = 0.1 mm), not where the platform is half a step later; where
    the platform stops, the box flies on at the speed it rode with, u t - g t^2 / 2 a frame later."""
    tv, tf = table(top=0.0, size=2.0)
    frames, fps = 25, 24
    lift = np.linspace(0.0, 0.5, frames)
    positions = np.stack([tv + [0.0, 0.0, z] for z in lift])
    v, f = box((0.2, 0.2, 0.2), (-0.1, -0.1, 0.02))
    result = simulate(v, f, Conditions(frames=frames + 12, fps=fps,
                                       colliders=[Collider(positions, tf, thickness=0.02)]))
    bottom = result.positions[:, :, 2].min(1)
    riding = bottom[6:frames] - (lift[6:] + 0.02)
    assert np.abs(riding).max() < 1e-3
    speed, t = 0.5 / ((frames - 1) / fps), 1 / fps
    assert abs(bottom[frames] - (0.5 + 0.02) - (speed * t - 0.5 * G * t**2)) < 1e-3
    assert abs(bottom[-1] - (0.5 + 0.02)) < 5e-3  # it stays on the platform once it stops


def test_a_sheet_lifted_with_ease_in_and_out_carries_the_box_on_it():
    """A keyframed lift as Blender eases it: an open sheet raised 1 m over a second, its speed up to
    1.5 m/s; the box rides on its thickness within 4 mm throughout (heavier while it speeds up,
    lighter as it slows down), at one step a frame where it rests on it, and never passes through."""
    sheet = np.array([[-2.0, -2.0, 0.0], [2.0, -2.0, 0.0], [2.0, 2.0, 0.0], [-2.0, 2.0, 0.0]])
    s = np.linspace(0.0, 1.0, 25)
    lift = 3 * s**2 - 2 * s**3
    frames = np.stack([sheet + [0.0, 0.0, z] for z in lift])
    v, f = box((0.4, 0.4, 0.4), (-0.2, -0.2, 0.02))
    result = simulate(v, f, Conditions(frames=30, fps=24, ground_height=None, category="rigid",
                                       colliders=[Collider(frames, np.array([[0, 1, 2], [0, 2, 3]]), thickness=0.02)]))
    height = result.positions[:, :, 2].min(1) - np.concatenate([lift, np.ones(5)]) - 0.02
    assert np.abs(height).max() < 4e-3


def test_bad_colliders_are_refused_with_their_name():
    v, f = box()
    tv, tf = table()
    with pytest.raises(ValueError, match="'shelf'.*faces must index"):
        simulate(v, f, Conditions(colliders=[Collider(tv, tf + 100, name="shelf")]))
    with pytest.raises(ValueError, match="'shelf' thickness"):
        simulate(v, f, Conditions(colliders=[Collider(tv, tf, thickness=0.0, name="shelf")]))
    with pytest.raises(ValueError, match="finite"):
        simulate(v, f, Conditions(colliders=[Collider(tv * np.nan, tf, name="shelf")]))


@pytest.mark.parametrize("splits", [1, 2])
def test_a_rigid_box_rests_over_a_collider_s_edge_on_points_placed_over_it(splits):
    """A 0.3 m box subdivided to 26 / 98 vertices (no edge points of its own over its faces' middles),
    dropped 5 cm onto a collider box a third past its edge, its centre of mass 5 cm inside it: its
    points placed over the collider's edge carry it, and it comes to rest and sleeps on it (it tipped
    off on its own points inside the edge). Two thirds past, its centre of mass 5 cm outside, it
    still tips off: the edge holds a body only as far as it should."""
    table = Collider(*box((0.3, 0.3, 0.3)), thickness=0.005)
    rigid = dict(frames=48, ground_height=0.0, category="rigid")
    ends = {}
    for past in (0.1, 0.2):
        v, f = box((0.3, 0.3, 0.3), (0.0, past, 0.355))
        for _ in range(splits):
            v, f = subdivided(v, f)
        result = simulate(v, f, Conditions(colliders=[table], **rigid))
        ends[past] = result
    assert ends[0.1].positions[-1, :, 2].min() > 0.3
    assert np.ptp(ends[0.1].positions[-12:], axis=0).max() < 1e-6  # at rest
    assert ends[0.2].positions[-1, :, 2].min() < 0.1


@pytest.mark.parametrize("splits", [0, 2])
def test_a_jelly_rests_over_a_collider_s_edge_on_points_placed_over_it(splits):
    """The same with a jelly (the shipped model), Blender's 8-vertex cube and 98 vertices: its contact
    samples lie 15 cm apart on a side, none near the edge, and it tipped off. Points placed over the
    collider's edge, which move with its rigid part, carry it, and it rests flat on the edge; two
    thirds past, it still falls."""
    table = Collider(*box((0.3, 0.3, 0.3)), thickness=0.005)
    jelly = dict(frames=48, ground_height=0.0, category="elastic")
    model = NeuROK.load()
    ends = {}
    for past in (0.1, 0.2):
        v, f = box((0.3, 0.3, 0.3), (0.0, past, 0.355))
        for _ in range(splits):
            v, f = subdivided(v, f)
        ends[past] = simulate(v, f, Conditions(colliders=[table], **jelly), model=model)
    tilt = np.degrees(np.arccos(np.clip(ends[0.1].pose["rotation"][:, 2, 2], -1.0, 1.0)))
    assert ends[0.1].positions[-1, :, 2].min() > 0.3 and tilt.max() < 2.0
    assert ends[0.2].positions[-1, :, 2].min() < 0.1


def test_a_box_over_a_finely_cut_collider_rests_on_its_edges():
    """A 0.5 m box over the whole top of a 0.3 m collider box cut into 64 segments round that top: more
    crease vertices come near than the box has points to place, so every so many of them take one
    (doubling their spacing alone never brought them under it), and the box rests on the edges."""
    v, f = box((0.3, 0.3, 0.3))
    for _ in range(4):
        v, f = subdivided(v, f)
    result = simulate(*box((0.5, 0.5, 0.5), (-0.1, -0.1, 0.305)),
                      Conditions(frames=12, ground_height=0.0, category="rigid", colliders=[Collider(v, f, thickness=0.005)]))
    assert abs(result.positions[-1, :, 2].min() - 0.305) < 3e-3


def test_crease_points_lie_along_a_collider_s_sharp_edges_alone():
    """A box collider's twelve edges are its creases (not its faces' diagonals); the points along
    those within a query box lie on them at most the spacing apart, their ends included, each with
    its collider's thickness."""
    obstacles = Obstacles([Collider(*box((1.0, 1.0, 0.5)), thickness=0.02)], 24.0)
    everywhere, _ = obstacles.crease_points(0.0, np.full(3, -1.0), np.full(3, 2.0), 1.0)
    assert len(np.unique(everywhere, axis=0)) == 8  # the box's corners: its edges' ends, no diagonal's middle
    points, thickness = obstacles.crease_points(0.0, np.array([0.8, 0.2, 0.4]), np.array([1.2, 0.5, 0.6]), 0.05)
    np.testing.assert_allclose(points[:, [0, 2]], np.tile([1.0, 0.5], (len(points), 1)))  # on the top's x = 1 edge
    along = np.sort(points[:, 1])
    assert along[0] <= 0.25 and along[-1] == pytest.approx(0.5) and np.diff(along).max() <= 0.05 + 1e-12
    np.testing.assert_allclose(thickness, 0.02)


def test_a_point_over_the_ridge_of_a_symmetric_roof_meets_a_level_plane():
    """Two faces sloping 10 degrees either way from a ridge tie for a point right above it: its plane's
    normal is their mean, straight up, not one face's by index order (a sideways push from nothing,
    which slid two stacked symmetric jellies apart); over one face it is that face's."""
    rise = math.tan(math.radians(10.0))
    vertices = np.array([[-1.0, -1.0, 0.0], [-1.0, 1.0, 0.0], [0.0, -1.0, rise], [0.0, 1.0, rise],
                         [1.0, -1.0, 0.0], [1.0, 1.0, 0.0]])
    faces = np.array([[0, 2, 1], [1, 2, 3], [2, 4, 3], [3, 4, 5]])
    points = np.array([[[0.0, 0.0, rise + 5e-4], [0.5, 0.0, 0.5 * rise + 5e-4]]])
    planes = Obstacles([Collider(vertices, faces, thickness=0.0)], 24.0).planes(points, np.zeros_like(points), 0.0,
                                                                                 1 / 24, None)
    assert planes.active.all()
    np.testing.assert_allclose(planes.normal[0, 0], [0.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(planes.normal[0, 1], [math.sin(math.radians(10.0)), 0.0, math.cos(math.radians(10.0))],
                               atol=1e-12)


def test_low_poly_rigid_bodies_meet_edge_on_edge_and_rest_over_a_collider_s_edge():
    """Two 8-vertex planks laid crosswise touch edge on edge, where no corner of either lies on the
    other: the upper one rests on the lower (it fell through it on corners alone). An 8-vertex box a
    third past a collider box's edge, its centre of mass 5 cm inside it, rests on it (on its corners
    alone it rested on the row inside the edge only and tipped off)."""
    rigid = dict(frames=24, ground_height=0.0, category="rigid")
    crossed = simulate_scene([(*box((1.0, 0.1, 0.1), (-0.5, -0.05, 0.0)), Conditions(**rigid)),
                              (*box((0.1, 1.0, 0.1), (-0.05, -0.5, 0.12)), Conditions(**rigid))])
    assert crossed[1].positions[-1, :, 2].min() > 0.1
    table = Collider(*box((0.3, 0.3, 0.3)), thickness=0.005)
    over = simulate(*box((0.3, 0.3, 0.3), (0.0, 0.1, 0.355)), Conditions(colliders=[table], **dict(rigid, frames=36)))
    assert over.positions[-1, :, 2].min() > 0.3
