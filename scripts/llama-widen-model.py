#!/usr/bin/env python3
"""Writes a wider, deeper random-weight llama GGUF for benchmarks.

llama.cpp's own tooling (test-llama-archs) writes only tiny models (256
wide, 2 layers: 1.2 M parameters), on which both of llama.cpp's backends
spend a token on launches and bookkeeping, not on arithmetic. This takes
such a model's metadata (architecture, tokenizer) and writes one of the
given width, feed-forward width, layer count and head count, its weight
matrices f16 and its other tensors f32, the values drawn from a fixed
seed (repeated: the values do not change the work). Plain Python, no
numpy (GGUF version 3: header, key-value pairs, tensor descriptions,
32-byte aligned data).

Usage: llama-widen-model.py TINY.gguf OUT.gguf WIDTH FF_WIDTH LAYERS HEADS
"""
import random
import struct
import sys

SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
STRING, ARRAY, U32 = 8, 9, 4
F32, F16 = 0, 1
ALIGN = 32


def read(f, fmt):
    return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))


def skip_value(f, kind):
    if kind == STRING:
        (n,) = read(f, "Q")
        f.seek(n, 1)
    elif kind == ARRAY:
        item, n = read(f, "IQ")
        for _ in range(n):
            skip_value(f, item)
    else:
        read(f, SCALARS[kind])


def main():
    if len(sys.argv) != 7:
        sys.exit(__doc__)
    src, dst = sys.argv[1], sys.argv[2]
    width, ff, layers, heads = (int(a) for a in sys.argv[3:7])
    if width % heads or (width // heads) % 2:
        sys.exit("the width must be an even multiple of the head count")
    head = width // heads
    f = open(src, "rb")
    magic, version, n_tensors, n_kv = read(f, "4sIQQ")
    if magic != b"GGUF" or version != 3:
        sys.exit(f"{src}: not a GGUF version 3 file")
    kv = []
    for _ in range(n_kv):
        (n,) = read(f, "Q")
        key = f.read(n)
        (kind,) = read(f, "I")
        start = f.tell()
        skip_value(f, kind)
        end = f.tell()
        f.seek(start)
        kv.append((key, kind, f.read(end - start)))
    tensors = []
    for _ in range(n_tensors):
        (n,) = read(f, "Q")
        name = f.read(n).decode()
        (dims,) = read(f, "I")
        shape = read(f, "Q" * dims)
        kind, offset = read(f, "IQ")
        tensors.append((name, shape, kind, offset))
    data = (f.tell() + ALIGN - 1) // ALIGN * ALIGN
    arch = next(v[8:].decode() for k, t, v in kv if k == b"general.architecture")
    old = {k: struct.unpack("<I", v)[0] for k, t, v in kv if t == U32}
    old_width = old[f"{arch}.embedding_length".encode()]
    old_ff = old[f"{arch}.feed_forward_length".encode()]
    set_u32 = {
        "embedding_length": width,
        "feed_forward_length": ff,
        "block_count": layers,
        "attention.head_count": heads,
        "attention.head_count_kv": heads,
        "attention.key_length": head,
        "attention.value_length": head,
        "attention.key_length_swa": head,
        "attention.value_length_swa": head,
        "rope.dimension_count": head,
        "rope.dimension_count_swa": head,
    }
    set_u32 = {f"{arch}.{k}".encode(): v for k, v in set_u32.items()}
    kv = [(k, t, struct.pack("<I", set_u32[k]) if k in set_u32 and t == U32 else v) for k, t, v in kv]

    def reshape(name, shape):
        if name == "rope_freqs.weight":
            return (head // 2,)
        return tuple({old_width: width, old_ff: ff}.get(d, d) for d in shape)

    first = [t for t in tensors if t[0].startswith("blk.0.")]
    plan = [(n, reshape(n, s), k, o, s) for n, s, k, o in tensors if not n.startswith("blk.")]
    for layer in range(layers):
        plan += [(f"blk.{layer}." + n[len("blk.0."):], reshape(n, s), k, o, s) for n, s, k, o in first]

    rng = random.Random(1)
    weights = struct.pack(f"<{1 << 16}e", *(rng.gauss(0, width ** -0.5) for _ in range(1 << 16)))
    embeddings = struct.pack(f"<{1 << 16}f", *(rng.gauss(0, 0.5) for _ in range(1 << 16)))

    def repeat(pool, size):
        return (pool * (size // len(pool) + 1))[:size]

    blobs = []
    for name, shape, kind, offset, old_shape in plan:
        count = 1
        for d in shape:
            count *= d
        old_count = 1
        for d in old_shape:
            old_count *= d
        if len(shape) == 2 and not name.startswith(("token_embd.", "output.")):
            blobs.append((name, shape, F16, repeat(weights, 2 * count)))
        elif len(shape) == 2:
            blobs.append((name, shape, F32, repeat(embeddings, 4 * count)))
        elif "norm" in name:
            blobs.append((name, shape, F32, struct.pack(f"<{count}f", *([1.0] * count))))
        elif name.endswith(".bias"):
            blobs.append((name, shape, F32, bytes(4 * count)))
        elif kind == F32 and count <= old_count:
            # Scales and rope frequencies: the tiny model's own values.
            f.seek(data + offset)
            blobs.append((name, shape, F32, f.read(4 * count)))
        else:
            sys.exit(f"{name}: no rule to widen a tensor of type {kind} and shape {old_shape}")
    with open(dst, "wb") as o:
        o.write(struct.pack("<4sIQQ", b"GGUF", 3, len(blobs), len(kv)))
        for key, kind, raw in kv:
            o.write(struct.pack("<Q", len(key)) + key + struct.pack("<I", kind) + raw)
        at = 0
        for name, shape, kind, blob in blobs:
            n = name.encode()
            o.write(struct.pack("<Q", len(n)) + n + struct.pack(f"<I{len(shape)}Q", len(shape), *shape) + struct.pack("<IQ", kind, at))
            at += (len(blob) + ALIGN - 1) // ALIGN * ALIGN
        o.write(bytes(-o.tell() % ALIGN))
        for name, shape, kind, blob in blobs:
            o.write(blob + bytes(-len(blob) % ALIGN))


main()
