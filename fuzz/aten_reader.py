"""Mutation fuzzing of graft.aten's file-form readers (`from_aten_text`,
`from_aten_bytes`: the protobuf text and binary parsers, then the
GraphModule builder), seeded from tests/data/aten. Each input is a seed
with a few lines (text) or bytes (binary) deleted, cut, repeated or
replaced; whatever the reader makes of it must be a GraphModule or a
ValueError (nothing else escapes: no KeyError, no struct.error, no
MemoryError), in bounded memory.

  .venv/bin/python fuzz/aten_reader.py [RUNS [SEED]]   (default 2000, 0)

Prints per form the runs, how many read, how many were refused and the
seconds; exits 1 (with the input's traceback) on anything else. Needs
torch and the staged package (scripts/build_wheel.sh).
"""
import glob
import os
import random
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "build", "python"))
from graft import aten  # noqa: E402

TOKENS = ['"x"', "1", "-1", "true", "99999999999", "{", "}", ":", '"', '"aten.add.Tensor"',
          '"_sym.mul"', '"Const"', '"_absent"', "DT_FLOAT", "\\", "#"]


def mutate_text(text, rng):
    lines = text.split("\n")
    for _ in range(rng.randint(1, 3)):
        j = rng.randrange(len(lines))
        action = rng.random()
        if action < 0.3:
            del lines[j]
        elif action < 0.55:
            lines[j] = lines[j][:rng.randrange(len(lines[j]) + 1)]
        elif action < 0.75:
            lines.insert(j, rng.choice(lines))
        else:
            words = lines[j].split(" ")
            words[rng.randrange(len(words))] = rng.choice(TOKENS)
            lines[j] = " ".join(words)
    return "\n".join(lines)


def mutate_bytes(data, rng):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not data:
            break
        j = rng.randrange(len(data))
        action = rng.random()
        if action < 0.4:
            data[j] = rng.randrange(256)
        elif action < 0.7:
            del data[j:j + rng.randint(1, 8)]
        elif action < 0.85:
            data[j:j] = data[j:j + rng.randint(1, 16)]
        else:
            del data[j:]
    return bytes(data)


def run(runs, seed):
    """Fuzzes both forms; returns {form: (runs, read, refused, seconds)},
    raising AssertionError with the input on anything but a ValueError."""
    rng = random.Random(seed)
    texts = [open(f).read() for f in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "aten",
                                                                   "*.aten.pbtxt")))]
    binaries = [aten._encode(aten.parse_text_proto(t), "GraphDef") for t in texts]
    forms = {"text": (texts, mutate_text, aten.from_aten_text),
             "binary": (binaries, mutate_bytes, aten.from_aten_bytes)}
    results = {}
    for form, (seeds, mutate, read) in forms.items():
        start, counts = time.time(), {"read": 0, "refused": 0}
        for _ in range(runs):
            data = mutate(rng.choice(seeds), rng)
            try:
                read(data)
                counts["read"] += 1
            except ValueError:
                counts["refused"] += 1
            except Exception:  # noqa: BLE001 - anything else is the finding
                raise AssertionError("%s input escaped as other than a ValueError:\n%s\n%r"
                                     % (form, traceback.format_exc(), data[:2000]))
        results[form] = (runs, counts["read"], counts["refused"], time.time() - start)
    return results


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    try:
        results = run(runs, seed)
    except AssertionError as e:
        print(e)
        return 1
    print("form    runs   read  refused  seconds")
    for form, (n, read, refused, seconds) in results.items():
        print("%-6s %5d  %5d  %7d  %7.1f" % (form, n, read, refused, seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
