"""Several bodies in one solve (issue 42): contact between them is the ground's law, and what one body
gives the other it loses (momentum, energy books)."""

import numpy as np
import pytest

from neurok_blender.core import Collider, Conditions, Force, NeuROK, dynamics, simulate
from neurok_blender.core.mesh import subdivided
from neurok_blender.core.scene import simulate_scene
from shapes import box

GAP = 0.005  # obstacles.BodySurfaces.thickness


def test_two_boxes_thrown_at_each_other_bounce_apart_keeping_momentum_and_the_restitution():
    """Head on, centre to centre: the normal speed they part with is e = 0.3 of the speed they met
    with, whatever their masses, and the total momentum does not change."""
    big, small = box((0.4, 0.4, 0.4), (-0.7, -0.2, 0.0)), box((0.2, 0.2, 0.2), (0.3, -0.1, 0.1))
    still = dict(frames=12, gravity=(0.0, 0.0, 0.0), category="rigid", restitution=0.3)
    for mass in (2.0, 10.0):
        result = simulate_scene([(*big, Conditions(velocity=(2.0, 0, 0), mass=mass, **still)),
                                 (*small, Conditions(velocity=(-2.0, 0, 0), mass=1.0, **still))])
        v = [np.gradient(r.pose["translation"][:, 0], r.times) for r in result]
        momentum = mass * v[0] + v[1]
        assert np.abs(momentum - (2.0 * mass - 2.0)).max() < 1e-9
        assert abs((v[1][-1] - v[0][-1]) / 4.0 - 0.3) < 0.03  # the dashpot keeps 0.28 at these steps, as against a wall
        gap = result[1].positions[:, :, 0].min(1) - result[0].positions[:, :, 0].max(1)
        assert gap[-1] > gap[-2] > 0.0  # parting
        total = sum(r.energy["kinetic"][0] for r in result)
        for r in result:  # each body's books close: what the other did to it is booked as work
            assert np.abs(r.energy["balance"]).max() < 0.02 * total


@pytest.mark.parametrize("fps", [24.0, 10.0])
def test_the_implicit_step_solves_bodies_that_meet_as_one_system_keeping_momentum_and_the_restitution(fps):
    """With the implicit step two bodies' contact is one system over both (a pair pushes each body on
    one line) and the impact law holds between them: head on, the mass ratio 2, they part at e = 0.3
    of their closing speed (without the law, within the step's two or three steps of contact, 0.75)
    and the total momentum does not change. At 10 fps too, where the boxes' springs, stiffened for
    their points along the edges, once counted as unresolved by the steps and parted them at 0.2."""
    big, small = box((0.4, 0.4, 0.4), (-0.7, -0.2, 0.0)), box((0.2, 0.2, 0.2), (0.3, -0.1, 0.1))
    still = dict(frames=int(fps / 2), fps=fps, gravity=(0.0, 0.0, 0.0), category="rigid", restitution=0.3,
                 integrator="implicit")
    result = simulate_scene([(*big, Conditions(velocity=(2.0, 0, 0), mass=2.0, **still)),
                             (*small, Conditions(velocity=(-2.0, 0, 0), mass=1.0, **still))])
    assert [r.integrator for r in result] == ["implicit", "implicit"]
    v = [np.gradient(r.pose["translation"][:, 0], r.times) for r in result]
    assert np.abs(2.0 * v[0] + v[1] - 2.0).max() < 1e-9
    assert abs((v[1][-1] - v[0][-1]) / 4.0 - 0.3) < 1e-6


