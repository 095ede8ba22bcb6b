#!/usr/bin/env python3
"""Checks a .vti file written by `stencil35d run <scenario>` with VTK's own XML reader.

Usage: tools/check_vti.py OUT.vti STATE.lbm   (run the scenario with --checkpoint STATE.lbm)

Reads the image with vtk.vtkXMLImageDataReader and compares its density, velocity and kind
arrays with values computed independently (numpy) from the checkpoint of the same state, whose
format is documented in src/lbm/checkpoint.rs. Needs `python3 -m pip install --user vtk`.
Not part of CI (no VTK there).
"""
import json, sys
import numpy as np
import vtk
from vtk.util.numpy_support import vtk_to_numpy

vti, ckpt = sys.argv[1], sys.argv[2]
r = vtk.vtkXMLImageDataReader()
r.SetFileName(vti)
r.Update()
img = r.GetOutput()
print("VTK", vtk.vtkVersion.GetVTKVersion(), "dims", img.GetDimensions(), "points", img.GetNumberOfPoints())
pd = img.GetPointData()
print("arrays:", [(pd.GetArrayName(i), pd.GetArray(i).GetNumberOfComponents(), pd.GetArray(i).GetDataTypeAsString()) for i in range(pd.GetNumberOfArrays())])
print("active scalars:", pd.GetScalars().GetName(), "active vectors:", pd.GetVectors().GetName())
rho_vtk = vtk_to_numpy(pd.GetArray("density"))
u_vtk = vtk_to_numpy(pd.GetArray("velocity"))
kind_vtk = vtk_to_numpy(pd.GetArray("kind"))

with open(ckpt, "rb") as f:
    assert f.readline().strip() == b"STENCIL35D-LBM"
    h = json.loads(f.readline())
    hash_line = f.readline()
    payload = f.read()
# Format version 2: the magic, header and hash lines, then the payload.
assert h["version"] == 2, f"checkpoint format version {h['version']}; this script reads 2"
assert hash_line.startswith(b"fnv1a64 "), hash_line
assert h.get("storage", "native") == "native", "16-bit storage: restart in native storage first"
assert len(payload) == h["payload_bytes"], (len(payload), h["payload_bytes"])
nx, ny, nz = h["dims"]
n = nx * ny * nz
dt = np.float32 if h["dtype"] == "f32" else np.float64
flags = np.frombuffer(payload[:n], dtype=np.uint8)
pops = np.frombuffer(payload[n:], dtype=np.dtype(dt).newbyteorder("<")).reshape(19, n).astype(np.float64)
c = np.array(h["velocities"], dtype=np.float64)            # 19 x 3
rho = pops.sum(axis=0)
j = c.T @ pops                                              # 3 x n
table = h["boundaries"]
kind = np.zeros(n, dtype=np.uint8)
F = np.array(h["physics"]["force"]); u = ((j - (flags == 0) * F[:, None] / 2) / rho).T.copy()
names = {"moving-wall": 2, "inlet": 3, "outlet": 4}
for k, e in enumerate(table):
    sel = flags == 2 + k
    kind[sel] = names[e["kind"]]
    if e["kind"] == "moving-wall":
        u[sel] = e["velocity"]
kind[flags == 1] = 1
u[flags == 1] = 0.0
print("dims match:", img.GetDimensions() == (nx, ny, nz), "| steps in checkpoint:", h["steps"], "| physics:", h["physics"])
print("max |density diff|  =", np.abs(rho_vtk - rho).max(), "(values", rho.min(), "..", rho.max(), ")")
print("max |velocity diff| =", np.abs(u_vtk - u).max(), "(max speed", np.linalg.norm(u, axis=1).max(), ")")
print("kind codes equal:", bool((kind_vtk == kind).all()), "| counts", np.bincount(kind_vtk))
i = 5 + nx * (ny - 2 + ny * (nz // 2))   # a node just below the lid
print("sample node (5, ny-2, nz/2): vtk u =", u_vtk[i], "numpy u =", u[i])
