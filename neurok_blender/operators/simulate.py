import bpy

from .. import api, job, live


class NEUROK_OT_simulate(bpy.types.Operator):
    """Simulate the active mesh with its NeuROK settings, together with the other selected meshes that are no
    colliders, and bake the motion (Esc cancels)"""

    bl_idname = "neurok.simulate"
    bl_label = "Simulate"
    bl_options = {"REGISTER", "UNDO"}

    confirmed: bpy.props.BoolProperty(options={"HIDDEN", "SKIP_SAVE"},
                                      description="The artist agreed to a large bake in the dialog")

    @classmethod
    def poll(cls, context):
        return free_to_simulate(cls, context)

    def execute(self, context):
        """Inline: scripts, batch mode and ``bpy.ops.neurok.simulate()`` get the bake when the call returns.
        After the large-bake dialog (``invoke``) the solve goes to the background as from the button."""
        if self.confirmed and not bpy.app.background:
            return self._start(context, self._checked(lambda: job.read_selection(context)))
        background = bpy.app.background

        def progress(done, total):
            if background and (done == total or done % max(1, total // 10) == 0):
                print(f"NeuROK: frame {done}/{total}", flush=True)

        bodies = job.simulation_bodies(context)
        announce = lambda text: print(text, flush=True)  # noqa: E731
        if len(bodies) > 1:
            return self._report(lambda: api.simulate_together(bodies, progress=progress, announce=announce))
        return self._report(lambda: api.simulate_object(context.active_object, progress=progress, announce=announce))

    def invoke(self, context, event):
        """From the button: the solve runs on a worker thread, the interface stays live, Esc cancels.
        A bake estimated to take long or much memory asks first, with the estimate."""
        if bpy.app.background:
            return self.execute(context)
        simulation = self._checked(lambda: job.read_selection(context))
        estimate = simulation.estimate() if simulation is not None else None
        if estimate is not None and estimate.large:
            self.confirmed = True  # execute() starts it when the artist agrees
            return context.window_manager.invoke_confirm(
                self, event, title="Large bake", confirm_text="Simulate", icon="WARNING",
                message=f"Simulating '{simulation.name}' will take {estimate}.")
        return self._start(context, simulation)

    def _start(self, context, simulation):
        """Solve ``simulation`` on a worker thread with a progress bar (nothing to start: cancelled)."""
        self._solve = None if simulation is None else self._checked(lambda: job.start(simulation))
        if self._solve is None:
            return {"CANCELLED"}
        wm = context.window_manager
        self._timer = wm.event_timer_add(0.1, window=context.window)
        wm.modal_handler_add(self)
        wm.progress_begin(0, 100)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        solve = self._solve
        if event.type == "ESC" and event.value == "PRESS":
            solve.cancel()  # the worker stops at its next frame; the scene was never touched
            self._end(context)
            self.report({"WARNING"}, "NeuROK: simulation cancelled, nothing was baked")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        fraction = solve.done / max(solve.total, 1)
        context.window_manager.progress_update(int(100 * fraction))
        context.workspace.status_text_set(f"NeuROK: simulating '{solve.job.name}', frame {solve.done}/{solve.total} "
                                          "(Esc cancels)")
        redraw_sidebars(context)
        if not solve.finished:
            return {"PASS_THROUGH"}
        self._end(context)
        return self._report(lambda: solve.job.bake(solve.outcome()))

    def cancel(self, context):
        """Blender ends the modal operator itself (a file load, the window closing): stop the solve."""
        self._solve.cancel()
        self._end(context)

    def _end(self, context):
        wm = context.window_manager
        wm.event_timer_remove(self._timer)
        wm.progress_end()
        context.workspace.status_text_set(None)
        redraw_sidebars(context)

    def _checked(self, work):
        """``work()``, or None with the reason reported."""
        try:
            return work()
        except ImportError as error:
            self.report({"ERROR"}, f"NeuROK needs PyTorch, which could not be loaded: {error}")
        except (ValueError, RuntimeError) as error:
            self.report({"ERROR"}, str(error))
        return None

    def _report(self, work):
        summary = self._checked(work)
        if summary is None:
            return {"CANCELLED"}
        self.report({"INFO"}, summary)
        return {"FINISHED"}

def free_to_simulate(operator, context) -> bool:
    """Whether a body can be simulated now (an active object, no solve or live run going); the reason
    why not goes to ``operator``'s poll message."""
    if context.active_object is None:
        operator.poll_message_set("No active object: select a mesh to simulate")
        return False
    if job.running() is not None:
        operator.poll_message_set(f"Simulating '{job.running().job.name}': wait for it or press Esc")
        return False
    if live.running() is not None:
        operator.poll_message_set(f"'{live.running().obj.name}' runs live: Enter bakes it, Esc ends it")
        return False
    return True


def redraw_sidebars(context):
    for area in context.screen.areas if context.screen else ():
        if area.type == "VIEW_3D":
            area.tag_redraw()