@pytest.mark.parametrize("splits", [0, 1])
def test_two_jellies_thrown_at_each_other_part_at_the_restitution(splits):
    """Learned bodies head on, without gravity: as they part, their surfaces still wobble and touch
    again, which brings no new impact (nothing comes in), so they part at e = 0.3 of their closing
    speed (the touch's springs add a few per cent), where each touch, taken as an impact with
    nothing coming in, capped them to a standstill. A face that springs back onto the other after
    they have parted carries on their impact and is capped with it: 26-vertex jellies, whose faces
    touched again so, parted at 0.66."""
    still = dict(frames=12, gravity=(0.0, 0.0, 0.0), category="elastic", restitution=0.3)
    def cube(x):
        v, f = box((0.3, 0.3, 0.3), (x, -0.15, 0.0))
        return subdivided(v, f) if splits else (v, f)

    result = simulate_scene([(*cube(-0.6), Conditions(velocity=(2.0, 0, 0), **still)),
                             (*cube(0.3), Conditions(velocity=(-2.0, 0, 0), **still))], model=NeuROK.load())
    assert all(r.report.reduced_coordinates > 0 for r in result)
    v = [np.gradient(r.pose["translation"][:, 0], r.times) for r in result]
    assert np.abs(v[0] + v[1]).max() < 1e-9  # equal masses: the momentum stays zero
    assert 0.3 <= (v[1][-1] - v[0][-1]) / 4.0 < 0.34
    gap = result[1].positions[:, :, 0].min(1) - result[0].positions[:, :, 0].max(1)
    assert gap[-1] > gap[-2] + 0.02  # parting, 1.2 m/s


def test_a_soft_jelly_thrown_down_on_a_crate_bounces_with_its_restitution_as_off_the_ground():
    """A soft jelly (Stiffness 0.3) thrown down at 3 m/s onto a heavy crate at restitution 0.6 rises
    about e^2 v^2 / 2 g = 0.165 m above where it started, as off the ground (measured 0.158 and 0.160):
    its squashed face springs off the crate midway while it still sinks, which is still the impact
    (dynamics.RETOUCH), where the touch down again, taken as a new impact coming in at 1 m/s, capped it
    to a rise of 14 mm."""
    throw = dict(frames=24, fps=96, ground_height=0.0, restitution=0.6)
    jelly = Conditions(category="elastic", stiffness=0.3, velocity=(0.0, 0.0, -3.0), **throw)
    crate = Conditions(category="rigid", mass=1000.0, **throw)
    result = simulate_scene([(*box((0.3, 0.3, 0.3), (-0.15, -0.15, 0.32)), jelly),
                             (*box((1.0, 1.0, 0.3), (-0.5, -0.5, 0.0)), crate)], model=NeuROK.load())
    height = result[0].pose["translation"][:, 2]
    assert 0.13 < height.max() - height[0] < 0.17


def test_a_stack_of_five_boxes_settles_on_the_ground_without_passing_through_each_other():
    bodies = [(*box((0.3, 0.3, 0.3), (-0.15, -0.15, 0.05 + 0.4 * i)), Conditions(frames=36, ground_height=0.0, category="rigid"))
              for i in range(5)]  # settled by frame 36: the bottom 0.98 mm into the ground under the five
    result = simulate_scene(bodies)
    bottoms = np.array([r.positions[-1, :, 2].min() for r in result])
    tops = np.array([r.positions[-1, :, 2].max() for r in result])
    assert abs(bottoms[0]) < 1e-3
    assert np.all(np.abs(bottoms[1:] - (tops[:-1] + GAP)) < 1e-2)  # each on the one below, <= 1 cm into its gap
    assert np.abs(np.array([r.positions[-1, :, :2] - r.positions[0, :, :2] for r in result])).max() < 1e-3


