"""python -m workshop.devtools gpu-record [--out DIR] [--suite gpu|all] [--n N]"""

from __future__ import annotations

import argparse
import sys

from workshop.devtools import gpu_record


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m workshop.devtools", description=__doc__)
    sub = top.add_subparsers(dest="command", required=True)
    record = sub.add_parser(
        "gpu-record",
        help="run the whole workshop and the GPU tests on this machine's GPU, and record what happened",
    )
    record.add_argument(
        "--out",
        help="the record's folder, new or empty (default: benchmarks/gpu-records/<UTC time>)",
    )
    record.add_argument(
        "--suite",
        choices=("gpu", "all"),
        default="gpu",
        help="the tests to run on that run: the `gpu` tests (default) or the whole suite",
    )
    record.add_argument(
        "--n",
        type=int,
        help="processes for the distributed demos (default: the GPUs here, at most 2)",
    )
    record.set_defaults(fn=gpu_record.main)
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    args.command_line = " ".join(["python -m workshop.devtools", *argv])
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
