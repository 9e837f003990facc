"""Wireshark Lua dissector for the MRC headers (`mrc.lua`, shipped as package data).

Path for `tshark -X lua_script:PATH`: ``importlib.resources.files("mrc.wire.dissector") / "mrc.lua"``.
"""