def test_a_box_landing_flat_over_another_s_edge_stays_on_it_and_past_the_edge_falls():
    """A rigid box dropped flat from 5 cm a third past another box's edge, its centre of mass 5 cm inside
    the support, lands without tipping (the impact's springs pushed at their centroid and spun it off
    the edge, 90 degrees at restitution 0.3); two thirds past, its centre of mass over nothing, it
    still falls off. Boxes of 98 vertices, so that vertices lie along the edge it rests on."""
    def cube(corner):
        v, f = box((0.3, 0.3, 0.3), corner)
        return subdivided(*subdivided(v, f))

    drop = dict(frames=36, ground_height=0.0, category="rigid", restitution=0.3)
    for past, stays in ((0.1, True), (0.2, False)):
        result = simulate_scene([(*cube((0.0, 0.0, 0.0)), Conditions(**drop)),
                                 (*cube((0.0, past, 0.35)), Conditions(**drop))])
        tilt = np.degrees(np.arccos(np.clip(result[1].pose["rotation"][:, 2, 2], -1.0, 1.0)))
        if stays:
            assert tilt.max() < 5.0
            assert result[1].positions[-1, :, 2].min() > 0.29
        else:
            assert result[1].positions[-1, :, 2].min() < 0.05  # on the ground


@pytest.mark.parametrize("splits, below", [(0, 0.0), (1, 0.0), (1, 0.05)])
def test_a_box_dropped_onto_another_s_corner_does_not_rock_it_and_stays(splits, below):
    """A box dropped 15 cm flat onto a box ``below`` m above the ground, a third past two of its
    edges (its centre of mass 5 cm inside each): the box below, itself flat on the ground, is held
    from turning while the one on it bounces, as a rigid support would be; so the box on it lands flat
    and stays (the lower box, hit near its corner, rocked on its ground springs, and the upper, held
    to turn with it, left the bounce spinning and tipped off, at 8 and 26 vertices alike). Dropped
    together, the lower box still bounces on the ground when the upper lands: the upper is held
    through its bounce's turning point, where it is slow for a step while the springs push hardest
    (let go there, it spun off at 1 rad/s)."""
    def cube(corner):
        v, f = box((0.3, 0.3, 0.3), corner)
        for _ in range(splits):
            v, f = subdivided(v, f)
        return v, f

    drop = dict(frames=36, ground_height=0.0, category="rigid", restitution=0.3)
    result = simulate_scene([(*cube((0.0, 0.0, below)), Conditions(**drop)),
                             (*cube((0.1, 0.1, below + 0.45)), Conditions(**drop))])
    tilt = np.degrees(np.arccos(np.clip(result[1].pose["rotation"][:, 2, 2], -1.0, 1.0)))
    assert tilt.max() < 5.0
    assert result[1].positions[-1, :, 2].min() > 0.29


def test_boxes_dropped_across_two_others_stay_on_them_and_a_box_come_to_rest_still_tips_when_pushed():
    """Two 8-vertex boxes 6 cm apart and two more dropped 15 cm across them, a third past their far
    edges (scene_cost's pile, in part), at restitution 0.3: the upper boxes land flat and stay (the
    penalty springs, pushing at their centroid within each step of the bounce, tilted them and they
    slid off). A box landed flat that comes to rest turns freely again: pushed at its top edge it
    tips over."""
    rigid = dict(frames=36, ground_height=0.0, category="rigid")
    lower = [box((0.3, 0.3, 0.3), (0.36 * i, 0.0, 0.0)) for i in range(3)]
    upper = [box((0.3, 0.3, 0.3), (0.36 * i + 0.1, 0.1, 0.45)) for i in range(2)]
    result = simulate_scene([(*mesh, Conditions(**rigid)) for mesh in lower + upper])
    for r in result[3:]:
        assert r.positions[-1, :, 2].min() > 0.29
    v, f = box((0.3, 0.3, 0.3), (0.0, 0.0, 0.05))
    top = [i for i in range(len(v)) if v[i, 2] > 0.3 and v[i, 0] < 0.01]
    push = Force((40.0, 0.0, 0.0), vertices=top, start_frame=24, end_frame=36)
    pushed = simulate_scene([(v, f, Conditions(forces=[push], **dict(rigid, frames=48))),
                             (*box((0.3, 0.3, 0.3), (5.0, 5.0, 0.0)), Conditions(**dict(rigid, frames=48)))])[0]
    tilt = np.degrees(np.arccos(np.clip(pushed.pose["rotation"][:, 2, 2], -1.0, 1.0)))
    assert tilt[23] < 1.0 and tilt[-1] > 60.0


