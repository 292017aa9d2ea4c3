import bpy
from bpy_extras import view3d_utils

from .. import live
from .simulate import free_to_simulate, redraw_sidebars

HELP = "drag: push or throw · R: restart · Enter: bake what was shown · Esc: cancel"


class NEUROK_OT_live(bpy.types.Operator):
    """Simulate the active mesh live in the viewport: drag it with the mouse, change its stiffness and
    damping in the sidebar while it runs; Enter bakes exactly what was shown, Esc puts it back"""

    bl_idname = "neurok.live"
    bl_label = "Live"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if not free_to_simulate(cls, context):
            return False
        if context.area is None or context.area.type != "VIEW_3D":
            cls.poll_message_set("Live mode runs in a 3D viewport")
            return False
        return True

    def invoke(self, context, event):
        try:
            self._session = live.LiveSession(context.active_object)
            self._worker = live.LiveWorker(self._session)
            live.started(self._session)
        except ImportError as error:
            self.report({"ERROR"}, f"NeuROK needs PyTorch, which could not be loaded: {error}")
            return {"CANCELLED"}
        except (ValueError, RuntimeError) as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        self._area = context.area  # the 3D view it was started in: the mouse is read over its main region
        wm = context.window_manager
        self._timer = wm.event_timer_add(1.0 / self._session.body.conditions.fps, window=context.window)
        wm.modal_handler_add(self)
        self._status(context)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        session = self._session
        if event.type == "ESC" and event.value == "PRESS":
            self._worker.stop()
            session.cancel()
            self._end(context)
            self.report({"INFO"}, "NeuROK: live run cancelled, the mesh is as it was")
            return {"CANCELLED"}
        if event.type in {"RET", "NUMPAD_ENTER"} and event.value == "PRESS":
            self._worker.stop()
            self._end(context)
            try:
                self.report({"INFO"}, session.bake())
            except (ValueError, RuntimeError) as error:
                self.report({"ERROR"}, str(error))
                return {"CANCELLED"}
            return {"FINISHED"}
        if event.type == "R" and event.value == "PRESS":
            self._worker.settle()
            session.restart()
            return {"RUNNING_MODAL"}
        if event.type == "LEFTMOUSE" and event.value == "PRESS":
            ray = self._ray(event)
            if ray is not None and session.grab_at(*ray):
                return {"RUNNING_MODAL"}
        elif event.type == "LEFTMOUSE" and event.value == "RELEASE" and session.grab is not None:
            session.release()
            return {"RUNNING_MODAL"}
        elif event.type == "MOUSEMOVE" and session.grab is not None:
            ray = self._ray(event)
            if ray is not None:
                session.drag_to(*ray)
            return {"RUNNING_MODAL"}
        elif event.type == "TIMER":  # show the frame made on the worker, and ask for the next one
            try:
                positions = self._worker.take()
                if positions is not None:
                    session.show(positions)
                self._worker.request(session.settings())
            except ReferenceError:  # the object was deleted (or undone away) while it ran
                self._worker.stop()
                self._end(context)
                self.report({"WARNING"}, "NeuROK: the live object went away; live run ended")
                return {"CANCELLED"}
            except (ValueError, RuntimeError) as error:  # a rollout that went non-finite: put the mesh back
                self._worker.stop()
                session.cancel()
                self._end(context)
                self.report({"ERROR"}, str(error))
                return {"CANCELLED"}
            self._status(context)
        return {"PASS_THROUGH"}

    def cancel(self, context):
        """Blender ends the modal operator itself (a file load, the window closing): put the mesh back
        if it is still there."""
        self._worker.stop()
        try:
            self._session.cancel()
        except ReferenceError:
            pass
        self._end(context)

    def _ray(self, event):
        """The mouse's ray in world space (scene units), origin and direction, through the 3D view's
        main region; None where the mouse is over anything else (the sidebar's sliders stay usable)."""
        regions = self._area.regions
        main = next(r for r in regions if r.type == "WINDOW")

        def over(region):
            return region.x <= event.mouse_x < region.x + region.width and \
                region.y <= event.mouse_y < region.y + region.height

        if not over(main) or any(r.type in {"UI", "HEADER", "TOOLS"} and over(r) for r in regions):
            return None
        coord = (event.mouse_x - main.x, event.mouse_y - main.y)
        view = self._area.spaces.active.region_3d
        return (view3d_utils.region_2d_to_origin_3d(main, view, coord),
                view3d_utils.region_2d_to_vector_3d(main, view, coord))

    def _status(self, context):
        session = self._session
        context.workspace.status_text_set(f"NeuROK live: '{session.obj.name}', frame {session.frames - 1}, "
                                          f"{session.frame_rate:.1f} frames/s · {HELP}")
        redraw_sidebars(context)

    def _end(self, context):
        live.started(None)
        context.window_manager.event_timer_remove(self._timer)
        context.workspace.status_text_set(None)
        redraw_sidebars(context)
