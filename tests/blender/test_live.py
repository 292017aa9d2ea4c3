"""Live mode through real bpy: the session behind the viewport's Live button, and the modal operator
that turns mouse and keys into its calls, fed events directly (a background Blender has no window
to send them: what stays unchecked is Blender's own dispatch of them)."""

import bpy
import numpy as np
import pytest

from neurok_blender import live
from neurok_blender.core import Conditions, simulate
from conftest import add_box, evaluated_vertices, scene_snapshot


def shown(obj) -> np.ndarray:
    return evaluated_vertices(obj, bpy.context.scene.frame_current)


def test_live_frames_are_the_simulated_ones_and_cancel_puts_the_mesh_back():
    obj = add_box(location=(0.0, 0.0, 2.0))
    before = scene_snapshot()
    start = shown(obj)
    session = live.LiveSession(obj)
    for _ in range(6):
        session.step()
    expected = simulate(start, session.job.triangles, Conditions(frames=7, ground_height=0.0)).positions
    np.testing.assert_allclose(shown(obj), expected[6], atol=1e-5)  # the fall, as Simulate makes it
    assert shown(obj)[:, 2].min() < start[:, 2].min() - 0.1
    session.cancel()
    assert scene_snapshot() == before


def test_a_grab_pulls_the_body_towards_the_mouse_and_bake_keeps_what_was_shown():
    obj = add_box(location=(0.0, 0.0, 2.0))
    session = live.LiveSession(obj)
    assert not session.grab_at((3.0, 0.0, 10.0), (0.0, 0.0, -1.0))  # beside the box: nothing to grab
    assert session.grab_at((0.2, 0.1, 10.0), (0.0, 0.0, -1.0))  # its top face, from above
    np.testing.assert_allclose(session.target, [0.2, 0.1, 2.5], atol=1e-5)
    session.drag_to((0.2, 0.1, 11.0), (0.0, 0.0, -1.0))  # the mouse one metre up: the top held there
    frames = []
    for _ in range(12):
        session.step()
        frames.append(shown(obj))
    assert frames[-1][:, 2].max() > 2.9  # lifted towards the target, where a free box falls 1.2 m
    session.release()
    session.step()
    frames.append(shown(obj))
    summary = session.bake()
    assert "baked the 14 live frames (1-14)" in summary
    for frame, positions in enumerate(frames, start=2):
        np.testing.assert_allclose(evaluated_vertices(obj, frame), positions, atol=1e-5)


def test_restart_goes_back_to_the_first_frame():
    obj = add_box(location=(0.0, 0.0, 2.0))
    start = shown(obj)
    session = live.LiveSession(obj)
    for _ in range(3):
        session.step()
    session.restart()
    assert session.frames == 1
    np.testing.assert_allclose(shown(obj), start, atol=1e-6)


def test_a_mesh_with_shape_keys_shows_the_live_shape_and_gets_its_keys_back():
    obj = add_box(location=(0.0, 0.0, 2.0))
    obj.shape_key_add(name="Basis")
    bump = obj.shape_key_add(name="Bump")
    bump.data[0].co.z += 0.5
    bump.value = 1.0
    before, start = scene_snapshot(), shown(obj)
    session = live.LiveSession(obj)
    for _ in range(4):
        session.step()
    np.testing.assert_allclose(shown(obj), session.current, atol=1e-5)  # the live shape, the bump not added on top
    session.cancel()
    assert scene_snapshot() == before
    assert not obj.show_only_shape_key
    np.testing.assert_allclose(shown(obj), start, atol=1e-6)


def test_live_refuses_what_simulate_refuses():
    bpy.ops.object.empty_add()
    with pytest.raises(ValueError):
        live.LiveSession(bpy.context.active_object)


def test_the_worker_makes_the_frames_the_session_makes_and_hands_over_its_errors():
    """The Live button's frames come from a worker thread, asked for one at a time: they are the
    frames ``step`` makes, and an error in one reaches the main thread."""
    obj = add_box(location=(0.0, 0.0, 2.0))
    inline = live.LiveSession(obj)
    for _ in range(4):
        inline.step()
    expected = inline.current
    inline.cancel()
    session = live.LiveSession(obj)
    worker = live.LiveWorker(session)
    for _ in range(4):
        worker.request(session.settings())
        worker.request(session.settings())  # asked again while it is busy: still one frame
        session.show(worker.take(wait=30.0))
    np.testing.assert_allclose(session.current, expected, atol=1e-12)
    assert worker.take() is None and not worker.busy
    assert session.grab_at((0.2, 0.1, 10.0), (0.0, 0.0, -1.0))
    worker.request(((1.0, 1.0), session.grab, np.array([np.nan, 0.0, 0.0])))  # a pull towards nowhere
    with pytest.raises(ValueError, match="vector"):
        worker.take(wait=30.0)
    worker.stop()
    session.cancel()