def test_blenders_default_cube_as_a_jelly_rests_across_two_boxes_on_its_face():
    """Blender's 8-vertex cube as a jelly (the shipped model) dropped across two others 6 cm apart, a
    third past their far edges, rests on them. Touching with its 8 corners alone, none of which lies
    over the two, it fell between them (301 mm): a learned body touches with points over its faces."""
    jelly = Conditions(frames=48, ground_height=0.0, category="elastic")
    result = simulate_scene([(*box((0.3, 0.3, 0.3), (0.0, 0.0, 0.0)), jelly),
                             (*box((0.3, 0.3, 0.3), (0.36, 0.0, 0.0)), jelly),
                             (*box((0.3, 0.3, 0.3), (0.1, 0.1, 0.35)), jelly)], model=NeuROK.load())
    assert result[2].positions[-1, :, 2].min() > 0.3 - 0.015  # its squashed faces' give at most


@pytest.mark.parametrize("shift", [0.0, 0.27])
def test_a_low_poly_jelly_plank_rests_across_another(shift):
    """An 8-vertex jelly plank of 1 x 0.1 x 0.1 m dropped across another, crossing it ``shift`` m from
    the lower one's middle, rests on it: the two meet edge on edge, where no corner of either lies on
    the other, and on their corners alone the upper one passed through to the ground (100 mm)."""
    jelly = Conditions(frames=48, ground_height=0.0, category="elastic")
    result = simulate_scene([(*box((1.0, 0.1, 0.1), (-0.5 + shift, -0.05, 0.0)), jelly),
                             (*box((0.1, 1.0, 0.1), (-0.05, -0.5, 0.12)), jelly)], model=NeuROK.load())
    assert result[1].positions[-1, :, 2].min() > 0.1 - 0.015


def test_a_box_dropped_on_a_box_resting_on_the_ground_bounces_as_off_the_ground():
    """Newton's law over an impact holds however the ground is reached: a 1 kg box dropped 15 cm onto
    a 1 kg box resting on the ground rises as high above its rest as it would off the ground (e about
    0.27 at restitution 0.3, from the height of its first bounce). The box below, pushed into the
    ground by the landing, sprang back out of it with all its springs gave it, and the one on top
    left at e 0.33: now its impact on the ground counts the fastest it was pushed in."""
    drop = dict(frames=240, fps=240.0, ground_height=0.0, category="rigid")

    def bounce(z):  # e from the first bounce's height above the rest, over the drop's
        rest = z[-40:].mean()
        first_rise = int(np.argmax(np.diff(z) > 0.0))
        return np.sqrt((z[first_rise:].max() - rest) / (z[0] - rest))

    alone = simulate(*box((0.3, 0.3, 0.3), (0.0, 0.0, 0.15)), Conditions(**drop))
    stacked = simulate_scene([(*box((0.3, 0.3, 0.3)), Conditions(**drop)),
                              (*box((0.3, 0.3, 0.3), (0.0, 0.0, 0.45)), Conditions(**drop))])
    off_ground = bounce(alone.pose["translation"][:, 2])
    assert 0.2 < off_ground < 0.3
    assert abs(bounce(stacked[1].pose["translation"][:, 2]) - off_ground) < 0.04


