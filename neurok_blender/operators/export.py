import bpy
from bpy_extras.io_utils import ExportHelper

from .. import api


class NEUROK_OT_export(bpy.types.Operator, ExportHelper):
    """Export the baked motion of the active object; the extension picks the format: .glb or .gltf
    (glTF morph targets) or .abc (Alembic)"""

    bl_idname = "neurok.export"
    bl_label = "Export Bake"
    bl_options = {"REGISTER"}

    filename_ext = ".glb"
    check_extension = None  # keep what the user typed: the extension chooses the format
    filter_glob: bpy.props.StringProperty(default="*.glb;*.gltf;*.abc", options={"HIDDEN"})

    @classmethod
    def poll(cls, context):
        obj = context.active_object
        if obj is None or obj.type != "MESH" or not obj.neurok.is_baked:
            cls.poll_message_set("Select a baked mesh object (click Simulate first)")
            return False
        return True

    def execute(self, context):
        try:
            path = api.export_object(context.active_object, self.filepath)
        except (ValueError, RuntimeError) as error:
            self.report({"ERROR"}, str(error))
            return {"CANCELLED"}
        self.report({"INFO"}, f"NeuROK: exported to {path}")
        return {"FINISHED"}