def test_simulate_waits_while_a_body_runs_live():
    obj = add_box(location=(0.0, 0.0, 2.0))
    assert bpy.ops.neurok.simulate.poll()
    session = live.LiveSession(obj)
    live.started(session)
    try:
        assert not bpy.ops.neurok.simulate.poll()
    finally:
        live.started(None)
        session.cancel()
    assert bpy.ops.neurok.simulate.poll()


def test_the_mouse_grabs_only_over_the_viewport_not_over_its_sidebar():
    """Live reads the mouse over the 3D view's main region; over the sidebar (whose sliders change
    the material while it runs) or outside the view there is no ray to grab with. Regions stand in
    as plain objects: a background Blender has no window."""
    from types import SimpleNamespace

    from neurok_blender.operators.live import NEUROK_OT_live

    def region(kind, x, width):
        return SimpleNamespace(type=kind, x=x, y=0, width=width, height=600)

    operator = SimpleNamespace(_area=SimpleNamespace(regions=[region("WINDOW", 0, 1000), region("UI", 800, 200)]))
    for x in (900, 1200):  # over the sidebar, beside the view
        assert NEUROK_OT_live._ray(operator, SimpleNamespace(mouse_x=x, mouse_y=300)) is None


class ModalDriver:
    """The Live operator's ``modal`` fed with events, as Blender's event loop would, on a real session
    and worker; the window's parts it touches (timer, status bar, the mouse's ray) stand in as plain
    objects, since a background Blender has no window."""

    def __init__(self, obj, ray=None):
        from types import MethodType, SimpleNamespace

        from neurok_blender.operators.live import NEUROK_OT_live

        self.reports, self.status, self.timers = [], [], []
        session = live.LiveSession(obj)
        self.operator = SimpleNamespace(_session=session, _worker=live.LiveWorker(session), _timer="timer",
                                        report=lambda kind, text: self.reports.append((kind.pop(), text)),
                                        _ray=lambda event: ray)
        for name in ("_end", "_status"):
            setattr(self.operator, name, MethodType(getattr(NEUROK_OT_live, name), self.operator))
        self.context = SimpleNamespace(window_manager=SimpleNamespace(event_timer_remove=self.timers.append),
                                       workspace=SimpleNamespace(status_text_set=self.status.append), screen=None)
        self.modal = MethodType(NEUROK_OT_live.modal, self.operator)
        live.started(session)

    def send(self, kind, value="PRESS"):
        from types import SimpleNamespace

        return self.modal(self.context, SimpleNamespace(type=kind, value=value))

    def run_until(self, frames):
        """Timer ticks until the session has shown ``frames`` frames."""
        import time

        deadline = time.monotonic() + 120
        while self.operator._session.frames < frames and time.monotonic() < deadline:
            assert self.send("TIMER", "NOTHING") == {"PASS_THROUGH"}
            time.sleep(0.005)
        assert self.operator._session.frames >= frames


def test_the_modal_loop_shows_frames_restarts_on_r_and_esc_puts_everything_back():
    obj = add_box(location=(0.0, 0.0, 2.0))
    before, start = scene_snapshot(), shown(obj)
    driver = ModalDriver(obj)
    driver.run_until(4)
    assert shown(obj)[:, 2].min() < start[:, 2].min() - 0.01  # falling, frame by frame
    assert "NeuROK live: 'Box', frame" in driver.status[-1]
    assert driver.send("R") == {"RUNNING_MODAL"}
    assert driver.operator._session.frames == 1
    np.testing.assert_allclose(shown(obj), start, atol=1e-6)
    driver.run_until(3)
    assert driver.send("ESC") == {"CANCELLED"}
    assert scene_snapshot() == before and live.running() is None
    assert driver.timers == ["timer"] and driver.status[-1] is None
    assert driver.reports == [("INFO", "NeuROK: live run cancelled, the mesh is as it was")]


def test_the_modal_loop_grabs_drags_releases_and_enter_bakes_what_was_shown():
    obj = add_box(location=(0.0, 0.0, 2.0))
    driver = ModalDriver(obj, ray=((0.2, 0.1, 10.0), (0.0, 0.0, -1.0)))  # the mouse over the box's top
    assert driver.send("LEFTMOUSE") == {"RUNNING_MODAL"}
    driver.operator._ray = lambda event: ((0.2, 0.1, 11.0), (0.0, 0.0, -1.0))  # the mouse one metre up
    assert driver.send("MOUSEMOVE", "NOTHING") == {"RUNNING_MODAL"}
    driver.run_until(10)
    assert shown(obj)[:, 2].max() > 2.6  # held up towards the mouse, where a free box has fallen
    assert driver.send("LEFTMOUSE", "RELEASE") == {"RUNNING_MODAL"}
    assert driver.operator._session.grab is None
    assert driver.send("RET") == {"FINISHED"}
    frames = driver.operator._session.frames
    kind, text = driver.reports[-1]
    assert kind == "INFO" and f"baked the {frames} live frames" in text and live.running() is None