def test_a_plate_resting_on_the_top_edges_of_a_smaller_box_takes_a_resting_bodys_steps():
    """A 0.8 m plate laid on a 0.3 m box touches it only where the box's top edges press into the
    plate's underside; none of the plate's own contact points (along its edges, out past the box) meet
    anything. It rests, so its frames take the steps of bodies at rest (one a frame) once the box has
    settled, not the contact's five: measured 27 steps in 23 frames, 115 when only a body pressing its
    own points counted as touching."""
    rigid = dict(frames=24, ground_height=0.0, category="rigid")
    result = simulate_scene([(*box((0.3, 0.3, 0.3), (-0.15, -0.15, 0.0)), Conditions(**rigid)),
                             (*box((0.8, 0.8, 0.04), (-0.4, -0.4, 0.3)), Conditions(**rigid))])
    assert abs(result[1].positions[-1, :, 2].min() - 0.3 - GAP) < 1e-3
    assert result[1].steps <= 2 * 23


def test_bodies_apart_move_as_each_alone():
    """At the same steps (a scene takes the steps its busiest body needs, so a box tipping onto its
    face alone, a chaotic motion, would rest at the steps of a frame on the ground), bodies apart
    follow what each does alone. A collider far away makes each touch alone as it does among other
    meshes (rigid bodies then touch with points along their edges too)."""
    a, b = box((0.3, 0.3, 0.3), (-2.0, 0.0, 0.5)), box((0.5, 0.2, 0.2), (2.0, 0.0, 1.0))
    far = [Collider(*box((0.1, 0.1, 0.1), (50.0, 50.0, 0.0)))]
    conditions = [Conditions(frames=24, ground_height=0.0, category="rigid", velocity=(0.5, 0, 1.0), substeps=5,
                             colliders=far),
                  Conditions(frames=24, ground_height=0.0, category="rigid", angular_velocity=(0.0, 3.0, 0.0),
                             substeps=5, colliders=far)]
    together = simulate_scene([(*a, conditions[0]), (*b, conditions[1])])
    for (v, f), c, r in zip((a, b), conditions, together):
        alone = simulate(v, f, c)
        assert np.abs(alone.positions - r.positions).max() < 2e-4


def test_pins_on_a_path_carry_their_body_in_a_scene():
    """A rod hung from two corners whose pins move 1 m sideways over a second, beside a box that
    falls: the pinned corners follow their path as they do alone."""
    rod = box((1.0, 0.1, 0.1), (0.0, 0.0, 1.0))
    pins = [i for i in range(len(rod[0])) if rod[0][i, 2] > 1.05 and rod[0][i, 1] < 0.05]
    shift = np.clip(np.arange(25) / 24, 0.0, 1.0)
    path = rod[0][pins][None] + shift[:, None, None] * np.array([1.0, 0.0, 0.0])
    result = simulate_scene([(*box((0.3, 0.3, 0.3), (0.0, 2.0, 1.0)), Conditions(frames=25, category="rigid")),
                             (*rod, Conditions(frames=25, category="rigid", pins=pins, pin_path=path))])
    assert np.abs(result[1].positions[:, pins] - path).max() < 0.01


def test_a_jelly_dropped_on_a_crate_lands_on_it_not_in_it_and_the_crate_holds_it_up():
    crate = box((0.8, 0.8, 0.5), (-0.4, -0.4, 0.0))
    jelly = box((0.3, 0.3, 0.3), (-0.15, -0.15, 0.9))
    result = simulate_scene([(*crate, Conditions(frames=36, ground_height=0.0, category="rigid", mass=20.0)),
                             (*jelly, Conditions(frames=36, ground_height=0.0, category="elastic"))],
                            model=NeuROK.load())
    assert result[1].report.category == "elastic" and result[1].report.reduced_coordinates > 0
    assert all(np.isfinite(r.positions).all() for r in result)
    lowest = result[1].positions[:, :, 2].min(1)
    assert lowest.min() > 0.5 - 0.03  # at most the soft contact's give (2.8 m/s into a jelly's softened spring)
    assert 0.5 - 0.005 < lowest[-1] < 0.6  # on the crate, not in it
    assert np.abs(result[0].positions[-1] - result[0].positions[0]).max() < 2e-3  # the crate stays put


