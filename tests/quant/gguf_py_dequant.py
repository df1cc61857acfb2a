#!/usr/bin/env python3
"""Independent decoder for tests/quant/reference_gguf_test.cpp: dequantizes with the `gguf` PyPI
package (gguf.quants.dequantize, numpy), which is not our code.

Usage: gguf_py_dequant.py IN OUT

IN is a sequence of little-endian records:
  kind u32 = 0 (raw blocks): type u32, n_values u64, n_bytes u64, bytes
  kind u32 = 1 (tensor rows read by gguf.GGUFReader): path_len u64, path, name_len u64, name, n_rows u64
OUT gets, per record in order: n_values u64, then n_values f32.

Exit status 3 with one line on stderr when numpy or gguf cannot be imported.
"""
import struct
import sys

try:
    import numpy as np
    import gguf
    from gguf.quants import dequantize
except Exception as e:  # noqa: BLE001 - any import failure means "not installed"
    sys.stderr.write(f"gguf_py_dequant.py: cannot import numpy/gguf ({e}); "
                     "run: pip install -r tests/requirements.txt\n")
    sys.exit(3)


def main() -> None:
    src = open(sys.argv[1], "rb").read()
    pos = 0
    readers = {}
    out = open(sys.argv[2], "wb")

    def take(fmt):
        nonlocal pos
        vals = struct.unpack_from("<" + fmt, src, pos)
        pos += struct.calcsize("<" + fmt)
        return vals

    def take_bytes(n):
        nonlocal pos
        b = src[pos:pos + n]
        pos += n
        return b

    while pos < len(src):
        (kind,) = take("I")
        if kind == 0:
            qtype, n_values, n_bytes = take("IQQ")
            data = np.frombuffer(take_bytes(n_bytes), dtype=np.uint8)
            if qtype in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
                # dequantize() views these with the element dtype, so hand them a flat 1-D array.
                values = dequantize(data, gguf.GGMLQuantizationType(qtype))
            else:
                values = dequantize(data.reshape(1, -1), gguf.GGMLQuantizationType(qtype))
        elif kind == 1:
            (plen,) = take("Q")
            path = take_bytes(plen).decode()
            (nlen,) = take("Q")
            name = take_bytes(nlen).decode()
            (n_rows,) = take("Q")
            if path not in readers:
                readers[path] = gguf.GGUFReader(path)
            tensor = next(t for t in readers[path].tensors if t.name == name)
            rows = tensor.data.reshape(tensor.data.shape[0], -1)[:n_rows] if tensor.data.ndim > 1 else tensor.data
            values = dequantize(np.ascontiguousarray(rows), tensor.tensor_type)
        else:
            raise SystemExit(f"gguf_py_dequant.py: bad record kind {kind} at byte {pos - 4}")
        values = np.ascontiguousarray(values, dtype=np.float32).ravel()
        out.write(struct.pack("<Q", values.size))
        out.write(values.tobytes())
    out.close()


if __name__ == "__main__":
    main()
