"""NumPy's .npy format (1.0, 2.0) for 2-D little-endian float32 arrays in plain Python, and the
cosine of two rows, for the scripts that run where NumPy may be missing (the GPU machines have a
bare PyTorch): the benchmark peers and tools/gpu_check/gpu_check.py. Format: numpy.lib.format
(NumPy's "NEP 1")."""
import ast
import math
import struct


def write_npy(path, rows):
    """Writes rows (a list of equal-length lists of floats) as a C-ordered [len(rows), cols]
    float32 array, format 1.0 (header padded to a multiple of 64 bytes)."""
    cols = len(rows[0]) if rows else 0
    if any(len(r) != cols for r in rows):
        raise ValueError(f"{path}: rows of different lengths")
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': ({len(rows)}, {cols}), }}"
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        for row in rows:
            f.write(struct.pack(f"<{cols}f", *row))


def read_npy(path):
    """The rows of a C-ordered 2-D little-endian float32 .npy file, as lists of floats. Raises
    ValueError naming the file for anything else."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY" or data[6] not in (1, 2):
        raise ValueError(f"{path}: not a .npy file of format 1.0 or 2.0")
    size_bytes = 2 if data[6] == 1 else 4
    header_len = int.from_bytes(data[8:8 + size_bytes], "little")
    start = 8 + size_bytes
    header = ast.literal_eval(data[start:start + header_len].decode("latin1"))
    if header.get("descr") != "<f4" or header.get("fortran_order") or len(header.get("shape", ())) != 2:
        raise ValueError(f"{path}: {header}, expected a C-ordered 2-D float32 array")
    rows, cols = header["shape"]
    values = struct.unpack_from(f"<{rows * cols}f", data, start + header_len)
    return [list(values[i * cols:(i + 1) * cols]) for i in range(rows)]


def norm(a):
    """The Euclidean norm of a list of floats, in double precision."""
    return math.sqrt(sum(x * x for x in a))


def cosine(a, b):
    """The cosine of two equal-length lists of floats, in double precision."""
    return sum(x * y for x, y in zip(a, b)) / (norm(a) * norm(b))