@pytest.mark.parametrize("lower, upper", [("rigid", "elastic"), ("elastic", "rigid")])
def test_a_body_dropped_onto_another_s_corner_lands_flat_and_stays(lower, upper):
    """26-vertex cubes of 0.3 m, a crate and a jelly (the shipped model), one dropped 15 cm flat onto
    the other a third past two of its edges (its centre of mass 5 cm inside each): its landing is held
    from turning while it bounces, a learned body's by its rigid part, and on a jelly until the
    jelly's squashed face has had its slowest mode's period (0.22 s) to spring back. So it stays on
    top, tilted only as far as the jelly's give under its off-centre weight tilts it (a jelly on the
    crate, 1 degree; the crate on a jelly, 5). A jelly on a crate spun off when only rigid bodies were
    held (104 degrees at 8 vertices); the crate on a jelly, held for a period of the contact's springs
    alone, was pushed off by the face springing back after it (100)."""
    drop = dict(frames=36, ground_height=0.0)
    cube = lambda corner: subdivided(*box((0.3, 0.3, 0.3), corner))
    result = simulate_scene([(*cube((0.0, 0.0, 0.0)), Conditions(category=lower, **drop)),
                             (*cube((0.1, 0.1, 0.45)), Conditions(category=upper, **drop))], model=NeuROK.load())
    tilt = np.degrees(np.arccos(np.clip(result[1].pose["rotation"][:, 2, 2], -1.0, 1.0)))
    assert tilt.max() < (3.0 if lower == "rigid" else 12.0)
    assert result[1].positions[-1, :, 2].min() > 0.3 - 0.03


@pytest.mark.parametrize("height", [0.13, 0.15, 0.17])
def test_a_jelly_dropped_onto_a_jelly_s_corner_settles_on_it(height):
    """The same with two jellies, 0.3 m cubes of 26 vertices, the upper dropped from ``height`` (m)
    0.09 m past two of the lower's edges (its centre of mass 6 cm inside each): it bounces, wobbles
    and settles level on top (held for the lower's slowest period, as above; with a hold of the
    springs' period alone it was pushed off, 170 degrees). 5 cm inside, one a third past, the lower's
    squashed corner lets it tip off at some drop heights and not at others (docs/physics.md, "Several
    bodies")."""
    frames = dict(frames=48, ground_height=0.0)
    cube = lambda corner: subdivided(*box((0.3, 0.3, 0.3), corner))
    result = simulate_scene([(*cube((0.0, 0.0, 0.0)), Conditions(category="elastic", **frames)),
                             (*cube((0.09, 0.09, 0.3 + height)), Conditions(category="elastic", **frames))],
                            model=NeuROK.load())
    tilt = np.degrees(np.arccos(np.clip(result[1].pose["rotation"][:, 2, 2], -1.0, 1.0)))
    assert tilt[-1] < 5.0
    assert result[1].pose["translation"][-1, 2] > 0.3 + 0.15 - 0.03  # its centre on top of the lower


@pytest.mark.parametrize("field_limit", [dynamics.SURFACE_FIELD_LIMIT, 0])
def test_a_crate_dropped_on_a_jelly_rests_on_its_surface(monkeypatch, field_limit):
    """A learned body's surface, placed by its quadratic field, or skinned every step where it has
    more vertices than dynamics.SURFACE_FIELD_LIMIT (its Jacobian where it is met by forward mode),
    carries what lands on it: the crate's corners stay above the jelly's top face, within the
    contact's gap."""
    monkeypatch.setattr(dynamics, "SURFACE_FIELD_LIMIT", field_limit)
    jelly = box((0.4, 0.4, 0.3), (-0.2, -0.2, 0.0))
    crate = box((0.2, 0.2, 0.2), (-0.1, -0.1, 0.5))
    result = simulate_scene([(*jelly, Conditions(frames=30, ground_height=0.0, category="elastic")),
                             (*crate, Conditions(frames=30, ground_height=0.0, category="rigid", mass=0.5))],
                            model=NeuROK.load())
    assert all(np.isfinite(r.positions).all() for r in result)
    top = result[0].positions[:, :, 2].max(1)  # the jelly's highest vertex
    bottom = result[1].positions[:, :, 2].min(1)  # the crate's lowest corner
    assert (bottom - top).min() > -0.01  # never more than 1 cm into it, landing at 1.6 m/s
    assert abs(bottom[-1] - top[-1]) < 0.01 and bottom[-1] > 0.25  # resting on it, held up


