import bpy

from .. import api


class NEUROK_OT_simulate(bpy.types.Operator):
    """Simulate the active mesh with its NeuROK settings and bake the motion as shape keys"""

    bl_idname = "neurok.simulate"
    bl_label = "Simulate"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        if context.active_object is None:
            cls.poll_message_set("No active object: select a mesh to simulate")
            return False
        return True

    def execute(self, context):
        wm = context.window_manager
        background = bpy.app.background

        def progress(done, total):
            if not background:
                wm.progress_update(100 * done // total)
            elif done == total or done % max(1, total // 10) == 0:
                print(f"NeuROK: frame {done}/{total}", flush=True)

        if not background:
            wm.progress_begin(0, 100)
        try:
            summary = api.simulate_object(context.active_object, progress=progress)
        except ImportError as error:
            self.report({"ERROR"}, f"NeuROK needs PyTorch, which could not be loaded: {error}")
            return {"CANCELLED"}
        except (ValueError, RuntimeError) as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        finally:
            if not background:
                wm.progress_end()
        self.report({"INFO"}, summary)
        return {"FINISHED"}
