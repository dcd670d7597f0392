"""python -m tools gpu-record [--out DIR] [--suite gpu|all] [--n N]
python -m tools check-loop [LAB ...] [--repeat K] [--out DIR]
python -m tools grade-timing [--workspaces N] [--lab LAB] [--keep DIR]
python -m tools distributed-loop [--out DIR]"""

from __future__ import annotations

import argparse
import sys

from tools import check_loop, distributed_loop, gpu_record, grade_timing


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m tools", description=__doc__)
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
    loop = sub.add_parser(
        "check-loop",
        help="time `check LAB EXERCISE` for each exercise, beside the learner's-loop targets (issue 27)",
    )
    loop.add_argument("labs", nargs="*", metavar="LAB", help="default: every lab with a target")
    loop.add_argument("--repeat", type=int, default=3, help="checks per exercise (default 3)")
    loop.add_argument(
        "--out", help="the record's folder (default: benchmarks/check-loop/<UTC time>)"
    )
    loop.set_defaults(fn=check_loop.main)
    timing = sub.add_parser(
        "grade-timing",
        help="time `grade` of a class of honest workspaces in containers and natively, side by side",
    )
    timing.add_argument(
        "--workspaces", type=int, default=10, help="learners in the class (default 10)"
    )
    timing.add_argument("--lab", default="autograd", help="the lab graded (default autograd)")
    timing.add_argument(
        "--keep",
        help="a new folder for the class, its results and tables (default: a temporary one)",
    )
    timing.set_defaults(fn=grade_timing.main)
    distributed = sub.add_parser(
        "distributed-loop",
        help="time a learner's `check distributed`: the predictions fresh, re-graded, then the whole lab",
    )
    distributed.add_argument(
        "--out", default="benchmarks", help="the record's folder is OUT/distributed-check-loop"
    )
    distributed.set_defaults(fn=distributed_loop.main)
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    args.command_line = " ".join(["python -m tools", *argv])
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