def test_a_crate_resting_on_a_jelly_squashes_it_as_its_weight_pressed_on_the_same_face_does():
    """Newton's third law reaches the deformation: the push back on the jelly's surface acts through
    its learned coordinates where it is met, so 5 kg resting on its top face squashes it as a 5 kg
    weight's force spread over that face does (through its rigid coordinates alone, the crate's weight
    reached the jelly's deformation only through the ground: 5 mm short). Damped, so both settle."""
    jelly = box((0.4, 0.4, 0.3), (-0.2, -0.2, 0.0))
    top = np.flatnonzero(jelly[0][:, 2] > 0.3 - 1e-9)
    soft = dict(frames=48, ground_height=0.0, category="elastic", damping=10.0)
    model = NeuROK.load()
    weight = Force((0.0, 0.0, -9.81 * 5.0), vertices=list(top), start_frame=0, end_frame=48)
    pressed = simulate(*jelly, Conditions(forces=[weight], **soft), model=model)
    carrying = simulate_scene([(*jelly, Conditions(**soft)),
                               (*box((0.2, 0.2, 0.2), (-0.1, -0.1, 0.31)),
                                Conditions(frames=48, ground_height=0.0, category="rigid", mass=5.0))], model=model)
    squashed = 0.3 - pressed.positions[-1, top, 2].mean()
    assert squashed > 0.01  # the weight squashes it visibly
    assert abs(carrying[0].positions[-1, top, 2].mean() - pressed.positions[-1, top, 2].mean()) < 1e-3


def test_a_crate_dropped_straight_onto_a_jelly_lands_without_sliding_sideways():
    """Both bodies are mirror-symmetric about x and y and so is the drop: the crate must not move
    sideways. The jelly's 128 contact points chosen alone lie lopsided and pushed the landing crate
    8 mm sideways within 18 frames; with mirror-symmetric ones (simulation.contact_points) it stays."""
    jelly = box((0.3, 0.3, 0.3), (-0.15, -0.15, 0.0))
    for _ in range(3):
        jelly = subdivided(*jelly)  # 386 vertices: more than the 128 contact points
    result = simulate_scene([(*jelly, Conditions(frames=18, ground_height=0.0, category="elastic")),
                             (*box((0.25, 0.25, 0.25), (-0.125, -0.125, 0.45)),
                              Conditions(frames=18, ground_height=0.0, category="rigid", mass=4.0))], model=NeuROK.load())
    assert result[1].positions[:, :, 2].min() < 0.31  # it landed
    assert np.abs(result[1].positions.astype(np.float64).mean(1)[:, :2]).max() < 1e-3


def test_a_scene_shares_one_clock_and_the_colliders_come_with_the_first_body():
    v, f = box()
    with pytest.raises(ValueError, match="body 1's fps"):
        simulate_scene([(v, f, Conditions(category="rigid")), (v + 3, f, Conditions(category="rigid", fps=30.0))])
    table = Collider(*box((2.0, 2.0, 0.1), (-1.0, -1.0, -1.0)))
    with pytest.raises(ValueError, match="colliders of its own"):
        simulate_scene([(v, f, Conditions(category="rigid")), (v + 3, f, Conditions(category="rigid", colliders=[table]))])
    with pytest.raises(ValueError, match="at least one body"):
        simulate_scene([])
