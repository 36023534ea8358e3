"""Benchmark: reading a large Inspect log into the frame (``bayeseval.io.read_inspect``).

Builds an ``.eval`` log of 10,000 samples x 5 epochs (50,000 answers) in Inspect's format from
the small real log that Inspect wrote for the tests (``tests/io/data/inspect_model-a.eval``):
its header, and its first summary and sample member as templates, each answer with its own id,
epoch, scores and category, every member compressed with Zstandard as Inspect compresses them.
Item 0 carries a metadata field longer than Inspect keeps in a summary: Inspect cuts it there
("...") and the reader restores it from that item's own sample members (opening those only).
Then prints the median wall and CPU time (of 3) of

- ``read_inspect``: the whole frame (ids, epochs, outcome, four scorer columns, flattened
  metadata);
- ``inspect summaries`` (when ``inspect_ai`` is installed): Inspect's own
  ``read_eval_log_sample_summaries`` on the same file, which reads the same member into
  Python objects (no frame), as the anchor.

Target: ``read_inspect`` under 2 s for 10,000 samples x 5 epochs (judged on CPU time, which
is the wall time of this one-thread read on an idle machine).

Usage::

    .venv/bin/python benchmarks/speed/bench_io.py [--samples 10000] [--epochs 5]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import struct
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

import zstandard

from bayeseval.io import read_inspect

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "tests" / "io" / "data" / "inspect_model-a.eval"
GRADES = ("C", "P", "I", "N")
LONG_NOTE = "a long note " * 100


def _members(path: Path) -> dict[str, object]:
    from bayeseval.io.inspect_logs import _Archive  # the reader's own member access

    archive = _Archive(path)
    try:
        return {n: archive.json(n) for n in ("header.json", "summaries.json", "samples/1_epoch_1.json")}
    finally:
        archive.close()


def _answer(template: dict, i: int, epoch: int, summary: bool = False) -> dict:
    out = copy.deepcopy(template)
    out["id"], out["epoch"] = i, epoch
    out["metadata"] = {"category": f"cat{i % 6}", "difficulty": i % 3, "source": {"name": "bench", "year": 2024}}
    if i == 0:  # a long field: cut in the summary as Inspect cuts it, whole in the sample member
        out["metadata"]["note"] = LONG_NOTE[:1000] + "..." if summary else LONG_NOTE
    out["scores"] = {
        "match": {"value": "CI"[(i + epoch) % 2], "answer": "1", "explanation": "1"},
        "grade": {"value": GRADES[(i + epoch) % 4]},
        "quality_scorer": {"value": ((i * 7 + epoch) % 11) / 10},
        "parts": {"value": {"style": GRADES[i % 4], "length": 0.25}},
    }
    return out


def write_log(path: Path, samples: int, epochs: int) -> None:
    members = _members(TEMPLATE)
    header = members["header.json"]
    header["eval"]["dataset"]["samples"] = samples
    header["eval"]["dataset"]["sample_ids"] = list(range(samples))
    header["eval"]["config"]["epochs"] = epochs
    summary, sample = members["summaries.json"][0], members["samples/1_epoch_1.json"]
    compressor = zstandard.ZstdCompressor()
    summaries = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for epoch in range(1, epochs + 1):
            for i in range(samples):
                full = _answer(sample, i, epoch)
                _write(z, f"samples/{i}_epoch_{epoch}.json", full, compressor)
                summaries.append(_answer(summary, i, epoch, summary=True))
        _write(z, "summaries.json", summaries, compressor)
        _write(z, "header.json", header, compressor)


def _write(z: zipfile.ZipFile, name: str, obj: object, compressor: zstandard.ZstdCompressor) -> None:
    """A member compressed with Zstandard, declared as zip method 93 as Inspect writes it.

    ``zipfile`` cannot write method 93: the compressed bytes are stored, then the member's local
    header and central-directory entry are given the method, the CRC-32 and the size of the
    uncompressed data.
    """
    data = json.dumps(obj).encode()
    z.writestr(zipfile.ZipInfo(name), compressor.compress(data), compress_type=zipfile.ZIP_STORED)
    entry = z.infolist()[-1]
    entry.compress_type, entry.file_size, entry.CRC = 93, len(data), zlib.crc32(data)
    end = z.fp.tell()
    z.fp.seek(entry.header_offset + 8)
    z.fp.write(struct.pack("<H", 93))
    z.fp.seek(entry.header_offset + 14)
    z.fp.write(struct.pack("<I", entry.CRC))
    z.fp.seek(entry.header_offset + 22)
    z.fp.write(struct.pack("<I", len(data)))
    z.fp.seek(end)


def timed(fn, repeats: int = 3) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=10_000)
    ap.add_argument("--epochs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.eval"
        t0 = time.perf_counter()
        write_log(path, args.samples, args.epochs)
        print(
            f"log: {args.samples:,} samples x {args.epochs} epochs, {path.stat().st_size / 1e6:.1f} MB "
            f"(written in {time.perf_counter() - t0:.1f} s)"
        )
        frame = read_inspect(path).frame
        assert len(frame) == args.samples * args.epochs, len(frame)
        assert (frame.loc[frame["item"] == 0, "metadata.note"] == LONG_NOTE).all()  # restored
        print(f"{'what':<20}{'wall s':>10}{'cpu s':>10}")
        wall, cpu = timed(lambda: read_inspect(path))
        print(f"{'read_inspect':<20}{wall:>10.2f}{cpu:>10.2f}")
        try:
            from inspect_ai.log import read_eval_log_sample_summaries
        except ImportError:
            print("inspect summaries: inspect_ai not installed")
        else:
            read_eval_log_sample_summaries(str(path))  # first call imports Inspect's modules
            aw, ac = timed(lambda: read_eval_log_sample_summaries(str(path)))
            print(f"{'inspect summaries':<20}{aw:>10.2f}{ac:>10.2f}")
            print(f"ratio read_inspect / Inspect's summaries (cpu): {cpu / ac:.2f}")
        # one thread: on an idle machine wall time is CPU time; on a shared one, judge by CPU time
        print(
            f"target: read_inspect under 2 s of CPU time -> {'met' if cpu < 2 else 'MISSED'} "
            f"(wall {wall:.2f} s{', machine busy' if wall > 1.5 * cpu else ''})"
        )


if __name__ == "__main__":
    main()
