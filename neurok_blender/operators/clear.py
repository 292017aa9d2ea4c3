import bpy

from .. import api


class NEUROK_OT_clear(bpy.types.Operator):
    """Remove the shape keys and animation that the last Simulate baked (other shape keys stay)"""

    bl_idname = "neurok.clear"
    bl_label = "Clear Bake"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        if obj is None or obj.type != "MESH":
            cls.poll_message_set("Select the baked mesh object")
            return False
        return True

    def execute(self, context):
        self.report({"INFO"}, f"NeuROK: {api.clear_object(context.active_object)}")
        return {"FINISHED"}
